"""The store's past: ended reservations move to the history a horizon later, the retention deletes what is older,
an older store is migrated, and the history reads back what it keeps."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from planner.store.facade import Store, StoreError
from planner.store.schema import SCHEMA_VERSION
from tests.planner.store.consistency import archived_instances, replay_problems, store_problems
from tests.planner.store.test_lifecycle import violations
from tests.planner.support import at, cluster_text, instant, one, pinned

HORIZON = 60  # steps (minutes)
CLUSTER = cluster_text({"vcores": 8}, steps=HORIZON)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "plan.db"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    with Store.open(path) as opened:
        opened.init(CLUSTER, "small.yaml")
        yield opened


def counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as connection:
        return {table: connection.execute(f"SELECT count(*) FROM rayon_{table}").fetchone()[0]
                for table in ("reservations", "leases", "history", "log")}


def test_an_ended_reservation_moves_to_the_history_a_horizon_after_it_ended(store: Store, path: Path) -> None:
    store.submit(one(pinned("early", 0, 10, 2)))
    store.submit(one(pinned("huge", 0, 10, 99)))  # rejected
    store.submit(one(pinned("late", 40, 10, 2)))
    store.advance(instant(20))
    assert {r.name: r.state for r in store.list()} == {"early": "expired", "huge": "rejected", "late": "accepted"}
    report = store.advance(instant(HORIZON + 10))  # early ended at 10 and both were submitted at 0: a horizon ago
    assert report.archived == 2 and report.expired == ("late",)
    assert {r.name for r in store.list()} == {"late"}
    assert counts(path)["history"] == 2 and counts(path)["leases"] == 1  # late's one lease; early's moved along
    early = store.get("early")  # read from the history, with the leases it held
    assert early.state == "expired" and [(a.start, a.end, a.bundles) for a in early.allocations] == [(0, 10, 2)]
    page, total = store.history(state="rejected")
    assert total == 1 and page[0].record.name == "huge" and page[0].archived == instant(HORIZON + 10)
    assert not violations(store)
    store.advance(instant(2 * HORIZON + 50))
    assert store.list() == [] and counts(path)["reservations"] == 0 and counts(path)["leases"] == 0


def test_a_moved_name_can_be_submitted_again_and_changing_it_says_where_it_went(store: Store) -> None:
    store.submit(one(pinned("job", 0, 10, 2)))
    store.cancel("job")
    store.advance(instant(HORIZON + 10))
    with pytest.raises(StoreError, match="moved to the history") as error:
        store.cancel("job")
    assert error.value.code == "state" and "rayon history job" in str(error.value)
    later = pinned("job", HORIZON + 20, 10, 2)
    assert store.submit(one(later)).accepted
    assert store.get("job").state == "accepted" and store.history(name="job")[0][0].record.state == "cancelled"


def test_the_retention_deletes_log_and_history_rows_older_than_it(store: Store, path: Path) -> None:
    assert store.retention() == "90d"
    with pytest.raises(StoreError, match="not a duration"):
        store.set_retention("soon")
    with pytest.raises(StoreError, match="longer than nothing"):
        store.set_retention("0s")
    assert store.retention() == "90d"  # a bad one changed nothing
    store.set_retention("2h")
    store.submit(one(pinned("a", 0, 10, 2)))
    store.advance(instant(HORIZON + 10))  # a moves to the history at +70 min
    logged = counts(path)["log"]
    assert logged >= 3 and counts(path)["history"] == 1
    report = store.advance(instant(HORIZON + 10 + 121))  # two hours on: everything up to then is past the retention
    assert report.pruned == logged + 1 and counts(path)["history"] == 0  # the log rows and a's history row
    assert [e.action for e in store.log()] == ["advance"]  # this move's own row stays
    store.set_retention("forever")
    store.advance(instant(10 * HORIZON))
    assert len(store.log()) == 2


def test_an_older_store_is_migrated_when_opened(path: Path) -> None:
    with Store.open(path) as store:
        store.init(CLUSTER, "small.yaml")
        store.submit(one(pinned("kept", 0, 10, 2)))
    with sqlite3.connect(path) as connection:  # the layout of schema version 1
        connection.execute("DROP TABLE rayon_history")
        connection.execute("DROP INDEX ix_rayon_log_clock")
        connection.execute("DROP INDEX rayon_reservations_submitted")
        connection.execute("ALTER TABLE rayon_log DROP COLUMN clock")
        connection.execute("DELETE FROM rayon_meta WHERE key = 'retention'")
        connection.execute("UPDATE rayon_meta SET value = '1' WHERE key = 'schema_version'")
    with Store.open(path) as store:
        assert store.get("kept").state == "accepted" and store.retention() == "90d"
        assert store.log()[0].clock is None  # written before the plan's clock was logged
        store.advance(instant(HORIZON + 20))
        assert store.history(name="kept")[1] == 1
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT value FROM rayon_meta WHERE key = 'schema_version'").fetchone() == \
            (str(SCHEMA_VERSION),)


def test_rayon_history_and_retention_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    state = str(tmp_path / "plan.db")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "a.rdl").write_text(pinned("a", 0, 10, 2))

    def rayon(*args: str) -> str:
        result = runner.invoke(main, [*args, "--state", state])
        assert result.exit_code == 0, result.output
        return result.output

    rayon("init", "--cluster", str(tmp_path / "cluster.yaml"))
    assert "nothing in the history" in rayon("history") and "none of 0" not in rayon("history")
    rayon("submit", str(tmp_path / "a.rdl"))
    rayon("advance", "--to", at(HORIZON + 15))
    table = rayon("history")
    assert "a" in table and "expired" in table and at(HORIZON + 15) in table
    assert json.loads(rayon("history", "a", "--json"))["items"][0]["reservation"] == "a"
    assert "expired" in rayon("show", "a")
    assert rayon("retention").strip().startswith("90d")
    assert "30d" in rayon("retention", "30d")
    bad = runner.invoke(main, ["retention", "ever", "--state", state])
    assert bad.exit_code != 0 and "not a duration" in bad.output
    bare = runner.invoke(main, ["retention", "30", "--state", state])  # a retention is days, not minutes
    assert bare.exit_code == 2 and "did you mean `30d`?" in bare.output, bare.output


def test_the_retention_keeps_the_log_rows_a_live_series_still_needs(store: Store, path: Path) -> None:
    """Issue #29: retention deleted the submit rows of live series, so the log no longer replayed to the stored
    plan (105,132 problems after `advance --to +400d`)."""
    store.set_retention("2h")
    store.submit(one("reservation daily every=30m { window(e=+20m, atom(b={vcores: 1}, w=5m)) }"))
    store.submit(one(pinned("once", 0, 10, 2)))
    for hour in range(1, 8):
        store.advance(instant(60 * hour))
    kept = [e for e in store.log() if e.reservation == "daily"]
    assert [e.action for e in kept][:1] == ["submit"]  # its submission, five hours past the retention, is kept
    assert not [e for e in store.log() if e.reservation == "once"]  # what ended and left goes as before
    records = {r.name: r for r in store.list()}
    assert replay_problems(store.log(), records, store.clock(), archived_instances(store, records)) == []


SERIES = "reservation s every=10m { window(e=+5m, atom(b={vcores: 1}, w=2m)) }"


def lease_rows(path: Path, name: str) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT count(*) FROM rayon_leases l JOIN rayon_reservations r ON "
                                  "r.id = l.reservation_id WHERE r.name = ?", (name,)).fetchone()[0]


def test_a_series_past_instances_move_to_the_history_a_horizon_after_they_ended(store: Store, path: Path) -> None:
    """Issue #29 item 4: the instances of a live series piled up in the live lease table for ever."""
    store.submit(one(SERIES))
    held = []
    for hour in range(1, 7):
        store.advance(instant(60 * hour + 30))
        held.append(lease_rows(path, "s"))
        ends: dict[int, int] = {}
        for a in store.get("s").allocations:
            ends[a.instance] = max(ends.get(a.instance, 0), a.end)
        assert min(ends.values()) > 60 * hour + 30 - HORIZON  # what ended a horizon ago has left the live tables
    assert held[-1] == held[1]  # the live rows stay the size of the window, however long the series goes on
    past = [item.record for item in store.history(name="s")[0]]
    assert past and {record.state for record in past} == {"accepted"}
    moved = [{a.instance for a in record.allocations} for record in past]
    log = store.log(reservation="s")
    placed = {a.get("instance", 0) for a in log[0].decision["allocations"]} | {
        entry.decision["instance"] for entry in log[1:] if entry.accepted and "instance" in entry.decision}
    live = {a.instance for a in store.get("s").allocations}
    assert sum(len(instances) for instances in moved) == len(set().union(*moved))  # each moved once
    assert set().union(*moved, live) == placed  # and none lost
    assert store.get("s").state == "accepted" and max(set().union(*moved)) < min(live)
    assert store_problems(path) == []  # the log replays to the live plan plus the history; the checker agrees


