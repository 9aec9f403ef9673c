"""The seeded synthetic generator and the UWFQ paper's micro scenarios."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import replace
from itertools import pairwise

import pytest

from follower.sim.workloads.deadlines import Slack
from follower.sim.workloads.synthetic import (
    PowerSmallParams,
    SuperSmallParams,
    SyntheticParams,
    generate_synthetic,
    uwfq_power_small,
    uwfq_super_small,
)
from rdl import parse_text, validate
from rdl.nodes import NodeGroup
from rdl.tree import Resources
from tests.follower.sim.workloads.conftest import START, cluster_of

PARAMS = SyntheticParams(jobs=400, rate=120.0, production=0.3, users=5, executors=(2, 8),
                         runtime=300.0, estimate_sigma=0.3, slack=Slack(mean=3.0, sigma=0.5))


def test_the_same_seed_gives_the_same_jobs_byte_for_byte() -> None:
    assert repr(generate_synthetic(PARAMS, seed=11)) == repr(generate_synthetic(PARAMS, seed=11))


def test_another_seed_gives_other_jobs() -> None:
    assert generate_synthetic(PARAMS, seed=11).jobs != generate_synthetic(PARAMS, seed=12).jobs


def test_no_global_random_state_is_used() -> None:
    import random

    random.seed(1)
    first = generate_synthetic(PARAMS, seed=3)
    random.seed(2)
    assert generate_synthetic(PARAMS, seed=3) == first


def test_jobs_follow_the_parameters() -> None:
    jobs = generate_synthetic(PARAMS, seed=4).jobs
    assert len(jobs) == 400
    assert all(2 <= job.executors <= 8 for job in jobs)
    assert all(PARAMS.min_runtime <= job.runtime <= PARAMS.max_runtime for job in jobs)
    assert {job.user for job in jobs} <= {f"u{n}" for n in range(1, 6)}
    production = [job for job in jobs if job.is_production]
    assert 0.22 < len(production) / len(jobs) < 0.38
    assert all(job.deadline is not None and job.deadline > job.submit + job.declared for job in production)
    assert all(job.deadline is None and job.queue == "default" for job in jobs if not job.is_production)


def test_arrivals_are_poisson_at_the_configured_rate() -> None:
    jobs = generate_synthetic(replace(PARAMS, jobs=4000), seed=5).jobs
    gaps = [b.submit - a.submit for a, b in pairwise(jobs)]
    assert statistics.fmean(gaps) == pytest.approx(3600 / 120.0, rel=0.05)
    assert statistics.stdev(gaps) == pytest.approx(3600 / 120.0, rel=0.1)  # exponential: sd = mean


def test_declared_durations_are_exact_without_an_estimate_error() -> None:
    jobs = generate_synthetic(replace(PARAMS, estimate_sigma=0.0), seed=6).jobs
    assert all(job.declared == job.runtime for job in jobs)


def test_every_production_reservation_parses_and_validates() -> None:
    cluster = cluster_of((NodeGroup("worker", 16, Resources.of({"memory": 65536, "vcores": 16})),))
    workload = generate_synthetic(PARAMS, seed=7)
    text = "\n".join(job.to_rdl(START, cluster.resource_names) for job in workload.production)
    validate(parse_text(text), cluster)


def test_power_small_users_send_bursts_every_30_seconds_and_poisson_jobs() -> None:
    jobs = uwfq_power_small(PowerSmallParams(), seed=1).jobs
    by_user = Counter(job.user for job in jobs)
    assert by_user == {"power1": 80, "power2": 80, "small1": 12, "small2": 12}
    bursts = Counter((job.user, job.submit) for job in jobs if job.user.startswith("power"))
    assert bursts == {("power1", 0.1): 20, ("power1", 30.1): 20, ("power1", 60.1): 20, ("power1", 90.1): 20,
                      ("power2", 0.2): 20, ("power2", 30.2): 20, ("power2", 60.2): 20, ("power2", 90.2): 20}
    small = sorted(job.submit for job in jobs if job.user == "small1")
    assert small[0] == pytest.approx(0.3)
    assert len(set(small)) == 12
    assert all(job.kind == "best_effort" and job.containers == 11 and job.runtime == 2.2 for job in jobs)


def test_poisson_gaps_average_sixty_over_the_rate() -> None:
    jobs = uwfq_power_small(PowerSmallParams(power_users=0, small_users=1, small_jobs=3000), seed=2).jobs
    submits = [job.submit for job in jobs]
    gaps = [b - a for a, b in pairwise(submits)]
    assert statistics.fmean(gaps) == pytest.approx(60 / 8.0, rel=0.05)


def test_super_small_users_each_send_one_burst_of_a_hundred_tiny_jobs() -> None:
    jobs = uwfq_super_small(SuperSmallParams(), seed=1).jobs
    assert Counter((job.user, job.submit) for job in jobs) == {
        ("tiny1", 0.1): 100, ("tiny2", 0.2): 100, ("tiny3", 0.3): 100, ("tiny4", 0.4): 100}
    assert all(job.containers == 5 and job.runtime == 0.85 and job.driver == Resources() for job in jobs)


def test_micro_scenarios_are_deterministic() -> None:
    assert repr(uwfq_power_small(PowerSmallParams(), 9)) == repr(uwfq_power_small(PowerSmallParams(), 9))
    assert uwfq_power_small(PowerSmallParams(), 9).jobs != uwfq_power_small(PowerSmallParams(), 10).jobs
