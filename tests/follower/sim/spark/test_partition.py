"""Runtime partitioning cuts stages into ~0.5 s tasks; without it a stage keeps its input's task count."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest

from follower.sim.spark.partition import Partitioning, skewed, stage_tasks
from follower.sim.spark.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "spark"


@pytest.mark.parametrize(("work", "tasks"), [(111.0, 222), (20.0, 40), (8.0, 16), (0.7, 1), (0.01, 1)])
def test_runtime_partitioning_gives_the_paper_s_task_counts(work: float, tasks: int) -> None:
    assert Partitioning(runtime=True).task_count(work) == tasks


def test_without_runtime_partitioning_a_stage_keeps_its_input_s_task_count() -> None:
    assert Partitioning(runtime=False, input_tasks=32).task_count(111.0) == 32
    assert Partitioning(runtime=False, input_tasks=32).task_count(0.5) == 32


def test_partitioning_changes_a_scenario_s_task_count() -> None:
    scenario = load_scenario(EXAMPLES / "2_large_2_small.yaml")
    on = {job.kind: len(job.stages[0].tasks) for job in scenario.jobs(True, 1)}
    off = {job.kind: len(job.stages[0].tasks) for job in scenario.jobs(False, 1)}
    assert on == {"loop1000": 222, "loop100": 40}
    assert off == {"loop1000": 32, "loop100": 32}


def test_skewed_task_times_keep_their_mean_and_vary() -> None:
    times = skewed(0.5, 20_000, 0.5, random.Random(3))
    assert statistics.fmean(times) == pytest.approx(0.5, rel=0.02)
    assert statistics.pstdev(times) == pytest.approx(0.5 * (2.718281828 ** 0.25 - 1) ** 0.5, rel=0.05)


def test_no_skew_gives_equal_tasks_and_one_seed_the_same_tasks() -> None:
    assert stage_tasks(2.0, Partitioning(), 0.0, random.Random(1)) == (0.5,) * 4
    assert stage_tasks(20.0, Partitioning(), 0.5, random.Random(9)) == stage_tasks(20.0, Partitioning(), 0.5,
                                                                                    random.Random(9))
