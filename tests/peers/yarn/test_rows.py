"""YARN's own agents as simulator rows (the `peer` tier: needs java and mvn): the simulation replays exactly what
the harness answers for the simulator's stream, and every plan YARN makes passes our checker."""

from __future__ import annotations

from dataclasses import replace

import pytest

from follower.sim.engine import Simulation
from follower.sim.peers import YARN_AGENTS, replay_agent
from follower.sim.planning import production_reservations
from follower.sim.scenario import Scenario, parse_scenario
from planner.agents.replay import Lease
from planner.core.check import check_plan
from planner.core.decision import Decision
from tests.peers.yarn import agent_harness as harness
from tests.peers.yarn.rows import yarn_decisions

pytestmark = pytest.mark.peer

# Small and busy: half the jobs production, on a cluster they oversubscribe, so YARN rejects some.
SCENARIO = """
name: yarn-rows
seed: 4
start: 2026-11-23T00:00:00Z
duration: 4h
policy: fair
cluster:
  nodes: [{name: worker, count: 3, memory: 32GiB, vcores: 8}]
  step: 1m
  horizon: 1d
workload:
  synthetic:
    jobs: 40
    rate: 30
    production: 0.5
    users: 4
    executors: [1, 10]
    executor: {memory: 4GiB, vcores: 2}
    driver: {memory: 2GiB, vcores: 1}
    runtime: 15m
    runtime_sigma: 0.8
    min_runtime: 1m
    max_runtime: 1h
    slack: {mean: 2, sigma: 0.5}
"""


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    """The scenario, once the YARN peer is built (skipped, saying why, where it cannot be)."""
    try:
        harness.build()
    except harness.PeerUnavailable as unavailable:
        pytest.skip(f"the YARN peer cannot run here: {unavailable}")
    return parse_scenario(SCENARIO, "yarn-rows.yaml")


@pytest.mark.parametrize("agent", YARN_AGENTS)
def test_every_yarn_plan_of_the_simulators_stream_passes_the_checker(scenario, agent):
    workload = scenario.load_workload()
    reservations = production_reservations(scenario, workload)
    cluster = scenario.plan_cluster(workload)
    records, notes = yarn_decisions(agent, cluster, reservations)
    assert len(records) == len(reservations) and all(r["agent"] == agent for r in records)
    assert not [n for n in notes if "gangs" in n or "off the plan" in n or "crashed" in n]
    submitted = {r.name: r.arrival_at(cluster.start) for r in reservations}
    assert check_plan(cluster, reservations, records, submitted=submitted) == []


def test_a_simulation_with_yarn_greedy_decides_as_the_harness_does(scenario):
    workload = scenario.load_workload()
    agent = replay_agent(yarn_decisions, "yarn-greedy", scenario, workload)
    harness_accepted = {name for name, answer in agent.answers.items() if answer.accepted}
    assert 0 < len(harness_accepted) < len(agent.answers)  # the stream is busy enough for YARN to reject some
    run = Simulation(replace(scenario, agent=agent.name), workload, agent=agent)  # as simulate() names the run
    result = run.run()
    decided, clock = run.planner.decided, run.planner.first_clock  # as accepted: the plan rolls and expires them
    assert set(decided) == harness_accepted
    for name, accepted in decided.items():
        held = [Lease(a.atom, clock.at(a.start), clock.at(a.end), a.bundles, a.instance) for a in accepted.allocations]
        assert held == list(agent.answers[name].leases)
    reservations = production_reservations(scenario, workload)
    records = [Decision(r.name, r.name in decided,
                        tuple(decided[r.name].allocations) if r.name in decided else ()).to_json(clock)
               for r in reservations]
    cluster = scenario.plan_cluster(workload)
    submitted = {r.name: r.arrival_at(cluster.start) for r in reservations}
    assert check_plan(cluster, reservations, records, submitted=submitted) == []
    summary = result.summary
    assert result.agent == "yarn-greedy" and summary["replayed"]["diverged"] == 0
    assert summary["production"]["accepted"] == len(harness_accepted)
    assert {"production", "best_effort", "utilization", "preemptions", "per_user"} <= set(summary)
    assert {"jobs", "accepted", "met_deadline", "sla_attainment"} <= set(summary["production"])