def test_a_fresh_store_and_the_one_that_moved_the_clock_hold_the_same_plan(store: Store, path: Path) -> None:
    store.submit(one(SERIES))
    store.advance(instant(150))
    kept = store.load_plan()  # this Store's cached plan, the past instances dropped as they were moved
    with Store.open(path) as fresh:
        rebuilt = fresh.load_plan()
    assert kept.accepted["s"].allocations == rebuilt.accepted["s"].allocations
    assert (kept.used == rebuilt.used).all()


def test_the_retention_keeps_a_live_series_past_instances_and_the_replay_checks_them(store: Store,
                                                                                    path: Path) -> None:
    store.set_retention("1h")
    store.submit(one(SERIES))
    for hour in range(1, 6):
        store.advance(instant(60 * hour))
    records = {r.name: r for r in store.list()}
    archived = archived_instances(store, records)
    assert len(archived["s"]) > 12  # the first hour's instances, four hours past the retention, are kept
    assert replay_problems(store.log(), records, store.clock(), archived) == []
    assert replay_problems(store.log(), records, store.clock())  # without them the log gives the series more
    with sqlite3.connect(path) as connection:  # a past instance lost from the history is found
        connection.execute("DELETE FROM rayon_history WHERE id = (SELECT min(id) FROM rayon_history)")
    assert replay_problems(store.log(), records, store.clock(), archived_instances(store, records))
    store.cancel("s")
    store.advance(instant(60 * 9))  # ended, a horizon later it moves whole, and the retention takes the rest
    assert store.history(name="s", state="accepted")[1] == 0 and store.history(name="s")[1] == 1
