"""The simulation's figures: SLA attainment, response times, size buckets and utilisation."""

from __future__ import annotations

import pytest

from follower.sim.metrics import JobRecord, Usage, size_buckets, summarize


def job(name: str, kind: str = "best_effort", submit: float = 0.0, alone: float = 10.0, finish: float | None = None,
        deadline: float | None = None, accepted: bool | None = None) -> JobRecord:
    return JobRecord(name, "u", kind, submit, alone, deadline=deadline, accepted=accepted, finish=finish)


def test_sla_attainment_leaves_out_jobs_whose_deadline_is_after_the_end() -> None:
    records = [job("met", "production", finish=50, deadline=60, accepted=True),
               job("late", "production", finish=70, deadline=60, accepted=True),
               job("lost", "production", deadline=80, accepted=False),
               job("open", "production", deadline=500, accepted=True)]
    production = summarize(records, Usage(), 0, end=100.0)["production"]
    assert (production["jobs"], production["open"], production["met_deadline"]) == (4, 1, 1)
    assert production["sla_attainment"] == pytest.approx(1 / 3)
    assert production["accepted"] == 3 and production["accepted_met_deadline"] == 1


def test_response_slowdown_and_percentiles_of_best_effort() -> None:
    records = [job(str(i), submit=0.0, alone=10.0, finish=10.0 * (i + 1)) for i in range(20)] + [job("never")]
    best = summarize(records, Usage(), 0)["best_effort"]
    assert (best["jobs"], best["completed"]) == (21, 20)
    assert best["mean_response_s"] == pytest.approx(105.0)
    assert best["p95_response_s"] == pytest.approx(190.5)
    assert best["mean_slowdown"] == pytest.approx(10.5)


def test_size_buckets_rank_jobs_by_their_run_time_alone() -> None:
    records = [job(f"j{i:02}", alone=float(i + 1), finish=float(100 + i)) for i in range(20)]
    buckets = size_buckets(records)
    assert [b["jobs"] for b in buckets] == [16, 3, 1]
    assert buckets[2]["mean_response_s"] == 119.0


def test_utilisation_is_used_over_available_resource_time() -> None:
    usage = Usage()
    usage.add({"vcores": 4.0}, {"vcores": 8.0, "memory": 10.0}, 10.0)
    usage.add({"vcores": 8.0, "memory": 10.0}, {"vcores": 8.0, "memory": 10.0}, 10.0)
    assert usage.utilization() == {"vcores": 0.75, "memory": 0.5}
