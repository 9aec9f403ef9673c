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


def test_sla_over_jobs_due_counts_the_same_jobs_whichever_ran_them_early() -> None:
    # the same two jobs: a baseline that ran the far-deadline job early, and a plan that placed it late
    early = [job("near", "production", finish=50, deadline=60), job("far", "production", finish=90, deadline=500)]
    late = [job("near", "production", finish=70, deadline=60), job("far", "production", deadline=500, accepted=True)]
    baseline = summarize(early, Usage(), 0, end=100.0, limit=100.0)["production"]
    planned = summarize(late, Usage(), 0, end=100.0, limit=100.0)["production"]
    assert (baseline["sla_attainment"], planned["sla_attainment"]) == (1.0, 0.0)
    assert (baseline["due"], baseline["sla_due"]) == (1, 1.0)
    assert (planned["due"], planned["sla_due"]) == (1, 0.0)
    # with no time limit every job is due
    assert summarize(early, Usage(), 0, end=100.0)["production"]["due"] == 2


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


def test_the_reviewers_figures_are_worked_out_from_the_records() -> None:
    from follower.sim.metrics import level_changes
    from planner.core.plan import Allocation
    from rdl.tree import Resources

    jobs = [
        JobRecord("on-time", "a", "production", submit=0.0, alone=100.0, deadline=300.0, accepted=True, start=50.0,
                  finish=150.0, plan_changes=2),
        JobRecord("late", "a", "production", submit=100.0, alone=100.0, deadline=250.0, accepted=True, start=200.0,
                  finish=400.0, plan_changes=4),
        JobRecord("hopeless", "b", "production", submit=500.0, alone=300.0, deadline=600.0, accepted=False,
                  rejection="window", start=510.0, finish=810.0),
        JobRecord("quick", "c", "best_effort", submit=0.0, alone=30.0, start=90.0, finish=120.0),
        JobRecord("long", "c", "best_effort", submit=0.0, alone=600.0, start=0.0, finish=600.0),
    ]
    summary = summarize(jobs, Usage(), 0, end=1000.0)
    production = summary["production"]
    assert production["sla_attainment"] == 1 / 3
    assert (production["feasible"], production["sla_feasible"]) == (2, 0.5)  # `hopeless` could never make it
    assert production["median_start_latency_s"] == 50.0 and production["late"] == 2
    assert production["mean_lateness_s"] == (150.0 + 210.0) / 2
    assert production["plan_changes"] == 6 and production["rejections"] == {"window": 1}
    over_time = production["acceptance_over_time"]
    assert len(over_time) == 10 and over_time[0] == {"from_s": 0.0, "submitted": 1, "accepted": 1}
    assert over_time[5] == {"from_s": 500.0, "submitted": 1, "accepted": 0}
    assert (summary["best_effort"]["short_jobs"], summary["best_effort"]["short_mean_wait_s"]) == (1, 90.0)
    bundle = Resources.of({"vcores": 1.0})
    flat, stepped = [Allocation("x", 0, 10, 4, bundle)], [Allocation("x", 0, 5, 2, bundle),
                                                          Allocation("x", 5, 10, 6, bundle)]
    assert (level_changes(flat), level_changes(stepped)) == (2, 3)
    assert level_changes([Allocation("x", 0, 5, 2, bundle), Allocation("x", 5, 9, 2, bundle)]) == 2
