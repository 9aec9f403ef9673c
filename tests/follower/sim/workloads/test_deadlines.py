"""Deadlines where traces have none, the production rule, and per-job seeded draws."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from follower.sim.workloads.deadlines import DEFAULT_FLOOR, ProductionRule, Slack, job_random
from follower.sim.workloads.job import PRODUCTION, Job
from rdl import validate
from rdl.nodes import NodeGroup
from rdl.tree import Resources
from tests.follower.sim.workloads.conftest import START, cluster_of

CORE = Resources.of({"memory": 1024, "vcores": 1})


@pytest.mark.parametrize("mean", [1.5, 3.0, 10.0])
def test_slack_factors_exceed_one_and_average_the_configured_mean(mean: float) -> None:
    rng = random.Random(7)
    factors = [Slack(mean=mean, sigma=0.5).factor(rng) for _ in range(20000)]
    assert min(factors) > 1.0
    assert statistics.fmean(factors) == pytest.approx(mean, rel=0.03)


def test_a_deadline_is_submit_plus_the_factor_times_the_duration_rounded_up() -> None:
    slack = Slack(mean=3.0, sigma=0.5, floor=0.0)
    factor = slack.factor(random.Random(1))
    assert slack.deadline(100.0, 1000.0, random.Random(1)) == 100.0 + math.ceil(factor * 1000.0)


def test_the_floor_keeps_a_short_job_room_for_its_lease() -> None:
    slack = Slack(mean=1.01, sigma=0.0)
    assert slack.deadline(0.0, 30.0, random.Random(1)) == 30.0 + DEFAULT_FLOOR


@pytest.mark.parametrize("step", [60, 300])
def test_a_deadline_with_a_two_step_floor_always_makes_a_valid_reservation(step: int) -> None:
    cluster = cluster_of((NodeGroup("n", 4, Resources.of({"memory": 8192, "vcores": 8})),), step=f"{step}s")
    slack = Slack(mean=1.05, sigma=0.2, floor=2.0 * step)
    rng = random.Random(3)
    reservations = []
    for index in range(300):
        submit, declared = round(rng.uniform(0, 86400), 3), round(rng.uniform(1, 4 * step), 3)
        job = Job(id=f"j{index}", user="u", submit=submit, kind=PRODUCTION, driver=CORE, executors=1, executor=CORE,
                  runtime=declared, declared=declared, deadline=slack.deadline(submit, declared, rng))
        reservations.append(job.to_reservation(START, cluster.resource_names))
    validate(reservations, cluster)  # raises if any window cannot hold its lease once rounded to steps


@pytest.mark.parametrize(("mean", "sigma"), [(1.0, 0.5), (0.5, 0.5), (3.0, -1.0)])
def test_an_impossible_slack_is_refused(mean: float, sigma: float) -> None:
    with pytest.raises(ValueError):
        Slack(mean=mean, sigma=sigma)


def test_jobs_of_a_production_queue_are_always_production() -> None:
    rule = ProductionRule(fraction=0.0, queues=("2",))
    assert rule.is_production("2", random.Random(1))
    assert not rule.is_production("1", random.Random(1))


def test_a_production_fraction_is_a_seeded_share() -> None:
    rule = ProductionRule(fraction=0.25)
    flags = [rule.is_production(None, job_random(5, f"job-{n}")) for n in range(8000)]
    assert sum(flags) / len(flags) == pytest.approx(0.25, abs=0.02)
    assert flags == [rule.is_production(None, job_random(5, f"job-{n}")) for n in range(8000)]


def test_a_jobs_draws_depend_on_the_seed_and_the_job_only() -> None:
    assert job_random(1, "job-9").random() == job_random(1, "job-9").random()
    assert job_random(1, "job-9").random() != job_random(2, "job-9").random()
    assert job_random(1, "job-9").random() != job_random(1, "job-10").random()
