"""The Spark model's invariants, on the tool's scenarios under every policy and both partitionings."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

import pytest

from follower.sim.spark.engine import RunResult, simulate
from follower.sim.spark.model import Cluster, JobSpec, StageSpec
from follower.sim.spark.policies import POLICIES
from follower.sim.spark.scenario import load_scenario
from tests.follower.sim.spark.support import one_stage

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "spark"
TOLERANCE = 1e-9


def run(name: str, policy: str, partitioning: bool) -> tuple[list[JobSpec], RunResult]:
    scenario = load_scenario(EXAMPLES / f"{name}.yaml")
    jobs = scenario.jobs(partitioning, seed=7)
    return jobs, simulate(jobs, POLICIES.get(policy)(scenario.cluster.slots), scenario.cluster)


CASES = [(name, policy, partitioning) for name in ("2_large_2_small", "2_power_2_small")
         for policy in POLICIES.names for partitioning in (True, False)]


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"{case[0]}-{case[1]}-{case[2]}")
def ran(request: pytest.FixtureRequest) -> tuple[list[JobSpec], RunResult]:
    return run(*request.param)


def test_no_slot_runs_two_tasks_at_once(ran: tuple[list[JobSpec], RunResult]) -> None:
    by_slot = defaultdict(list)
    for task in ran[1].tasks:
        by_slot[task.slot].append((task.start, task.end))
    assert set(by_slot) <= set(range(32))
    for spans in by_slot.values():
        spans.sort()
        assert all(later[0] >= earlier[1] - TOLERANCE for earlier, later in itertools.pairwise(spans))


def test_every_task_runs_once(ran: tuple[list[JobSpec], RunResult]) -> None:
    jobs, result = ran
    expected = {(job.id, s, t) for job in jobs for s, stage in enumerate(job.stages) for t in range(len(stage.tasks))}
    ran_tasks = [(task.job, task.stage, task.task) for task in result.tasks]
    assert len(ran_tasks) == len(set(ran_tasks)) and set(ran_tasks) == expected


def test_work_is_conserved(ran: tuple[list[JobSpec], RunResult]) -> None:
    jobs, result = ran
    assert sum(task.end - task.start for task in result.tasks) == pytest.approx(sum(job.work for job in jobs))


def test_a_stage_starts_only_after_its_parents_finish(ran: tuple[list[JobSpec], RunResult]) -> None:
    jobs, result = ran
    start: defaultdict[tuple[str, int], float] = defaultdict(lambda: float("inf"))
    end: defaultdict[tuple[str, int], float] = defaultdict(float)
    for task in result.tasks:
        key = (task.job, task.stage)
        start[key], end[key] = min(start[key], task.start), max(end[key], task.end)
    for job in jobs:
        for index, stage in enumerate(job.stages):
            assert all(start[(job.id, index)] >= end[(job.id, parent)] for parent in stage.parents)


def test_response_times_are_at_least_the_critical_path(ran: tuple[list[JobSpec], RunResult]) -> None:
    assert all(job.response >= job.critical_path - TOLERANCE for job in ran[1].jobs)


def test_a_sequential_job_is_submitted_after_the_one_before_it_ends() -> None:
    jobs, result = run("2_large_2_small", "uwfq", True)
    by_id = {job.id: job for job in result.jobs}
    follows = [(job.id, job.follows) for job in jobs if job.follows]
    assert follows
    assert all(by_id[later].submit >= by_id[earlier].end for later, earlier in follows)


def test_two_runs_give_identical_traces() -> None:
    assert run("2_power_2_small", "uwfq", True)[1] == run("2_power_2_small", "uwfq", True)[1]


def test_no_slot_idles_while_a_task_waits() -> None:
    cluster = Cluster(executors=1, cores=2)
    jobs = [one_stage("a", "u", 0.0, [1.0, 3.0, 1.0]), one_stage("b", "v", 0.5, [1.0])]
    result = simulate(jobs, POLICIES.get("fair")(cluster.slots), cluster)
    starts = sorted(task.start for task in result.tasks)
    assert starts == [0.0, 0.0, 1.0, 2.0]


def test_a_child_stage_waits_for_every_parent() -> None:
    cluster = Cluster(executors=1, cores=4)
    job = JobSpec("j", "u", 0.0, (StageSpec((1.0,)), StageSpec((3.0,)), StageSpec((1.0,), parents=(0, 1))), 5.0)
    result = simulate([job], POLICIES.get("uwfq")(cluster.slots), cluster)
    assert [task.start for task in result.tasks if task.stage == 2] == [3.0]
    assert result.jobs[0].response == 4.0


def test_a_stage_without_tasks_or_waiting_for_a_later_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        StageSpec(())
    with pytest.raises(ValueError, match="only for earlier stages"):
        JobSpec("j", "u", 0.0, (StageSpec((1.0,), parents=(1,)), StageSpec((1.0,))), 2.0)
