"""The service's clock (planner/api/clockwork.py): the plan follows the wall clock, catches up, rolls, or runs fast."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from planner.api.clockwork import ClockMode, WallClock
from planner.store.facade import Store
from tests.planner.api.support import make_tokens, running, start, stored_violations
from tests.planner.support import START, cluster_text, instant, one, pinned


class FakeWall:
    """A wall clock the test moves."""

    def __init__(self, at: datetime):
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "plan.db") as opened:
        opened.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
        yield opened


def test_a_tick_moves_the_plan_to_the_last_step_boundary_before_the_wall_clock(store: Store) -> None:
    store.submit(one(pinned("early", 0, 5, 4)))
    wall = FakeWall(instant(10) + timedelta(seconds=30))
    clock = WallClock(store, ClockMode("wall"), wall)
    report = clock.tick()
    assert report is not None and report.now == instant(10) and report.expired == ("early",)
    assert clock.tick() is None  # not behind: nothing written
    assert [e.actor for e in store.log() if e.action == "advance" and e.reservation is None] == ["clock"]
    assert clock.seconds_to_next_step() == pytest.approx(30.0)


def test_a_server_stopped_for_weeks_catches_up_at_once_and_its_horizon_rolls(store: Store) -> None:
    wall = FakeWall(instant(60 * 24 * 30))  # thirty days after the plan's start; its horizon was one hour
    report = WallClock(store, ClockMode("wall"), wall).tick()
    assert report is not None and store.now() == instant(60 * 24 * 30)
    plan = store.load_plan()
    assert plan.clock.origin == instant(60 * 24 * 30) and plan.clock.steps == 60
    assert store.submit(one(pinned("then", 60 * 24 * 30 + 10, 5, 8))).accepted


def test_a_fast_clock_runs_n_times_real_time_from_the_plans_clock(store: Store) -> None:
    wall = FakeWall(datetime(2030, 1, 1, tzinfo=UTC))
    clock = WallClock(store, ClockMode.parse("fast:60"), wall)  # a wall second is a plan minute
    assert clock.tick() is None and store.now() == START
    wall.at += timedelta(seconds=90)
    assert clock.tick() is not None and store.now() == instant(90)
    assert clock.seconds_to_next_step() == pytest.approx(1.0)  # the next plan minute is one wall second away


@pytest.mark.parametrize("text", ["hourly", "fast:", "fast:0", "fast:-2", "fast:x", "fast:1e9"])
def test_a_clock_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="give `wall`, `manual` or `fast:N`"):
        ClockMode.parse(text)


def test_rayon_serve_follows_the_wall_clock_by_default(tmp_path: Path) -> None:
    state, tokens_file = tmp_path / "plan.db", tmp_path / "tokens.yaml"
    began = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(days=2)
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=7 * 24 * 60).replace(f"start: {START:%Y-%m-%dT%H:%M:%SZ}",
                                                                            f"start: {began:%Y-%m-%dT%H:%M:%SZ}"),
                   "cluster.yaml")
    tokens = make_tokens(tokens_file)
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    with running(state, tokens_file, tokens, "--clock", "wall") as server, server.client() as client:
        now = datetime.fromisoformat(client.get("/v1/ready").json()["now"].replace("Z", "+00:00"))
        use = server.client("alice").get("/v1/plan/use").json()
    after = datetime.now(UTC).replace(second=0, microsecond=0)
    assert before <= now <= after  # caught up two days at start, to the minute the wall clock is in
    start = datetime.fromisoformat(use["start"].replace("Z", "+00:00"))
    assert start <= now < start + timedelta(hours=1)  # the window moves in whole hours (the cluster's roll_steps) ...
    assert datetime.fromisoformat(use["end"].replace("Z", "+00:00")) == start + timedelta(days=7)  # ... a week on


def test_a_fast_clock_keeps_a_series_going_and_metrics_count_it(tmp_path: Path) -> None:
    state, tokens_file = tmp_path / "plan.db", tmp_path / "tokens.yaml"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
        store.submit(one("reservation s every=20m deadline=+20m { atom(b={vcores: 2}, g=2, h=2, l=5m, w=10m) }"))
    tokens = make_tokens(tokens_file)
    with running(state, tokens_file, tokens, "--clock", "fast:1200") as server, server.client() as client:
        deadline, placed = datetime.now(UTC) + timedelta(seconds=30), 0.0
        while datetime.now(UTC) < deadline and placed < 2:  # 20 plan minutes a wall second: one instance a second
            time.sleep(0.1)
            metrics = client.get("/metrics").text
            placed = float(re.search(r'rayon_series_instances_total\{outcome="placed"\} (\S+)', metrics).group(1))
        now = datetime.fromisoformat(client.get("/v1/ready").json()["now"].replace("Z", "+00:00"))
    assert placed >= 2, metrics
    assert now >= instant(40)
    with Store.open(state) as store:
        assert {a.instance for a in store.get("s").allocations} >= {0, 1, 2, 3, 4}


def clock_of(state: Path) -> datetime:
    with Store.open(state) as store:
        return store.now()


def test_a_server_killed_and_started_again_days_later_catches_up_on_the_wall_clock(tmp_path: Path) -> None:
    state, tokens_file = tmp_path / "plan.db", tmp_path / "tokens.yaml"
    began = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=2)
    with Store.open(state) as store:
        text = cluster_text({"vcores": 8}, steps=24 * 60)  # a day ahead, one-minute steps
        store.init(text.replace(f"start: {START:%Y-%m-%dT%H:%M:%SZ}", f"start: {began:%Y-%m-%dT%H:%M:%SZ}"),
                   "cluster.yaml")
        store.submit(one("reservation s every=1h deadline=+30m { atom(b={vcores: 2}, g=2, h=2, l=10m, w=20m) }"))
    tokens = make_tokens(tokens_file)
    server = start(state, tokens_file, tokens, "--clock", "fast:3600")  # an hour of plan time a second
    deadline = time.monotonic() + 60  # until it has moved the clock, however slowly a busy machine lets it
    while clock_of(state) <= began + timedelta(hours=1):
        assert time.monotonic() < deadline, "the server never moved the clock"
        time.sleep(0.1)
    server.process.kill()  # SIGKILL mid-run: no shutdown at all
    server.process.wait()
    with Store.open(state) as store:
        stopped = store.now()
    assert began < stopped < began + timedelta(days=1)
    with running(state, tokens_file, tokens, "--clock", "wall") as again, again.client() as client:
        now = datetime.fromisoformat(client.get("/v1/ready").json()["now"].replace("Z", "+00:00"))
    assert now >= datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)  # caught up at start
    with Store.open(state) as store:
        rows = [e.decision for e in store.log() if e.action == "advance" and e.reservation == "s" and e.decision]
        past = [a for item in store.history(name="s", state="accepted", limit=1000)[0]
                for a in item.record.allocations]  # the instances that ended a horizon ago
        placed = sorted({a.instance for a in [*store.get("s").allocations, *past]})
    missed = [row["instance"] for row in rows if not row["accepted"]]
    assert missed and all(row["reason"]["code"] == "window" for row in rows if not row["accepted"])
    assert placed[-1] >= (now - began) // timedelta(hours=1) + 22  # the series reaches a day ahead again
    assert sorted(missed + placed) == list(range(placed[-1] + 1))  # every hour decided exactly once
    assert stored_violations(state) == []


def test_a_manual_clock_is_not_said_to_be_kept_by_the_server(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """`--clock manual` logged "this server keeps the plan's clock" (issue #30)."""
    clock = WallClock(store, ClockMode("manual"), FakeWall(instant(10)), on_tick=[lambda: None])
    with caplog.at_level("INFO", logger="rayon"):
        assert clock.keeping()
    assert "keeps the plan's clock" not in caplog.text and "the plan's clock is manual" in caplog.text


def test_a_step_that_changes_nothing_logs_no_info_line(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """A quiet server logged one INFO line per plan step (issue #30): only a step that expired, placed or missed
    something is worth one."""
    store.submit(one(pinned("early", 0, 5, 4)))
    wall = FakeWall(instant(3))
    clock = WallClock(store, ClockMode("wall"), wall)
    with caplog.at_level("INFO", logger="rayon"):
        assert clock.tick() is not None  # 0 -> 3: nothing ended
        assert " -> " not in caplog.text
        wall.at = instant(10)
        assert clock.tick() is not None  # 3 -> 10: `early` expired
    assert "1 expired" in caplog.text
