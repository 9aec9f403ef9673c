"""Other systems' agents as simulator rows, without the other system: decisions made up front by a stand-in
source (our own planner), replayed when each job arrives; one that no longer fits is a counted rejection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest
from click.testing import CliRunner

from follower.cli import main
from follower.sim.engine import Simulation, simulate
from follower.sim.peers import available_peer_agents, decisions_document, read_decisions, replay_agent, write_decisions
from follower.sim.planning import production_reservations
from follower.sim.scenario import parse_scenario
from planner.admission import Planner
from rdl import parse_cluster
from rdl.cluster import Cluster
from rdl.errors import RayonError
from rdl.tree import Reservation

SCENARIO = """
name: pair
seed: 3
start: 2026-11-23T00:00:00Z
agent: gree-l
policy: fifo
cluster:
  nodes: [{name: worker, count: 1, memory: 6GiB, vcores: 3}]
  step: 1m
  horizon: 1d
workload:
  jobs:
    - {id: a, user: alice, submit: 0s, kind: production, driver: {memory: 2GiB, vcores: 1}, executors: 1,
       executor: {memory: 2GiB, vcores: 1}, runtime: 10m, deadline: 30m}
    - {id: b, user: bob, submit: 1m, kind: production, driver: {memory: 2GiB, vcores: 1}, executors: 1,
       executor: {memory: 2GiB, vcores: 1}, runtime: 10m, deadline: 30m}
"""
BIGGER = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {memory: 8GiB, vcores: 4}\n"


def ours_on(cluster: Cluster | None):
    """A stand-in decision source: gree-l on `cluster` (or on the cluster it is given), deciding up front."""

    def source(agent: str, given: Cluster, reservations: Sequence[Reservation]):
        planner = Planner(cluster or given)
        records = [planner.submit(r, "gree-l", submitted=r.arrival_at(given.start)).to_json(planner.plan.clock)
                   for r in reservations]
        return records, []

    return source


@pytest.fixture
def scenario():
    return parse_scenario(SCENARIO, "pair.yaml")


def test_the_stream_is_what_the_simulator_submits(scenario):
    workload = scenario.load_workload()
    run = Simulation(scenario, workload)
    run.run()
    submitted = [run.planner.plan.accepted[name].reservation for name in run.planner.acceptance]
    assert production_reservations(scenario, workload) == submitted


def test_replayed_decisions_that_fit_are_the_runs_decisions(scenario):
    workload = scenario.load_workload()
    agent = replay_agent(ours_on(None), "stand-in", scenario, workload)
    result = simulate(scenario, workload=workload, planning_agent=agent)
    baseline = simulate(scenario, workload=workload)
    assert result.agent == "stand-in" and result.summary["production"] == baseline.summary["production"]
    assert result.summary["replayed"]["diverged"] == 0 and result.summary["replayed"]["accepted_by_agent"] == 2


def test_a_decision_that_no_longer_fits_is_a_counted_rejection(scenario):
    # Decided on a 4-vcore plan, both gangs of 2 fit side by side; the simulator's node has 3 vcores.
    workload = scenario.load_workload()
    agent = replay_agent(ours_on(parse_cluster(BIGGER, "big.yaml")), "stand-in", scenario, workload)
    result = simulate(scenario, workload=workload, planning_agent=agent)
    replayed = result.summary["replayed"]
    assert (replayed["accepted_by_agent"], replayed["diverged"]) == (2, 1)
    assert replayed["diverged_examples"][0].startswith("b: memory is over capacity")
    assert result.summary["production"]["accepted"] == 1
    assert {r.job_id: r.accepted for r in result.records} == {"a": True, "b": False}


def test_a_decisions_file_for_another_stream_is_refused(scenario, tmp_path):
    workload = scenario.load_workload()
    reservations = production_reservations(scenario, workload)
    records, notes = ours_on(None)("stand-in", scenario.plan_cluster(workload), reservations)
    path = tmp_path / "d.json"
    write_decisions(path, decisions_document("stand-in", scenario, reservations, records, notes))
    assert read_decisions(path, scenario, workload).name == "stand-in"
    later = replace(scenario, start=scenario.start.replace(hour=1))
    with pytest.raises(RayonError, match="another stream") as refused:
        read_decisions(path, later, later.load_workload())
    assert refused.value.code == "peer" and "yarn_rows.py" in (refused.value.hint or "")


def test_simulate_replays_a_decisions_file_and_asks_for_one_for_a_yarn_agent(scenario, tmp_path):
    path = tmp_path / "pair.yaml"
    path.write_text(SCENARIO)
    loaded = parse_scenario(SCENARIO, str(path))
    workload = loaded.load_workload()
    reservations = production_reservations(loaded, workload)
    records, _ = ours_on(None)("yarn-greedy", loaded.plan_cluster(workload), reservations)
    decisions = tmp_path / "d.json"
    write_decisions(decisions, decisions_document("yarn-greedy", loaded, reservations, records, []))
    done = CliRunner().invoke(main, ["simulate", str(path), "--decisions", str(decisions), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["agent"] == "yarn-greedy"
    refused = CliRunner().invoke(main, ["simulate", str(path), "--agent", "yarn-greedy"])
    assert refused.exit_code == 2 and "benchmarks/peers/yarn_rows.py" in refused.output


def test_yarn_rows_are_available_only_with_java_and_maven(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    names, why = available_peer_agents()
    assert names == () and why == "YARN's agents skipped: java and mvn not found on PATH"
