"""Malleable jobs in the simulator: they run their tasks on what they are given, exactly once, beside rigid gangs,
and they are what makes GREE and GREE-L plan (and run) differently."""

from __future__ import annotations

import io
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from follower.sim.engine import Simulation
from follower.sim.scenario import Scenario, load_scenario, parse_scenario
from planner.core.check import check_plan
from planner.core.decision import allocation_json
from rdl.tree import Atom

EXAMPLES = Path(__file__).parents[3] / "examples" / "scenarios"
MALLEABLE = EXAMPLES / "synthetic_malleable.yaml"

ONE_JOB = """
name: one
start: 2026-11-23T00:00:00Z
agent: none
policy: fifo
cluster:
  nodes: [{{name: worker, count: 1, memory: 64GiB, vcores: {vcores}}}]
  step: 1s
  horizon: 1h
workload:
  synthetic: {{jobs: 1, production: 0, executors: [8, 8], executor: {{memory: 1GiB, vcores: 1}}, runtime: 2m,
               min_runtime: 2m, runtime_sigma: 0, malleable: 1, task_length: 1m}}
"""

MIX = """
name: mix
seed: 5
start: 2026-11-23T00:00:00Z
duration: 8h
agent: gree-l
policy: fair
cluster:
  nodes: [{name: worker, count: 6, memory: 32GiB, vcores: 8}]
  step: 1m
  horizon: 1d
  failures: {rate: 6, repair: 30m}
workload:
  synthetic: {jobs: 60, rate: 20, production: 0.5, users: 4, executors: [0, 12], executor: {memory: 4GiB, vcores: 2},
              driver: {memory: 2GiB, vcores: 1}, runtime: 10m, runtime_sigma: 0.8, min_runtime: 1m, max_runtime: 1h,
              estimate_sigma: 0.3, slack: {mean: 3, sigma: 0.5}, malleable: 0.6, task_length: 3m}
"""


def events_of(scenario: Scenario) -> list[dict[str, object]]:
    """The run's event log, one dict per event."""
    trace = io.StringIO()
    Simulation(scenario, trace=trace).run()
    return [json.loads(line) for line in trace.getvalue().splitlines()]


def run_time_on(vcores: int) -> float:
    """How long the one job (8 executors × 2 tasks of 1 min) runs on a node of `vcores` one-vcore executors."""
    simulation = Simulation(parse_scenario(ONE_JOB.format(vcores=vcores), "one.yaml"))
    [record] = simulation.run().records
    assert record.finish is not None
    return record.finish - record.submit


def test_a_flat_allocation_finishes_the_same_work_later_than_a_tall_one() -> None:
    assert run_time_on(2) == pytest.approx(8 * 60.0)  # 16 tasks, 2 at a time
    assert run_time_on(8) == pytest.approx(2 * 60.0)  # 8 at a time: its declared two minutes


@pytest.mark.parametrize("agent", ["gree", "gree-l", "none"])
def test_every_task_runs_to_its_end_exactly_once_despite_failures_and_preemption(agent: str) -> None:
    simulation = Simulation(parse_scenario(MIX, "mix.yaml").with_options(agent=agent))
    result = simulation.run()
    assert sum(record.lost for record in result.records) > 0  # tasks were lost and ran again
    malleable = [run for run in simulation.jobs.values() if run.job.malleable]
    assert malleable and all(run.record.finish is not None for run in malleable)
    for job_run in malleable:
        assert sorted(job_run.done) == sorted(job_run.job.tasks), job_run.job.id


def test_a_malleable_job_holds_no_more_than_its_nodes_and_gives_every_container_back() -> None:
    events = events_of(parse_scenario(MIX, "mix.yaml"))
    held: dict[str, tuple[str, str, dict[str, float]]] = {}
    used: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    gone: list[str] = []
    for event in events:
        kind, container = event["event"], event.get("container")
        if kind == "allocate":
            node, resources = str(event["node"]), dict(event["resources"])  # type: ignore[arg-type]
            held[str(container)] = (str(event["application"]), node, resources)
            for name, amount in resources.items():
                used[node][name] += amount
            assert used[node]["vcores"] <= 8 and used[node]["memory"] <= 32 * 1024
        elif kind in ("release", "preempt", "lost") and container in held:
            gone.append(str(container))
        elif kind == "finish":
            gone.extend(c for c, (app, _, _) in held.items() if app == event["application"])
        for container in gone:
            _, node, resources = held.pop(container)
            for name, amount in resources.items():
                used[node][name] -= amount
        gone.clear()
    assert not held
    assert any(event["event"] == "release" for event in events)  # idle executors of malleable jobs went back early


def test_a_gang_job_stays_a_gang_and_keeps_its_containers_to_the_end() -> None:
    scenario = parse_scenario(MIX, "mix.yaml")
    simulation = Simulation(scenario)
    rigid = [job for job in simulation.workload.production if not job.malleable]
    assert rigid
    for job in rigid:
        atom = job.to_reservation(scenario.start, ("memory", "vcores"), 60.0).body
        assert isinstance(atom, Atom)
        assert atom.lease == math.ceil(job.declared) and atom.work == atom.gang * atom.lease  # one lease of it all
    events = events_of(scenario)
    released = {event["application"] for event in events if event["event"] == "release"}
    assert not released & {job.id for job in rigid}


def summaries(scenario: Scenario) -> dict[str, dict[str, object]]:
    figures = {}
    for agent in ("gree", "gree-l"):
        summary = dict(Simulation(scenario.with_options(agent=agent)).run().summary)
        summary.pop("wall_s", None)
        figures[agent] = summary
    return figures


def test_gree_and_gree_l_give_different_runs_on_the_malleable_scenario() -> None:
    # The regression of issue #19: with rigid gangs both agents had nothing to choose and gave identical rows.
    figures = summaries(load_scenario(MALLEABLE))
    assert figures["gree"] != figures["gree-l"]
    assert figures["gree"]["preemptions"] != figures["gree-l"]["preemptions"]


@pytest.mark.parametrize("agent", ["gree", "gree-l"])
def test_every_plan_the_agents_make_for_malleable_jobs_passes_the_plan_checker(agent: str) -> None:
    scenario = load_scenario(MALLEABLE).with_options(agent=agent)
    simulation = Simulation(scenario)
    simulation.run()
    plan = simulation.planner.plan
    assert plan.accepted
    reservations = [accepted.reservation for accepted in plan.accepted.values()]
    records = [{"reservation": name, "accepted": True,
                "allocations": [allocation_json(a, plan.clock) for a in accepted.allocations]}
               for name, accepted in plan.accepted.items()]
    submitted = {name: accepted.submitted for name, accepted in plan.accepted.items()}
    assert check_plan(scenario.plan_cluster(simulation.workload), reservations, records, submitted) == []
