"""Replanning on a schedule (planner/api/schedule.py): a replan job each time the plan's clock moved that far."""

from __future__ import annotations

import time
from pathlib import Path

from planner.api.errors import ApiError
from planner.api.schedule import ReplanSchedule
from planner.store.facade import Store
from tests.planner.api.support import make_tokens, pinned, running, submit
from tests.planner.support import cluster_text, instant


class FakeJobs:
    """Jobs that record what was asked, busy when told to be."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, float | None]] = []
        self.busy = False

    def replan(self, actor: str, time_limit: float | None, solver: str | None, gap: float | None) -> object:
        if self.busy:
            raise ApiError(409, "busy", "a replan is already under way")
        self.asked.append((actor, time_limit))
        return type("Job", (), {"id": str(len(self.asked))})()


def test_a_replan_starts_each_time_the_plans_clock_moved_that_far_and_waits_while_one_runs(tmp_path: Path) -> None:
    with Store.open(tmp_path / "plan.db") as store:
        store.init(cluster_text({"vcores": 8}, steps=600), "cluster.yaml")
        jobs = FakeJobs()
        schedule = ReplanSchedule(store, jobs, every=3600, time_limit=5)  # type: ignore[arg-type]
        schedule.tick()  # the first tick only notes the clock
        store.advance(instant(59))
        schedule.tick()
        assert jobs.asked == []
        store.advance(instant(60))
        schedule.tick()
        assert jobs.asked == [("schedule", 5)]
        store.advance(instant(125))
        jobs.busy = True
        schedule.tick()  # one is running: wait
        jobs.busy = False
        schedule.tick()
        assert len(jobs.asked) == 2 and schedule.last == instant(125)


def test_rayon_serve_replans_on_its_schedule_and_lists_the_jobs(tmp_path: Path) -> None:
    state, tokens_file = tmp_path / "plan.db", tmp_path / "tokens.yaml"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8, "memory": "16GiB"}, steps=24 * 60), "cluster.yaml")
    tokens = make_tokens(tokens_file)
    with running(state, tokens_file, tokens, "--clock", "fast:3600", "--replan-every", "1h",
                 "--replan-time-limit", "2") as server, server.client("ops") as ops, server.client("alice") as alice:
        assert submit(alice, pinned("a", 600, 60, 2)).status_code == 201
        assert submit(alice, one_text()).status_code == 201
        deadline, jobs = time.monotonic() + 60, []
        while time.monotonic() < deadline and not any(j["status"] == "done" for j in jobs):
            time.sleep(0.2)
            jobs = ops.get("/v1/jobs").json()
        mine = alice.get("/v1/jobs").json()
    assert any(j["status"] == "done" and j["requested_by"] == "schedule" for j in jobs), jobs
    assert jobs[0]["params"]["time_limit"] == 2
    assert mine == []  # a user sees only the jobs they started


def one_text() -> str:
    return ("reservation b { window(s=2026-11-23T09:00:00Z, e=2026-11-23T15:00:00Z, "
            "atom(b={vcores: 1}, g=1, h=4, l=10m, w=2h)) }")



