"""What the simulator charges, worked out by hand: lost work on a lost container, gangs that run only whole,
checkpoints, and a plan that rolls with the clock (one clock) so that no production job meets a frozen horizon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from follower.sim.engine import simulate
from follower.sim.metrics import JobRecord
from follower.sim.scenario import parse_scenario

# One node of one vcore per container, so every container's node is known; worker-1 fails at 4m for 1m.
FAILING = """
name: costs
start: 2026-11-23T00:00:00Z
agent: none
policy: fifo
{checkpoint}
cluster:
  nodes: [{{name: worker, count: {nodes}, memory: 1GiB, vcores: 1}}]
  step: 1m
  horizon: 1d
  failures: {{events: [{{node: worker-{failing}, at: 4m, repair: 1m}}]}}
workload:
  jobs:
    - {job}
"""
ONE = "{memory: 1GiB, vcores: 1}"
GANG = f"{{id: mpi, submit: 0s, driver: {ONE}, executors: 1, executor: {ONE}, runtime: 10m, gang: true}}"
ELASTIC = f"{{id: spark, submit: 0s, executors: 2, executor: {ONE}, runtime: 10m}}"


def record(job: str, nodes: int = 2, failing: int = 1, checkpoint: str | None = None) -> JobRecord:
    text = FAILING.format(job=job, nodes=nodes, failing=failing,
                          checkpoint="" if checkpoint is None else f"checkpoint: {checkpoint}")
    result = simulate(parse_scenario(text, "costs.yaml"))
    [found] = result.records
    assert result.summary["lost_work_s"] == found.lost_work_s
    return found


def test_a_gang_that_loses_a_rank_loses_all_its_work_and_waits_to_be_whole_again() -> None:
    # 4 minutes of both ranks lost (480 container-seconds); whole again at 5m, the 10 minutes start over.
    mpi = record(GANG)
    assert mpi.lost == 1 and mpi.lost_work_s == pytest.approx(480.0)
    assert mpi.finish == pytest.approx(15 * 60.0)


def test_a_gang_goes_back_to_its_last_checkpoint() -> None:
    # Saved at 3m: the minute since (both ranks) is lost; 7 minutes left from 5m.
    mpi = record(GANG, checkpoint="3m")
    assert mpi.lost_work_s == pytest.approx(120.0)
    assert mpi.finish == pytest.approx(12 * 60.0)


def test_an_elastic_job_loses_only_the_lost_executors_work_and_runs_on_with_the_rest() -> None:
    # 1,200 executor-seconds: 480 done by 4m, 240 of them lost; 1 executor until 5m (60 more), then 2: 900/2.
    spark = record(ELASTIC)
    assert spark.lost_work_s == pytest.approx(240.0)
    assert spark.finish == pytest.approx(5 * 60.0 + 450.0)


def test_a_gang_whose_lost_rank_finds_another_node_at_once_starts_over_at_once() -> None:
    mpi = record(GANG, failing=0, nodes=3)  # worker-0 fails; the gang may sit on it or not; worker-2 is spare
    hit = mpi.lost == 1
    assert (mpi.finish, mpi.lost_work_s) == ((pytest.approx(840.0), pytest.approx(480.0)) if hit else (600.0, 0.0))


def test_a_task_starts_over_or_from_its_checkpoint() -> None:
    from dataclasses import replace

    from follower.sim.engine import Simulation
    from follower.sim.workloads.job import Workload

    for checkpoint, finish, lost in ((None, 15 * 60.0, 240.0), ("3m", 12 * 60.0, 60.0)):
        text = FAILING.format(job=f"{{id: t, submit: 0s, executors: 1, executor: {ONE}, runtime: 10m}}", nodes=1,
                              failing=0, checkpoint="" if checkpoint is None else f"checkpoint: {checkpoint}")
        scenario = parse_scenario(text, "costs.yaml")
        [job] = scenario.load_workload().jobs
        result = Simulation(scenario, workload=Workload.of("t", [replace(job, tasks=(600.0,))])).run()
        [found] = result.records
        assert (found.finish, found.lost_work_s) == (pytest.approx(finish), pytest.approx(lost))


def test_a_gang_cannot_have_tasks() -> None:
    from dataclasses import replace

    text = FAILING.format(job=GANG, nodes=2, failing=1, checkpoint="")
    [job] = parse_scenario(text, "costs.yaml").load_workload().jobs
    with pytest.raises(ValueError, match="gang job runs as one piece"):
        replace(job, tasks=(1.0,))


ROLL_START = datetime(2026, 11, 23, tzinfo=UTC)
ROLLING = """
name: rolling
start: 2026-11-23T00:00:00Z
agent: gree
policy: fifo
cluster:
  nodes: [{name: worker, count: 1, memory: 4GiB, vcores: 4}]
  step: 1m
  horizon: 20m
workload:
  jobs:
    - {id: early, submit: 0s, kind: production, executors: 4, executor: {memory: 1GiB, vcores: 1}, runtime: 5m,
       deadline: 10m}
    - {id: later, submit: 50m, kind: production, executors: 4, executor: {memory: 1GiB, vcores: 1}, runtime: 5m,
       deadline: 65m}
    - {id: clash, submit: 55m, kind: production, executors: 4, executor: {memory: 1GiB, vcores: 1}, runtime: 5m,
       deadline: 61m}
    - {id: far, submit: 3h, kind: production, executors: 2, executor: {memory: 1GiB, vcores: 1}, runtime: 5m,
       deadline: 3h15m}
"""


def test_the_simulated_plan_rolls_with_the_clock_as_a_served_plan_does() -> None:
    # A 20-minute horizon and jobs arriving hours in: each is planned when it arrives, none meets a frozen window.
    # `later` holds [59m, 65m) (GREE places late), so `clash`, which needs all of [55m, 61m), is refused.
    from follower.sim.engine import Simulation

    simulation = Simulation(parse_scenario(ROLLING, "rolling.yaml"))
    result = simulation.run()
    accepted = {r.job_id: r.accepted for r in result.records}
    # The plan rolled past them and expired them; the run still knows each as it was accepted, on its first clock.
    assert not {"early", "later"} & set(simulation.planner.plan.accepted)
    assert set(simulation.planner.decided) == {"early", "later", "far"}
    later = simulation.planner.decided["later"].allocations
    assert simulation.planner.first_clock.at(min(a.start for a in later)) >= ROLL_START + timedelta(minutes=50)
    assert accepted == {"early": True, "later": True, "clash": False, "far": True}
    assert result.summary["production"]["rejections"] == {"capacity": 1}
    assert {r.job_id for r in result.records if r.met_deadline} >= {"early", "later", "far"}
