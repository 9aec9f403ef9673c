"""The baselines an operator would run (follower.sim.baselines): which queue production goes to, what each queue
is guaranteed, the capacity baseline sized on another window, and the oracles kept as oracles."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from follower.sim.baselines import (
    BASELINES,
    Split,
    demand_quantile,
    peak_production,
    sizing_params,
    split_for,
)
from follower.sim.engine import Simulation, simulate
from follower.sim.scenario import agent_names
from follower.sim.setup import BEST_EFFORT_QUEUE, STATIC_QUEUE
from follower.sim.workloads.swf import SwfParams
from follower.sim.workloads.tracefile import Slice
from tests.follower.sim.test_engine import mix


def submissions(agent: str) -> tuple[dict[str, str], Simulation]:
    trace = io.StringIO()
    simulation = Simulation(mix().with_options(agent=agent), trace=trace)
    simulation.run()
    events = [json.loads(line) for line in trace.getvalue().splitlines()]
    return {event["application"]: event["queue"] for event in events if event["event"] == "submit"}, simulation


def test_every_baseline_is_an_agent_name_and_plans_nothing() -> None:
    assert agent_names()[:len(BASELINES)] == BASELINES == ("none", "priority", "capacity", "static", "static-half")
    for agent in BASELINES:
        result = simulate(mix(), agent=agent)
        assert result.summary["production"]["accepted"] == 0


@pytest.mark.parametrize("agent", ["priority", "capacity", "static", "static-half"])
def test_production_goes_to_its_own_queue_and_the_guarantees_sum_to_the_cluster(agent: str) -> None:
    queues, simulation = submissions(agent)
    production = {job.id for job in simulation.workload.jobs if job.is_production}
    assert {queues[job] for job in production} == {STATIC_QUEUE}
    assert {q for job, q in queues.items() if job not in production} == {BEST_EFFORT_QUEUE}
    tree = simulation.scheduler.tree
    capacity = simulation.scheduler.capacity()
    for name in ("memory", "vcores"):
        guaranteed = [tree.find(path).settings.guaranteed.get(name) for path in (STATIC_QUEUE, BEST_EFFORT_QUEUE)]
        assert sum(guaranteed) == pytest.approx(capacity.get(name))  # no queue is upside down


def test_priority_ranks_production_earliest_deadline_first() -> None:
    _, simulation = submissions("priority")
    apps = [app for app in simulation.scheduler.apps.values() if app.queue == STATIC_QUEUE]
    deadlines = {job.id: job.deadline for job in simulation.workload.jobs}
    assert apps and all(app.priority == -round(deadlines[app.id]) for app in apps)
    assert simulation.split is not None and simulation.split.earliest_deadline_first
    assert not simulation.split.best_effort  # strict priority: best effort is guaranteed nothing


def test_capacity_is_sized_on_another_window_not_on_the_run_itself() -> None:
    scenario = mix()
    other = scenario.sizing_workload()
    assert [job.id for job in other.jobs] != [job.id for job in scenario.load_workload().jobs] or \
        [job.submit for job in other.jobs] != [job.submit for job in scenario.load_workload().jobs]
    _, simulation = submissions("capacity")
    capacity = dict(simulation.scheduler.capacity().items())
    expected = split_for("capacity", simulation.workload, capacity, other)
    assert simulation.split == expected
    assert expected is not None and expected.production != split_for("capacity", simulation.workload, capacity,
                                                                      None).production  # ... which differ here


def test_a_trace_slice_is_sized_on_the_window_before_it_or_after_the_first() -> None:
    assert sizing_params(object(), 3)[1] == 4  # no slice: another draw of the same stream
    params = SwfParams(file="x.swf", slice=Slice(start=86400.0, length=2 * 86400.0))
    moved, _ = sizing_params(params, 1)
    assert moved.slice == Slice(start=3 * 86400.0, length=2 * 86400.0)  # no room before: the window after
    params = replace(params, slice=Slice(start=7 * 86400.0, length=2 * 86400.0))
    assert sizing_params(params, 1)[0].slice == Slice(start=5 * 86400.0, length=2 * 86400.0)


def test_demand_quantile_is_time_weighted() -> None:
    jobs = [job for job in mix().load_workload().jobs if job.is_production][:2]
    one, two = (replace(job, submit=start, declared=length, runtime=length) for job, (start, length) in
                zip(jobs, [(0, 100), (96, 4)], strict=True))
    vcores = one.total["vcores"], two.total["vcores"]
    assert demand_quantile([one, two], 0.95)["vcores"] == vcores[0]  # both held only 4% of the time
    assert demand_quantile([one, two], 0.95)["vcores"] < peak_production([one, two], 1.0, {})["vcores"]
    assert demand_quantile([one, two], 1.0)["vcores"] == vcores[0] + vcores[1]


def test_peak_production_is_the_most_production_jobs_hold_at_once() -> None:
    jobs = [replace(job, submit=start, declared=length, runtime=length) for job, (start, length) in
            zip([j for j in mix().load_workload().jobs if j.is_production][:3], [(0, 10), (5, 10), (15, 5)],
                strict=True)]
    vcores = [job.total["vcores"] for job in jobs]
    assert peak_production(jobs, 1.0, {})["vcores"] == max(vcores[0] + vcores[1], vcores[2])  # j1 ends as j2 starts
    assert peak_production(jobs, 0.5, {"vcores": 1.0})["vcores"] == 1.0  # no more than the cluster has


def test_the_oracles_give_best_effort_the_rest_of_the_cluster() -> None:
    workload = mix().load_workload()
    capacity = {"vcores": 48.0, "memory": 6 * 32768.0}
    split = split_for("static-half", workload, capacity)
    assert isinstance(split, Split)
    for name, total in capacity.items():
        assert split.production.get(name, 0.0) + split.best_effort.get(name, 0.0) == pytest.approx(total)
    assert split_for("none", workload, capacity) is None
