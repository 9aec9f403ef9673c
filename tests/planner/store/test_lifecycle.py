"""The plan's life after submission, in the durable store: update (try and swap), advance (the clock),
capacity changes with adaptive replanning (keep, move, and only then drop), and MILP re-planning.

Every test runs on a SQLite file under tmp_path; after every operation the stored plan must pass the
independent checker, built from the store's own records.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any as AnyType

import numpy as np
import pytest
from click.testing import CliRunner

import planner.replan.optimise
import planner.store.lifecycle
from follower.cli import main
from planner.core.check import check_plan
from planner.replan.adapt import parse_vector
from planner.replan.optimise import ReplanReport
from planner.store.facade import Store, StoreError
from rdl import parse_cluster
from rdl.errors import RDLErrors
from tests.planner.store.consistency import archived_instances, missed_instances, store_problems
from tests.planner.support import at, cluster_text, instant, one, pinned

SMALL = cluster_text({"vcores": 8}, steps=60)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "plan.db"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    """A store initialised with an 8-vcore, 60-minute cluster of one-minute steps."""
    opened = Store.open(path)
    opened.init(SMALL, "small.yaml")
    yield opened
    opened.close()


def with_priority(text: str, name: str, priority: int) -> str:
    return text.replace(f"reservation {name} ", f"reservation {name} priority={priority} ", 1)


def flexible(name: str, start: int, end: int, bundles: int, length: int, priority: int = 0) -> str:
    """A gang of `bundles` unit bundles held `length` minutes anywhere inside [start, end)."""
    text = (f"reservation {name} {{ window(s={at(start)}, e={at(end)}, atom(b={{vcores: 1}}, g={bundles}, "
            f"h={bundles}, l={length}m, w={bundles * length}m)) }}")
    return with_priority(text, name, priority)


def violations(store: Store) -> list[str]:
    """What the independent checker finds wrong with the plan as stored (decisions from the store's records, a
    series' with its past instances from the history)."""
    cluster = store.cluster()
    records = store.list()
    archived = archived_instances(store, {r.name: r for r in records})
    records = [replace(r, allocations=[*r.allocations, *archived.get(r.name, [])]) for r in records]
    clock = store.clock()
    missed = missed_instances(store.log())  # instances rejected as decisions of their own, as the log has them
    decisions = [{**r.decision().to_json(clock), "missed_instances": missed.get(r.name, [])} for r in records]
    return check_plan(cluster, [r.reservation() for r in records], decisions,
                      submitted={r.name: r.submitted for r in records}, rolled_to=store.now())


def rows(path: Path) -> dict[str, list[tuple[AnyType, ...]]]:
    """Every row of the store's tables, as the database holds them (byte for byte)."""
    with sqlite3.connect(path) as connection:
        return {table: connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in ("rayon_meta", "rayon_cluster", "rayon_reservations", "rayon_leases", "rayon_log")}


def steps(store: Store, name: str) -> list[tuple[int, int, int]]:
    return sorted((a.start, a.end, a.bundles) for a in store.get(name).allocations)


def same_plan_when_reopened(store: Store, path: Path) -> None:
    """The cached plan of this store equals the one a fresh store rebuilds from the rows."""
    cached = store.load_plan()
    with Store.open(path) as fresh:
        rebuilt = fresh.load_plan()
    assert np.array_equal(cached.capacity, rebuilt.capacity)
    assert np.array_equal(cached.used, rebuilt.used)
    assert cached.now == rebuilt.now
    assert {n: sorted(a.allocations, key=repr) for n, a in cached.accepted.items()} == \
        {n: sorted(a.allocations, key=repr) for n, a in rebuilt.accepted.items()}


# -- update ---------------------------------------------------------------------------------------------------


def test_update_that_fits_swaps_even_where_only_the_old_version_was_in_the_way(store: Store, path: Path) -> None:
    assert store.submit(one(pinned("a", 0, 30, 6))).accepted
    assert store.submit(one(pinned("b", 0, 30, 2))).accepted
    # [10, 30) is full with the old `a`: the new version fits only once the old one is out.
    decision = store.update("a", one(pinned("a", 10, 30, 6)), actor="ops")
    assert decision.accepted and decision.extra["previous"] == "replaced"
    record = store.get("a")
    assert record.state == "accepted" and "2026-11-23T00:40:00Z" in record.rdl
    assert steps(store, "a") == [(10, 40, 6)]
    plan = store.load_plan()
    assert plan.used[0, :10].tolist() == [2] * 10 and plan.used[0, 10:30].tolist() == [8] * 20
    entry = store.log()[-1]
    assert (entry.action, entry.reservation, entry.accepted, entry.actor) == ("update", "a", True, "ops")
    assert entry.decision is not None and entry.decision["previous_allocations"][0]["start"] == at(0)
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_update_that_does_not_fit_keeps_the_old_version_byte_for_byte(store: Store, path: Path) -> None:
    store.submit(one(pinned("a", 0, 30, 4)))
    store.submit(one(pinned("b", 0, 30, 4)))
    before, used = rows(path), store.load_plan().used.copy()
    decision = store.update("a", one(pinned("a", 0, 30, 6)))
    assert not decision.accepted and decision.extra["previous"] == "kept"
    assert decision.reason is not None and decision.reason.code == "capacity"
    after = rows(path)
    assert {k: v for k, v in after.items() if k != "rayon_log"} == {k: v for k, v in before.items()
                                                                     if k != "rayon_log"}
    assert after["rayon_log"][:-1] == before["rayon_log"]  # only the answer is logged
    entry = store.log()[-1]
    assert (entry.action, entry.accepted, entry.reason_code) == ("update", False, "capacity")
    assert np.array_equal(store.load_plan().used, used)
    assert steps(store, "a") == [(0, 30, 4)]
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_update_dry_run_and_bad_updates_change_nothing(store: Store, path: Path) -> None:
    store.submit(one(pinned("a", 0, 10, 4)))
    store.submit(one(pinned("big", 0, 60, 9)))  # rejected: larger than the cluster
    before = rows(path)
    decision = store.update("a", one(pinned("a", 20, 10, 4)), dry_run=True)
    assert decision.accepted and decision.extra["previous"] == "kept"
    with pytest.raises(StoreError) as unknown:
        store.update("aa", one(pinned("aa", 20, 10, 4)))
    assert unknown.value.code == "unknown"
    with pytest.raises(StoreError) as renamed:
        store.update("a", one(pinned("other", 20, 10, 4)))
    assert renamed.value.code == "input" and "keeps the reservation's name" in str(renamed.value)
    with pytest.raises(StoreError) as rejected:
        store.update("big", one(pinned("big", 0, 10, 1)))
    assert rejected.value.code == "state" and "submit it again" in str(rejected.value)
    assert rows(path) == before


def test_a_running_reservation_cannot_be_updated(store: Store) -> None:
    store.submit(one(pinned("a", 0, 30, 4)))
    store.advance(instant(10))
    with pytest.raises(StoreError, match="running"):
        store.update("a", one(pinned("a", 20, 30, 4)))


# -- advance ----------------------------------------------------------------------------------------------------


def test_advance_expires_finished_reservations_and_never_goes_back(store: Store, path: Path) -> None:
    store.submit(one(pinned("early", 0, 10, 4)))
    store.submit(one(pinned("late", 5, 30, 4)))
    store.submit(one(pinned("huge", 0, 10, 9)))  # rejected: stays rejected
    report = store.advance(instant(10), actor="clock")
    assert report.expired == ("early",) and report.previous == instant(0) and report.now == instant(10)
    assert store.now() == instant(10) and store.load_plan().now == instant(10)
    assert {r.name: r.state for r in store.list()} == {"early": "expired", "late": "accepted", "huge": "rejected"}
    assert store.get("early").allocations  # an expired reservation keeps the record of what it held
    assert "early" not in store.load_plan().accepted
    assert [e.reservation for e in store.log() if e.action == "advance"] == ["early", None]
    assert violations(store) == []
    same_plan_when_reopened(store, path)

    before = rows(path)
    with pytest.raises(StoreError) as backwards:
        store.advance(instant(9))
    assert backwards.value.code == "input" and "never moves back" in str(backwards.value)
    assert rows(path) == before

    # The clock is the default submission time: a window that has passed is now a `window` rejection.
    decision = store.submit(one(pinned("past", 0, 5, 1)))
    assert decision.reason is not None and decision.reason.code == "window"
    assert store.advance(instant(35)).expired == ("late",)
    assert store.advance(instant(35)).expired == ()  # staying put is allowed



def test_the_plan_rolls_with_its_clock_past_its_first_horizon(store: Store, path: Path) -> None:
    assert store.submit(one(pinned("running", 20, 30, 4))).accepted  # [20, 50)
    report = store.advance(instant(45))
    assert report.expired == () and store.now() == instant(45)
    plan = store.load_plan()
    assert plan.clock.origin == instant(45) and plan.clock.steps == 60  # the window: 60 steps from the clock (45 is a
    # whole roll_steps, 3, from the start: the window moves by 3 steps at a time, reaching 57 to 60 steps ahead)
    assert plan.used[0, :5].tolist() == [4.0] * 5 and not plan.used[0, 5:].any()  # what is left of `running`
    assert plan.accepted["running"].allocations[0].start == -25  # it began before the window
    late = store.submit(one(pinned("late", 90, 10, 8)))  # past the cluster file's first horizon (60 steps)
    assert late.accepted and steps(store, "late") == [(90, 100, 8)]  # records count steps from the file's start
    assert store.get("late").decision().to_json(store.clock())["allocations"][0]["start"] == at(90)
    beyond = store.submit(one(pinned("beyond", 100, 10, 1)))  # [100, 110) ends past clock + horizon (105)
    assert beyond.reason is not None and beyond.reason.code == "window"
    assert store.advance(instant(400)).expired == ("running", "late")  # any distance at once
    assert store.load_plan().clock.origin == instant(399) and not store.load_plan().used.any()  # 399 = 133 x 3
    assert store.submit(one(pinned("much_later", 420, 10, 8))).accepted
    assert violations(store) == []
    same_plan_when_reopened(store, path)


SERIES = "reservation s every=20m deadline=+20m { run: atom(b={vcores: 2}, g=2, h=2, l=5m, w=10m) }"


def instances(store: Store, name: str) -> list[int]:
    return sorted({a.instance for a in store.get(name).allocations})


def test_a_series_goes_on_as_the_plan_rolls_and_a_missed_instance_is_its_own_rejection(store: Store,
                                                                                       path: Path) -> None:
    assert store.submit(one(SERIES)).accepted
    assert instances(store, "s") == [0, 1, 2]  # arrivals 0, 20 and 40 end inside [0, 60)
    report = store.advance(instant(30))  # [30, 90): the instance arriving at 60 (ends at 80) comes in
    assert report.placed == (("s", 3),) and report.missed == ()
    assert instances(store, "s") == [0, 1, 2, 3]
    assert all(a.end <= 80 and a.start >= 60 for a in store.get("s").allocations if a.instance == 3)
    store.set_capacity(instant(80), {"vcores": 1})  # instance 4's whole period, [80, 100), beyond the horizon
    store.set_capacity(instant(100), {"vcores": 8})
    report = store.advance(instant(45))  # [45, 105): instance 4 comes in and cannot fit
    assert report.placed == () and [(name, index) for name, index, _ in report.missed] == [("s", 4)]
    reason = report.missed[0][2]
    assert reason.code == "capacity" and reason.atom == "run"  # (no later deadline: an instance keeps to its period)
    assert store.get("s").state == "accepted"  # the series goes on
    missed = [e for e in store.log() if e.action == "advance" and e.reservation == "s" and e.accepted is False]
    assert [e.decision["instance"] for e in missed if e.decision] == [4] and missed[0].reason_code == "capacity"
    report = store.advance(instant(70))  # [70, 130): instance 5, arriving at 100, fits again
    assert report.placed == (("s", 5),) and store.advance(instant(70)).placed == ()  # decided once
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_a_clock_moved_far_at_once_decides_every_instance_it_passed_once(store: Store) -> None:
    assert store.submit(one(SERIES)).accepted
    report = store.advance(instant(201))  # [201, 261): the instances arriving at 60 ... 180 passed unplanned
    assert [(name, index, reason.code) for name, index, reason in report.missed] == \
        [("s", index, "window") for index in range(3, 10)]
    assert report.placed == (("s", 10), ("s", 11), ("s", 12))  # arriving at 200, 220 and 240
    assert store.advance(instant(201)).missed == ()
    assert violations(store) == []

def test_a_series_with_an_end_stops_and_then_expires(store: Store) -> None:
    assert store.submit(one(SERIES.replace("every=20m", "every=20m until=+70m"))).accepted  # arrivals 0 ... 60
    assert store.advance(instant(50)).placed == (("s", 3),)
    assert store.advance(instant(75)).placed == ()  # no instance arrives at or after 70
    assert store.get("s").state == "accepted"  # instance 3 still runs until 80 at the latest
    assert store.advance(instant(200)).expired == ("s",)


def test_a_series_outlives_a_gap_longer_than_its_leases(store: Store) -> None:
    every_two_hours = "reservation s every=2h deadline=+10m { atom(b={vcores: 1}, g=1, h=1, l=5m, w=5m) }"
    assert store.submit(one(every_two_hours)).accepted and instances(store, "s") == [0]
    report = store.advance(instant(60))  # its one lease has ended; the next instance is not in the horizon yet
    assert report.expired == () and report.placed == () and store.get("s").state == "accepted"
    assert store.advance(instant(90)).placed == (("s", 1),)  # [90, 150) holds instance 1's window, [120, 130)
    assert violations(store) == []

# -- capacity changes ------------------------------------------------------------------------------------------------


def test_a_shrink_absorbed_by_moving_drops_nothing(store: Store, path: Path) -> None:
    assert store.submit(one(pinned("fixed", 20, 10, 4))).accepted
    assert store.submit(one(flexible("mover", 0, 30, 4, 10)), "gree").accepted  # GREE: latest, so [20, 30)
    assert steps(store, "mover") == [(20, 30, 4)]
    report = store.set_capacity(instant(20), {"vcores": 4}, actor="ops")
    moves = report.adaptation
    assert moves.affected == ["fixed", "mover"]  # equal priority: the earlier accepted first
    assert moves.kept == ["fixed"] and list(moves.moved) == ["mover"] and moves.dropped == []
    start, end, _ = steps(store, "mover")[0]
    assert end <= 20 and end - start == 10
    assert {r.state for r in store.list()} == {"accepted"}
    cluster = store.cluster()
    assert cluster.changes[-1].at == instant(20) and dict(cluster.changes[-1].capacity) == {"vcores": 4}
    assert store.load_plan().capacity[0, 19:21].tolist() == [8, 4]
    actions = [(e.action, e.reservation) for e in store.log()[-2:]]
    assert actions == [("capacity", "mover"), ("capacity", None)]
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_a_shrink_that_cannot_be_absorbed_drops_the_lowest_priority(store: Store, path: Path) -> None:
    store.submit(one(with_priority(pinned("low", 0, 30, 4), "low", 0)))
    store.submit(one(with_priority(pinned("high", 0, 30, 4), "high", 1)))  # newer, but more important
    report = store.set_capacity(instant(0), {"vcores": 5})
    assert report.adaptation.dropped == ["low"] and report.adaptation.kept == ["high"]
    record = store.get("low")
    assert record.state == "dropped" and record.reason is not None and record.reason.code == "capacity"
    assert "capacity change at 2026-11-23T00:00:00Z" in record.reason.message
    assert not record.decision().accepted
    assert "low" not in store.load_plan().accepted
    entry = next(e for e in store.log() if e.reservation == "low" and e.action == "capacity")
    assert entry.accepted is False and entry.reason_code == "capacity"
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_among_equal_priorities_the_most_recently_accepted_is_dropped(store: Store) -> None:
    store.submit(one(pinned("first", 0, 30, 4)))
    store.submit(one(pinned("second", 0, 30, 4)))
    assert store.set_capacity(instant(0), {"vcores": 6}).adaptation.dropped == ["second"]
    assert store.get("first").state == "accepted"
    assert violations(store) == []


def test_drops_no_more_than_needed(store: Store) -> None:
    store.submit(one(with_priority(pinned("old", 0, 30, 3), "old", 0)))
    store.submit(one(with_priority(pinned("new", 0, 30, 2), "new", 0)))
    store.submit(one(with_priority(pinned("top", 0, 30, 3), "top", 5)))
    # 8 vcores held, 5 left: dropping `new` (the newest of the lowest priority) is not enough, and once
    # `old` is gone `new` fits again, so only `old` is dropped.
    report = store.set_capacity(instant(0), {"vcores": 5})
    assert report.adaptation.dropped == ["old"]
    assert sorted(report.adaptation.kept) == ["new", "top"]
    assert {r.name: r.state for r in store.list()} == {"old": "dropped", "new": "accepted", "top": "accepted"}
    assert violations(store) == []


def test_after_a_drop_the_rest_are_placed_again(store: Store, path: Path) -> None:
    store.submit(one(pinned("x", 0, 10, 4)))  # priority 0, oldest
    store.submit(one(pinned("q", 0, 10, 4)))  # priority 0, newer
    store.submit(one(with_priority(pinned("r", 10, 10, 4), "r", 2)))
    assert store.submit(one(flexible("y", 0, 20, 4, 10, priority=1)), "gree").accepted
    assert steps(store, "y") == [(10, 20, 4)]
    # Down to 4 vcores: `y` cannot stay beside `r`, and `x` (kept where it was) is in the way of its move;
    # dropping `q` alone frees nothing `y` can use, so `x` goes too and `y` moves into its place.
    report = store.set_capacity(instant(0), {"vcores": 4})
    moves = report.adaptation
    assert moves.affected == ["r", "y", "x", "q"]
    assert sorted(moves.dropped) == ["q", "x"] and list(moves.moved) == ["y"] and moves.kept == ["r"]
    assert steps(store, "y") == [(0, 10, 4)]
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_a_running_reservation_is_kept_or_dropped_but_never_moved(store: Store) -> None:
    store.submit(one(flexible("running", 0, 60, 4, 20)), "gree")
    store.submit(one(with_priority(pinned("other", 40, 20, 4), "other", 1)))
    assert steps(store, "running") == [(40, 60, 4)]
    store.advance(instant(45))
    report = store.set_capacity(instant(45), {"vcores": 4})
    assert report.adaptation.moved == {} and report.adaptation.dropped == ["running"]
    assert "it is running, so it cannot move" in report.reasons["running"].message
    assert steps(store, "other") == [(40, 60, 4)]
    assert violations(store) == []


def test_a_shrink_that_puts_a_user_over_its_share_adapts_that_user(tmp_path: Path) -> None:
    text = SMALL + "policies:\n  user_limits:\n    instantaneous: 50%\n"
    with Store.open(tmp_path / "plan.db") as store:
        store.init(text, "shares.yaml")
        store.submit(one(pinned("a", 0, 30, 4).replace("reservation a ", "reservation a user=ann ")))
        store.submit(one(flexible("b", 0, 60, 2, 10).replace("reservation b ", "reservation b user=bob ")))
        store.submit(one(flexible("c", 0, 60, 2, 10, priority=2).replace("reservation c ", "reservation c user=ann ")))
        # 6 vcores in all: ann may hold 3 at once, so her 4-vcore `a` (the less important of hers) goes.
        report = store.set_capacity(instant(0), {"vcores": 6})
        assert report.adaptation.affected == ["c", "a"] and report.adaptation.dropped == ["a"]
        assert violations(store) == []


@pytest.mark.parametrize(("capacity", "message"), [
    ({"gpus": 2}, "no resource `gpus`"),
    ({"vcore": 2}, "did you mean `vcores`?"),
    ({"vcores": -1}, "must be a quantity of zero or more"),
    ({"vcores": "4GiB"}, "is a count and takes no unit"),
    ({}, "names no resource"),
])
def test_a_malformed_capacity_change_changes_nothing(store: Store, path: Path, capacity: dict[str, AnyType],
                                                      message: str) -> None:
    store.submit(one(pinned("a", 0, 30, 8)))
    before = rows(path)
    with pytest.raises(StoreError) as error:
        store.set_capacity(instant(10), capacity)
    assert error.value.code == "input" and message in str(error.value)
    assert rows(path) == before


def test_an_outage_moves_what_it_covers_and_the_capacity_comes_back(store: Store, path: Path) -> None:
    """Capacity to zero for a while (maintenance), then back: what the outage covers moves out of it or is
    dropped, and the plan holds nothing there."""
    store.submit(one(pinned("a", 0, 10, 4)))
    assert store.submit(one(flexible("b", 0, 60, 4, 10)), "gree").accepted
    assert steps(store, "b") == [(50, 60, 4)]
    report = store.set_capacity(instant(20), {"vcores": 0})
    assert list(report.adaptation.moved) == ["b"] and report.adaptation.dropped == []
    assert steps(store, "b")[0][1] <= 20
    store.set_capacity(instant(40), {"vcores": 8})
    plan = store.load_plan()
    vcores = plan.resources.index("vcores")
    assert plan.capacity[vcores, 20:40].max() == 0 and plan.capacity[vcores, 40:].min() == 8
    assert plan.used[vcores, 20:40].max() == 0
    assert store.submit(one(flexible("c", 0, 60, 8, 10)), "gree").accepted  # after the outage, the whole cluster
    assert steps(store, "c") == [(50, 60, 8)]
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_a_capacity_change_before_the_clock_changes_nothing(store: Store, path: Path) -> None:
    store.advance(instant(10))
    before = rows(path)
    with pytest.raises(StoreError, match="before the plan's clock"):
        store.set_capacity(instant(5), {"vcores": 4})
    assert rows(path) == before


def test_a_capacity_change_beyond_the_horizon_applies_when_the_plan_rolls_to_it(store: Store, path: Path) -> None:
    report = store.set_capacity(instant(100), {"vcores": 2})  # the window is [0, 60): nothing in it changes
    assert report.adaptation.affected == [] and not (store.load_plan().capacity == 2).any()
    store.advance(instant(51))
    capacity = store.load_plan().capacity[0]
    assert capacity[:49].tolist() == [8.0] * 49 and capacity[49:].tolist() == [2.0] * 11  # [51, 111) from 100 on
    assert store.submit(one(pinned("small", 100, 5, 2))).accepted
    assert not store.submit(one(pinned("big", 100, 5, 3))).accepted
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_a_capacity_dry_run_reports_without_writing(store: Store, path: Path) -> None:
    store.submit(one(pinned("a", 0, 30, 8)))
    before = rows(path)
    report = store.set_capacity(instant(0), {"vcores": 4}, dry_run=True)
    assert report.dry_run and report.adaptation.dropped == ["a"]
    assert rows(path) == before
    assert store.get("a").state == "accepted"


def test_resources_left_out_keep_their_capacity_and_the_file_keeps_its_text(tmp_path: Path) -> None:
    text = "# two resources\n" + cluster_text({"memory": "8GiB", "vcores": 8}, steps=60,
                                               changes=[(30, {"memory": "4GiB"})])
    with Store.open(tmp_path / "plan.db") as store:
        store.init(text, "two.yaml")
        report = store.set_capacity(instant(40), parse_vector("{vcores: 2}"))
        # memory keeps the 4GiB the earlier change set, not the 8GiB of the file's base capacity
        assert dict(report.capacity) == {"memory": 4096.0, "vcores": 2.0}
        stored = store.cluster()
    assert [dict(c.capacity) for c in stored.changes] == [{"memory": 4096.0, "vcores": 8.0},
                                                           {"memory": 4096.0, "vcores": 2.0}]
    with sqlite3.connect(tmp_path / "plan.db") as connection:
        yaml_text = connection.execute("SELECT yaml FROM rayon_cluster").fetchone()[0]
    assert yaml_text.startswith(text) and yaml_text.endswith(
        f"  - {{at: {at(40)}, capacity: {{memory: 4GiB, vcores: 2}}}}\n")
    assert parse_cluster(yaml_text) == stored


def test_parse_vector_reads_rdl_resources_and_rejects_malformed_text() -> None:
    assert parse_vector("{vcores: 512, memory: 1TiB}") == {"vcores": 512.0, "memory": 1048576.0}
    for bad, message in [("{vcores: 5", "closed by `}`"), ("vcores: 5", "expected `{`"),
                         ("{memory: 5XB}", "unknown memory unit"), ("{}", "empty resource vector"),
                         ("{vcores: 5} extra", "after the resource vector"), ("{vcores: 1, vcores: 2}", "twice")]:
        with pytest.raises(RDLErrors, match=message):
            parse_vector(bad)


# -- replan ---------------------------------------------------------------------------------------------------------


def test_replan_keeps_every_reservation_and_writes_back_what_moved(store: Store, path: Path) -> None:
    for index in range(3):
        assert store.submit(one(flexible(f"r{index}", 0, 60, 2, 10)), "gree").accepted
    store.submit(one(pinned("huge", 0, 10, 9)))  # rejected, and stays so
    before = {r.name: r for r in store.list()}
    outcome = store.replan(actor="night", time_limit=10)
    assert outcome.status in ("optimal", "feasible", "timeout")
    after = {r.name: r for r in store.list()}
    assert {n: r.state for n, r in after.items()} == {n: r.state for n, r in before.items()}
    for name, allocations in outcome.moved.items():
        assert after[name].allocations == allocations and before[name].allocations == outcome.previous[name]
    for name in set(before) - set(outcome.moved):
        assert after[name].allocations == before[name].allocations
    assert store.log()[-1].action == "replan" and store.log()[-1].decision["moved"] == list(outcome.moved)
    assert outcome.changes_after <= outcome.changes_before
    assert (outcome.changes_after < outcome.changes_before) == bool(outcome.moved)  # moves only to be smoother
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_replan_that_finds_nothing_better_changes_nothing(store: Store, path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store.submit(one(flexible("r", 0, 60, 2, 10)))
    monkeypatch.setattr(planner.replan.optimise, "replan", lambda *args, **kwargs: ReplanReport("timeout"))
    before = rows(path)
    outcome = store.replan(time_limit=1)
    assert outcome.moved == {} and outcome.status == "timeout"
    after = rows(path)
    assert {k: v for k, v in after.items() if k != "rayon_log"} == {k: v for k, v in before.items()
                                                                     if k != "rayon_log"}
    assert len(after["rayon_log"]) == len(before["rayon_log"]) + 1


def always_busy(path: Path, calls: list[set[str]]):  # type: ignore[no-untyped-def]
    """A solver that, each time it is asked, records what it was given, lets another writer commit a submission
    meanwhile, and finds nothing better."""

    def solve(plan, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(set(plan.accepted))
        with Store.open(path) as other:
            other.submit(one(pinned(f"busy{len(calls)}", 40, 1, 1)))
        return ReplanReport("timeout")

    return solve


def test_replan_solves_again_when_the_plan_changed_meanwhile(store: Store, path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store.submit(one(flexible("r", 0, 60, 2, 10)))
    calls: list[set[str]] = []
    original = planner.replan.optimise.replan

    def busy(plan, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(set(plan.accepted))
        if len(calls) == 1:
            with Store.open(path) as other:  # another writer commits while the first solve runs
                other.submit(one(pinned("meanwhile", 50, 10, 2)))
        return original(plan, *args, **kwargs)

    monkeypatch.setattr(planner.replan.optimise, "replan", busy)
    store.replan(time_limit=5)
    assert calls == [{"r"}, {"r", "meanwhile"}]
    assert {r.name for r in store.list(state="accepted")} == {"r", "meanwhile"}
    assert violations(store) == []

    monkeypatch.setattr(planner.replan.optimise, "replan", always_busy(path, calls))
    before = len(store.log())
    with pytest.raises(StoreError) as error:
        store.replan()  # no time limit: how long the machine takes decides nothing here
    assert error.value.code == "conflict" and len(calls) == 2 + 3 and "3 times" in error.value.message
    assert [e.action for e in store.log()[before:]] == ["submit"] * 3  # the re-planning wrote nothing


def test_replan_stops_solving_again_when_the_time_limit_leaves_too_little(store: Store, path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store.submit(one(flexible("r", 0, 60, 2, 10)))
    calls: list[set[str]] = []
    monkeypatch.setattr(planner.replan.optimise, "replan", always_busy(path, calls))
    monkeypatch.setattr(planner.store.lifecycle, "REPLAN_LEAST_SECONDS", 10.0**9)  # any limit is too short for a second
    with pytest.raises(StoreError) as error:
        store.replan(time_limit=1)
    assert error.value.code == "conflict" and len(calls) == 1
    assert "1 time (the time limit left too little for another)" in error.value.message


def test_every_operation_keeps_the_stored_plan_valid(store: Store, path: Path) -> None:
    assert store.submit(one(flexible("a", 0, 40, 4, 10, priority=1))).accepted
    assert store.submit(one(flexible("b", 10, 50, 2, 20))).accepted
    assert store.submit(one(pinned("c", 40, 20, 3))).accepted
    assert violations(store) == []
    assert store.update("b", one(flexible("b", 10, 60, 2, 15))).accepted
    assert violations(store) == []
    store.advance(instant(5))
    assert violations(store) == []
    report = store.set_capacity(instant(20), {"vcores": 4})
    assert report.adaptation.affected and not report.adaptation.dropped
    assert violations(store) == []
    store.replan(time_limit=5)
    assert violations(store) == []
    assert {r.state for r in store.list()} == {"accepted"}
    store.advance(instant(60))
    assert {r.state for r in store.list()} == {"expired"}
    assert violations(store) == []
    same_plan_when_reopened(store, path)


# -- the commands -----------------------------------------------------------------------------------------------------


@pytest.fixture
def rayon(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = str(tmp_path / "cli.db")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(SMALL)

    def run(*args: str) -> AnyType:
        return CliRunner().invoke(main, [*args, "--state", state], prog_name="rayon")

    assert run("init", "--cluster", str(cluster)).exit_code == 0
    run.state = Path(state)  # type: ignore[attr-defined]
    return run


def rdl_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.rdl"
    path.write_text(text + "\n")
    return str(path)


def test_update_command(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert rayon("submit", rdl_file(tmp_path, "a", pinned("a", 0, 30, 4)),
                 rdl_file(tmp_path, "b", pinned("b", 0, 30, 4))).exit_code == 0
    fits = rdl_file(tmp_path, "a2", pinned("a", 30, 30, 8))
    result = rayon("update", "a", fits, "--json")
    assert result.exit_code == 0, result.stderr
    (decision,) = json.loads(result.stdout)["decisions"]
    assert decision["accepted"] and decision["previous"] == "replaced"
    assert decision["allocations"][0]["start"] == at(30)

    too_big = rdl_file(tmp_path, "a3", pinned("a", 0, 60, 5))
    before = rows(rayon.state)
    result = rayon("update", "a", too_big)
    assert result.exit_code == 0 and "rejected (capacity)" in result.stdout and "keeps its previous version" in \
        result.stdout
    assert rows(rayon.state)["rayon_leases"] == before["rayon_leases"]

    dry = rayon("update", "a", rdl_file(tmp_path, "a4", pinned("a", 40, 10, 1)), "--dry-run")
    assert dry.exit_code == 0 and "would replace" in dry.stdout
    assert rows(rayon.state)["rayon_leases"] == before["rayon_leases"]


def test_update_command_bad_input_exits_2_and_changes_nothing(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("submit", rdl_file(tmp_path, "a", pinned("a", 0, 30, 4)))
    before = rows(rayon.state)
    bad = tmp_path / "bad.rdl"
    bad.write_text("reservation a { atom(b={vcores: 1}, w=30) }\n")
    result = rayon("update", "a", str(bad))
    assert result.exit_code == 2 and "bad.rdl:1:" in result.stderr and "nothing was updated" in result.stderr
    result = rayon("update", "a", rdl_file(tmp_path, "other", pinned("other", 0, 10, 1)))
    assert result.exit_code == 2 and "holds `other`" in result.stderr
    result = rayon("update", "nope", rdl_file(tmp_path, "nope", pinned("nope", 0, 10, 1)))
    assert result.exit_code == 2 and "no reservation named `nope`" in result.stderr
    assert rows(rayon.state) == before


def test_advance_command(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("submit", rdl_file(tmp_path, "a", pinned("a", 0, 10, 4)), rdl_file(tmp_path, "b", pinned("b", 0, 30, 4)))
    result = rayon("advance", "--to", at(10), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"from": at(0), "to": at(10), "expired": ["a"]}
    before = rows(rayon.state)
    back = rayon("advance", "--to", at(5))
    assert back.exit_code == 2 and "never moves back" in back.stderr
    garbage = rayon("advance", "--to", "yesterday")
    assert garbage.exit_code == 2 and "is not a time" in garbage.stderr
    assert rows(rayon.state) == before
    text = rayon("advance", "--to", at(30))
    assert text.exit_code == 0 and "expired: b" in text.stdout


def test_capacity_command(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("submit", rdl_file(tmp_path, "low", with_priority(pinned("low", 0, 30, 4), "low", 0)),
          rdl_file(tmp_path, "high", with_priority(pinned("high", 0, 30, 4), "high", 3)))
    dry = rayon("capacity", "--at", at(0), "--set", "{vcores: 4}", "--dry-run")
    assert dry.exit_code == 0 and "dry run" in dry.stdout
    result = rayon("capacity", "--at", at(0), "--set", "{vcores: 4}", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["change"] == {"at": at(0), "capacity": {"vcores": 4}}
    assert [d["reservation"] for d in report["dropped"]] == ["low"] and report["kept"] == ["high"]
    assert report["dropped"][0]["reason"]["code"] == "capacity"
    listed = {r["reservation"]: r["state"] for r in json.loads(rayon("list", "--json").stdout)["items"]}
    assert listed == {"low": "dropped", "high": "accepted"}
    log = rayon("log").stdout
    assert "capacity  low          dropped (capacity)" in log


@pytest.mark.parametrize(("vector", "message"), [
    ("{vcores: 4", "closed by `}`"),
    ("{gpus: 4}", "no resource `gpus`"),
    ("{memory: 4GiB}", "no resource `memory`"),
    ("{vcores: 4XB}", "takes no unit"),
    ("{vcores: -4}", "cannot be negative"),
    ("4", "expected `{`"),
])
def test_capacity_command_bad_input_exits_2_and_changes_nothing(rayon, tmp_path: Path, vector: str,  # type: ignore[no-untyped-def]
                                                                message: str) -> None:
    rayon("submit", rdl_file(tmp_path, "a", pinned("a", 0, 30, 8)))
    before = rows(rayon.state)
    result = rayon("capacity", "--at", at(0), "--set", vector)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert result.stdout == ""
    assert rows(rayon.state) == before


def test_replan_command(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("submit", "--agent", "gree", rdl_file(tmp_path, "a", flexible("a", 0, 60, 4, 10)),
          rdl_file(tmp_path, "b", flexible("b", 0, 60, 4, 10)))
    result = rayon("replan", "--time-limit", "5", "--json")
    assert result.exit_code == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["status"] in ("optimal", "feasible", "timeout") and outcome["solver"] == "highs"
    assert {r["state"] for r in json.loads(rayon("list", "--json").stdout)["items"]} == {"accepted"}
    text = rayon("replan", "--time-limit", "5")
    assert text.exit_code == 0 and "solver highs" in text.stdout
    assert rayon("replan", "--solver", "nope").exit_code == 2


def test_a_second_store_on_the_same_plan_sees_the_clock_and_the_capacity_change(store: Store, path: Path) -> None:
    store.submit(one(pinned("a", 0, 10, 4)))
    store.submit(one(flexible("b", 10, 60, 4, 10)), "gree")
    with Store.open(path) as other:
        assert other.load_plan().accepted.keys() == {"a", "b"}  # its cache is current, then the first store writes
        store.advance(instant(10))
        store.set_capacity(instant(50), {"vcores": 2})
        plan = other.load_plan()
        assert other.now() == instant(10) and plan.now == instant(10)
        assert plan.accepted.keys() == {"b"} and plan.capacity[0, 40] == 8 and plan.capacity[0, 41] == 2
        # Moved before the cut at step 50: the plan's window begins at step 9 (the clock's, in whole roll_steps).
        assert [(a.start, a.end) for a in plan.accepted["b"].allocations] == [(31, 41)]
        assert steps(other, "b") == [(40, 50, 4)]  # records count from the cluster file's start
        assert other.submit(one(pinned("c", 20, 10, 8))).accepted
    assert violations(store) == []


def test_a_series_cancelled_from_an_instance_on_keeps_the_earlier_ones_and_stops(store: Store, path: Path) -> None:
    assert store.submit(one(SERIES)).accepted and instances(store, "s") == [0, 1, 2]
    record = store.cancel("s", actor="ops", after=instant(30))  # instances arriving at 40 and later go
    assert record.state == "accepted" and instances(store, "s") == [0, 1]
    assert "until=2026-11-23T00:40:00Z" in record.rdl
    assert store.load_plan().used[0, 40:].sum() == 0  # instance 2's leases, [40, 60), are free again
    entry = store.log()[-1]
    assert (entry.action, entry.reservation, entry.decision["from_instance"]) == ("cancel", "s", 2)  # type: ignore[index]
    assert store.advance(instant(45)).placed == ()  # the series ended: nothing more comes in
    assert store.get("s").state == "expired"  # every lease it kept has ended, and no instance is to come
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_cancelling_a_series_from_before_its_first_instance_cancels_it_whole(store: Store) -> None:
    assert store.submit(one(SERIES)).accepted
    assert store.cancel("s", after=instant(0)).state == "cancelled"


def test_only_a_series_is_cancelled_from_an_instance_on(store: Store, path: Path) -> None:
    assert store.submit(one(pinned("a", 0, 30, 4))).accepted
    before = rows(path)
    with pytest.raises(StoreError, match="not recurring"):
        store.cancel("a", after=instant(10))
    assert rows(path) == before


def test_a_write_for_an_owner_checks_the_owner_inside_the_write(store: Store, path: Path) -> None:
    """What the API relies on across servers: the check and the write are one transaction."""
    text = pinned("a", 0, 30, 4).replace("reservation a ", "reservation a user=alice ")
    assert store.submit(one(text)).accepted
    before = rows(path)
    with pytest.raises(StoreError) as cancelled:
        store.cancel("a", actor="bob", owner="bob")
    with pytest.raises(StoreError) as updated:
        store.update("a", one(text), actor="bob", owner="bob")
    assert cancelled.value.code == updated.value.code == "forbidden" and rows(path) == before
    assert store.cancel("a", actor="alice", owner="alice").state == "cancelled"


def test_rejections_for_capacity_that_fit_now_are_admitted_again(store: Store, path: Path) -> None:
    store.set_capacity(instant(0), {"vcores": 4})
    assert store.submit(one(pinned("wide", 30, 10, 8))).reason.code == "capacity"  # type: ignore[union-attr]
    assert store.submit(one(pinned("past", 0, 5, 8))).reason.code == "capacity"  # type: ignore[union-attr]
    before = rows(path)
    assert store.readmit() == [] and rows(path) == before  # nothing fits yet: nothing written
    store.set_capacity(instant(20), {"vcores": 8})  # capacity comes back from step 20
    store.advance(instant(10))
    admitted = store.readmit(actor="replan")
    assert [d.reservation for d in admitted] == ["wide"]  # `past` ended before the clock: not tried
    assert store.get("wide").state == "accepted" and store.get("past").state == "rejected"
    assert store.log()[-1].actor == "replan" and store.log()[-1].action == "submit"
    assert violations(store) == []
    same_plan_when_reopened(store, path)


def test_readmitting_tries_nothing_once_its_time_is_up(store: Store, path: Path) -> None:
    """Past `until`, rejections are left for the next replan and named; nothing is written."""
    store.set_capacity(instant(0), {"vcores": 4})
    assert store.submit(one(pinned("wide", 30, 10, 8))).reason.code == "capacity"  # type: ignore[union-attr]
    store.set_capacity(instant(20), {"vcores": 8})  # it would fit now
    before = rows(path)
    skipped: list[str] = []
    assert store.readmit(until=0.0, skipped=skipped) == [] and skipped == ["wide"] and rows(path) == before
    assert [d.reservation for d in store.readmit(until=None)] == ["wide"]


def test_a_running_series_moves_the_instances_that_have_not_begun(store: Store) -> None:
    """Instances are apart (issue #30: a capacity change dropped a whole series because one instance was running):
    the one running stays, the next moves within its own period, and the series stays accepted."""
    series = "reservation series every=20m deadline=+20m { atom(b={vcores: 1}, g=4, h=4, l=5m, w=20m) }"
    assert store.submit(one(series), "gree").accepted
    assert steps(store, "series") == [(15, 20, 4), (35, 40, 4), (55, 60, 4)]  # the end of each period
    store.submit(one(with_priority(pinned("other", 30, 10, 4), "other", 1)))
    store.advance(instant(17))  # the first instance is running
    report = store.set_capacity(instant(30), {"vcores": 4})
    assert report.adaptation.dropped == [] and list(report.adaptation.moved) == ["series"]
    assert steps(store, "series") == [(15, 20, 4), (25, 30, 4), (55, 60, 4)]
    assert store.get("series").state == "accepted"
    assert violations(store) == []


def test_an_instance_that_cannot_fit_is_dropped_alone_and_the_series_goes_on(store: Store) -> None:
    """rdl.md: each instance in the horizon is its own decision, and one that cannot fit is its own rejected
    decision while the series goes on (issue #30 item 5: a capacity drop dropped a whole series)."""
    series = "reservation series every=20m deadline=+20m { atom(b={vcores: 1}, g=4, h=4, l=5m, w=20m) }"
    assert store.submit(one(series), "gree").accepted
    store.submit(one(with_priority(pinned("other", 20, 20, 4), "other", 1)))  # holds the second period whole
    store.advance(instant(17))  # the first instance is running
    report = store.set_capacity(instant(20), {"vcores": 4})
    assert report.adaptation.dropped == [] and report.adaptation.missed == {"series": [1]}
    assert list(report.missed) == [("series", 1)] and "the series goes on" in report.missed[("series", 1)].message
    assert steps(store, "series") == [(15, 20, 4), (55, 60, 4)]  # the running one and the third, where they were
    assert store.get("series").state == "accepted" and store.get("other").state == "accepted"
    (entry,) = [e for e in store.log() if e.action == "capacity" and e.reservation == "series"
                and e.accepted is False]
    assert entry.decision is not None and entry.decision["instance"] == 1 and entry.reason["code"] == "capacity"
    assert report.to_json(store.clock())["dropped_instances"][0]["instance"] == 1
    assert violations(store) == []
    store.advance(instant(40))  # the series goes on: the next instance entering the horizon is placed
    assert store.get("series").state == "accepted" and (75, 80, 4) in steps(store, "series")
    assert violations(store) == []


def test_a_series_that_lost_every_instance_stays_accepted_and_places_the_next(store: Store, path: Path) -> None:
    """A capacity change that leaves no room for any instance in the horizon drops each alone: the series holds
    nothing for a while, stays accepted, and places the instances entering the horizon once there is room (CI
    found the store's own consistency check calling such a series torn)."""
    series = "reservation series every=10m { window(e=+5m, atom(b={vcores: 1}, w=2m)) }"
    assert store.submit(one(series), "gree").accepted
    report = store.set_capacity(instant(0), {"vcores": 0})
    assert report.adaptation.dropped == [] and report.adaptation.missed == {"series": [0, 1, 2, 3, 4, 5]}
    assert store.get("series").state == "accepted" and store.get("series").allocations == ()
    assert store_problems(path) == []
    store.set_capacity(instant(30), {"vcores": 8})
    store.advance(instant(20))  # instances 6 and 7 enter the horizon, where there is room again
    assert store.get("series").state == "accepted"
    assert sorted({a.instance for a in store.get("series").allocations}) == [6, 7]
    assert store_problems(path) == [] and violations(store) == []


@pytest.mark.parametrize("again", ["resubmit", "update"])
def test_a_series_decided_again_counts_its_instances_afresh(store: Store, again: str) -> None:
    """A series with a dropped instance, submitted again (after a cancel) or updated, is a new series: its
    instance 0 holds leases, and the checker must not read the old version's dropped instance 0 as this one's
    (the crash soak's `instance 0 was rejected but holds allocations`, seed 20261123)."""
    series = "reservation series every=20m deadline=+20m { atom(b={vcores: 1}, g=4, h=4, l=5m, w=20m) }"
    assert store.submit(one(series), "gree").accepted
    store.submit(one(with_priority(pinned("other", 0, 20, 4), "other", 1)))  # holds the first period whole
    assert store.set_capacity(instant(0), {"vcores": 4}).adaptation.missed == {"series": [0]}
    store.cancel("other")
    store.set_capacity(instant(0), {"vcores": 8})
    if again == "resubmit":
        store.cancel("series")
        assert store.submit(one(series), "gree").accepted
    else:
        assert store.update("series", one(series.replace("l=5m", "l=4m")), "gree").accepted
    assert missed_instances(store.log()) == {}
    assert 0 in {a.instance for a in store.get("series").allocations}
    assert violations(store) == []


def test_a_less_important_reservation_is_dropped_before_an_instance_of_a_more_important_series(
        store: Store) -> None:
    series = with_priority("reservation series every=20m deadline=+20m { atom(b={vcores: 1}, g=4, h=4, l=5m, "
                           "w=20m) }", "series", 2)
    assert store.submit(one(series), "gree").accepted
    store.submit(one(pinned("other", 20, 20, 4)))  # priority 0
    store.advance(instant(17))
    report = store.set_capacity(instant(20), {"vcores": 4})
    assert report.adaptation.dropped == ["other"] and report.adaptation.missed == {}
    assert steps(store, "series") == [(15, 20, 4), (35, 40, 4), (55, 60, 4)]
    assert violations(store) == []


def test_the_issue_s_capacity_drop_keeps_the_spark_series_and_drops_only_instances(tmp_path: Path) -> None:
    """Issue #30's reproducer on the examples: after `advance --to +7h`, `capacity --at +5h --set '{vcores: 200}'
    --dry-run` no longer drops `spark-etl-nightly` whole (its running instance ended at the clock)."""
    examples = Path(__file__).resolve().parents[3] / "examples"

    def rayon(*args: str) -> AnyType:
        return CliRunner().invoke(main, [*args, "--state", str(tmp_path / "examples.db")], prog_name="rayon")

    assert rayon("init", "--cluster", str(examples / "cluster.yaml")).exit_code == 0
    assert rayon("submit", str(examples)).exit_code == 0
    assert rayon("advance", "--to", "+7h").exit_code == 0
    result = rayon("capacity", "--at", "+5h", "--set", "{vcores: 200}", "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert "spark-etl-nightly" in report["affected"]
    assert "spark-etl-nightly" not in [d["reservation"] for d in report["dropped"]]
    lost = [d["instance"] for d in report["dropped_instances"] if d["reservation"] == "spark-etl-nightly"]
    kept_instances = {a.get("instance", 0) for m in report["moved"] if m["reservation"] == "spark-etl-nightly"
                      for a in m["allocations"]}
    assert lost and not set(lost) & kept_instances and len(kept_instances) > len(lost)  # the series goes on
    table = rayon("capacity", "--at", "+5h", "--set", "{vcores: 200}", "--dry-run").stdout
    assert f"spark-etl-nightly#{lost[0]}" in table and "instance of series dropped alone" in table
