"""The durable plan store: decisions survive a reopen, rejections and dry runs leave the plan as it was,
writes are all-or-nothing, and concurrent submitters never double-book capacity.

Every test runs on a SQLite file under tmp_path. Those taking the `store` fixture run on PostgreSQL too
when RAYON_TEST_POSTGRES_URL names a server (`postgresql+psycopg://user@host:port/db`; the tests drop
and recreate the store's tables there) and the psycopg driver is installed.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any as AnyType

import numpy as np
import pytest

from planner.admission import Planner
from planner.agents.registry import get_agent
from planner.core.check import check_plan
from planner.store import facade as store_module
from planner.store.facade import Store, StoreError, default_state_path
from planner.store.schema import SCHEMA_VERSION
from rdl import parse_cluster, parse_text
from tests.planner.support import at, cluster_text, instant, one, pinned

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
POSTGRES_ENV = "RAYON_TEST_POSTGRES_URL"
SMALL = cluster_text({"vcores": 8}, steps=60)


def _postgres_url() -> str:
    """The PostgreSQL test server's URL, or a skip saying what is missing."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"PostgreSQL store tests need {POSTGRES_ENV}=postgresql+psycopg://USER@HOST:PORT/DB")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL store tests need the psycopg driver: pip install 'psycopg[binary]'")
    try:
        Store.open(url).close()
    except StoreError as exc:
        pytest.skip(f"no PostgreSQL server reachable at {POSTGRES_ENV}: {exc}")
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a SQLite file, or the PostgreSQL test database."""
    return str(tmp_path / "state" / "plan.db") if request.param == "sqlite" else _postgres_url()


@pytest.fixture
def store(target: str) -> Iterator[Store]:
    """A store initialised with an 8-vcore, 60-minute cluster."""
    opened = Store.open(target)
    opened.init(SMALL, "small.yaml", force=True)
    yield opened
    opened.close()


def stored_violations(store: Store) -> list[str]:
    """What the independent checker finds wrong with the plan as stored."""
    cluster = store.cluster()
    records = store.list()
    decisions = [r.decision().to_json(store.clock()) for r in records]
    return check_plan(cluster, [r.reservation() for r in records], decisions,
                      submitted={r.name: r.submitted for r in records}, rolled_to=store.now())


def meta_value(path: Path, key: str) -> str:
    with sqlite3.connect(path) as connection:
        return str(connection.execute("SELECT value FROM rayon_meta WHERE key = ?", (key,)).fetchone()[0])


# -- round trip --------------------------------------------------------------------------------------


def test_reopened_store_rebuilds_exactly_the_in_memory_plan(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    cluster_yaml = (EXAMPLES / "cluster.yaml").read_text()
    reservations = [r for f in sorted(EXAMPLES.glob("*.rdl")) for r in parse_text(f.read_text(), str(f))]
    memory = Planner(parse_cluster(cluster_yaml))
    with Store.open(path) as store:
        store.init(cluster_yaml, "examples/cluster.yaml")
        answers = [memory.submit(reservation) for reservation in reservations]
        assert [store.submit(reservation) for reservation in reservations] == answers
        assert [e.decision for e in store.log()] == [a.to_json(memory.plan.clock) for a in answers]
    with Store.open(path) as reopened:
        plan = reopened.load_plan()
        assert np.array_equal(plan.used, memory.plan.used)
        assert plan.accepted.keys() == memory.plan.accepted.keys()
        for name, accepted in memory.plan.accepted.items():
            assert plan.accepted[name].allocations == accepted.allocations
            assert plan.accepted[name].reservation == accepted.reservation
        assert any(not r.decision().accepted for r in reopened.list())  # the examples include a rejection
        assert stored_violations(reopened) == []


def test_cluster_file_text_is_kept_as_written(store: Store) -> None:
    assert store.cluster() == parse_cluster(SMALL)
    assert store.now() == instant(0)


# -- rejections, dry runs, cancellation ---------------------------------------------------------------------


def test_rejected_submission_is_recorded_and_leaves_the_plan_unchanged(store: Store) -> None:
    assert store.submit(one(pinned("full", 0, 30, 8))).accepted
    before = store.load_plan().used.tobytes()
    decision = store.submit(one(pinned("extra", 10, 10, 1)))
    assert not decision.accepted and decision.reason is not None and decision.reason.code == "capacity"
    assert store.load_plan().used.tobytes() == before
    record = store.get("extra")
    assert record.state == "rejected" and record.reason == decision.reason and record.allocations == ()
    last = store.log(1)[0]
    assert (last.action, last.reservation, last.accepted, last.reason_code) == ("submit", "extra", False, "capacity")


def test_dry_run_writes_nothing_not_even_the_log(store: Store) -> None:
    store.submit(one(pinned("first", 0, 10, 4)))
    log, version = store.log(), store.load_plan().used.tobytes()
    decision = store.submit(one(pinned("trial", 0, 10, 4)), dry_run=True)
    assert decision.accepted and decision.allocations
    assert store.log() == log and store.load_plan().used.tobytes() == version
    assert [r.name for r in store.list()] == ["first"]


def test_cancel_frees_capacity_for_the_next_submission(store: Store) -> None:
    assert store.submit(one(pinned("big", 0, 30, 8))).accepted
    assert not store.submit(one(pinned("late", 0, 30, 8))).accepted
    record = store.cancel("big", actor="admin")
    assert record.state == "cancelled" and record.allocations  # the freed leases stay on record
    assert not store.load_plan().used.any()
    assert store.submit(one(pinned("late", 0, 30, 8))).accepted  # a rejected name may be submitted again
    assert [(e.action, e.reservation) for e in store.log(2)] == [("cancel", "big"), ("submit", "late")]
    assert store.log(2)[0].actor == "admin"
    assert stored_violations(store) == []


def test_cancel_of_an_unknown_or_inactive_reservation_is_an_error(store: Store) -> None:
    store.submit(one(pinned("big", 0, 30, 8)))
    with pytest.raises(StoreError, match="did you mean `big`") as unknown:
        store.cancel("bgi")
    assert unknown.value.code == "unknown"
    store.cancel("big")
    with pytest.raises(StoreError, match="is cancelled") as again:
        store.cancel("big")
    assert again.value.code == "state"


def test_a_name_already_accepted_is_rejected_as_invalid_and_its_row_kept(store: Store) -> None:
    store.submit(one(pinned("twice", 0, 10, 2)))
    decision = store.submit(one(pinned("twice", 20, 10, 2)))
    assert not decision.accepted and decision.reason is not None and decision.reason.code == "invalid"
    assert store.get("twice").state == "accepted" and store.get("twice").allocations[0].start == 0
    assert [e.accepted for e in store.log()] == [True, False]


# -- reading -----------------------------------------------------------------------------------------------


def test_list_filters_by_user_state_and_time(store: Store) -> None:
    store.submit(one(pinned("early", 0, 10, 4).replace("reservation early", "reservation early user=ann")))
    store.submit(one(pinned("late", 40, 10, 4).replace("reservation late", "reservation late user=bob")))
    store.submit(one(pinned("huge", 0, 10, 9)))
    assert [r.name for r in store.list(user="ann")] == ["early"]
    assert [r.name for r in store.list(state="rejected")] == ["huge"]
    assert [r.name for r in store.list(start=instant(5), end=instant(20))] == ["early"]
    assert [r.name for r in store.list(start=instant(10))] == ["late"]
    assert [r.name for r in store.list(end=instant(41))] == ["early", "late"]
    with pytest.raises(StoreError, match="did you mean `rejected`"):
        store.list(state="rejcted")


def test_log_is_oldest_first_and_limit_keeps_the_latest(store: Store) -> None:
    for index in range(4):
        store.submit(one(pinned(f"r{index}", index * 10, 5, 1)), actor="ci")
    entries = store.log()
    assert [e.reservation for e in entries] == ["r0", "r1", "r2", "r3"]
    assert [e.reservation for e in store.log(limit=2)] == ["r2", "r3"]
    assert entries[0].decision is not None and entries[0].decision["allocations"][0]["start"] == at(0)
    assert entries[0].request is not None and "reservation r0" in entries[0].request


def test_a_second_store_on_the_same_plan_sees_the_first_ones_decisions(target: str, store: Store) -> None:
    with Store.open(target) as other:
        assert other.load_plan().accepted == {}
        assert store.submit(one(pinned("mine", 0, 30, 8))).accepted
        assert not other.submit(one(pinned("theirs", 0, 30, 8))).accepted
        store.cancel("mine")
        assert other.submit(one(pinned("theirs", 0, 30, 8))).accepted
        assert store.load_plan().used.tobytes() == other.load_plan().used.tobytes()


# -- opening, versions, crash safety ------------------------------------------------------------------------------


def test_uninitialised_store_says_how_to_initialise_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "new" / "plan.db") as store, pytest.raises(StoreError, match="no plan yet") as error:
        store.load_plan()
    assert error.value.code == "uninitialised" and "init" in str(error.value)
    assert (tmp_path / "new").is_dir()  # parent folders are created on first use


def test_opening_without_create_refuses_a_missing_file_and_makes_nothing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no plan store at") as error:
        Store.open(tmp_path / "new" / "plan.db", create=False)
    assert error.value.code == "missing" and "rayon init" in str(error.value)
    Store.open(tmp_path / "other" / "plan.db").close()  # opening alone, even with create, writes nothing yet
    assert list(tmp_path.iterdir()) == []


def test_initialising_twice_needs_force(store: Store) -> None:
    store.submit(one(pinned("kept", 0, 10, 1)))
    with pytest.raises(StoreError, match="already holds a plan") as error:
        store.init(SMALL, "small.yaml")
    assert error.value.code == "initialised" and store.get("kept")
    store.init(cluster_text({"vcores": 4}, steps=30), "smaller.yaml", force=True)
    assert store.list() == [] and store.cluster().capacity["vcores"] == 4


def test_other_schema_version_is_refused_with_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    with Store.open(path) as store:
        store.init(SMALL)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE rayon_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=f"schema version 99, but this rayon reads version {SCHEMA_VERSION}") as error:
        Store.open(path)
    assert error.value.code == "schema" and "RAYON_STATE" in str(error.value)
    with Store.open(path, check_version=False) as store:  # what `init --force` does to start over
        store.init(SMALL, force=True)
        assert store.list() == []


def test_default_state_path_follows_rayon_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAYON_STATE", str(tmp_path / "elsewhere.db"))
    assert default_state_path() == tmp_path / "elsewhere.db"
    monkeypatch.setenv("RAYON_STATE", "postgresql+psycopg://planner@db/rayon")
    assert default_state_path() == "postgresql+psycopg://planner@db/rayon"
    monkeypatch.delenv("RAYON_STATE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_path() == tmp_path / ".local" / "state" / "rayon" / "plan.db"


@pytest.mark.parametrize("url", ["postgresql+nosuchdriver://user@localhost/db", "postgresql+psycopg://user@h/db"])
def test_a_missing_driver_is_an_error_saying_what_to_install(url: str) -> None:
    if "psycopg" in url and importlib.util.find_spec("psycopg") is not None:
        pytest.skip("psycopg is installed here, so it cannot be missing")
    with pytest.raises(StoreError, match="pip install") as error:
        Store.open(url)
    assert error.value.code == "driver"


def test_a_failed_write_leaves_no_half_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plan.db"
    store = Store.open(path)
    store.init(SMALL)
    store.submit(one(pinned("before", 0, 10, 4)))
    used = store.load_plan().used.tobytes()

    def crash(*args: object) -> None:
        raise RuntimeError("power cut")

    monkeypatch.setattr(store_module.Store, "_log", staticmethod(crash))  # after the row and leases are written
    with pytest.raises(RuntimeError, match="power cut"):
        store.submit(one(pinned("lost", 20, 10, 4)))
    monkeypatch.undo()
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM rayon_reservations").fetchone() == (1,)
        assert connection.execute("SELECT count(*) FROM rayon_leases l JOIN rayon_reservations r "
                                  "ON l.reservation_id = r.id WHERE r.name = 'lost'").fetchone() == (0,)
    assert meta_value(path, "plan_version") == "1"
    assert store.load_plan().used.tobytes() == used and "lost" not in store.load_plan().accepted
    assert store.submit(one(pinned("lost", 20, 10, 4))).accepted  # the cached plan did not keep it either
    store.close()


# -- concurrency ---------------------------------------------------------------------------------------------------

WORKERS, EACH = 4, 50


def batch(worker: int) -> list[str]:
    """RDL texts of one submitter's reservations: together the workers ask for about 4x the capacity."""
    rng = random.Random(worker)
    texts = []
    for index in range(EACH):
        start = rng.randrange(0, 50)
        gang = rng.choice([1, 2, 4])
        texts.append(f"reservation w{worker}_{index} {{ window(s={at(start)}, e={at(start + 10)}, "
                     f"atom(b={{vcores: 1}}, g={gang}, h={gang * 2}, l=2m, w={gang * 4}m)) }}")
    return texts


def submit_batch(target: str, worker: int) -> int:
    """Submit one worker's batch through its own Store; returns how many were accepted."""
    with Store.open(target) as store:
        return sum(store.submit(one(text), actor=f"worker{worker}").accepted for text in batch(worker))


def assert_consistent(target: str, accepted: int) -> None:
    with Store.open(target) as store:
        records = store.list()
        assert len(records) == WORKERS * EACH and len(store.log()) == WORKERS * EACH
        assert accepted == len(store.list(state="accepted")) == len(store.load_plan().accepted)
        assert 0 < accepted < WORKERS * EACH
        plan = store.load_plan()
        assert (plan.used <= plan.capacity).all()
        assert stored_violations(store) == []


def test_concurrent_threads_never_double_book(target: str, store: Store) -> None:
    results: list[int] = []
    threads = [threading.Thread(target=lambda w=w: results.append(submit_batch(target, w))) for w in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == WORKERS
    assert_consistent(target, sum(results))


def test_threads_sharing_one_store_never_double_book(target: str, store: Store) -> None:
    results: list[int] = []

    def work(worker: int) -> None:
        results.append(sum(store.submit(one(text)).accepted for text in batch(worker)))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_consistent(target, sum(results))


def test_submissions_arriving_together_commit_together_each_on_the_plan_the_earlier_left(store: Store) -> None:
    gate = _Gated()
    answers: dict[str, AnyType] = {}
    first = threading.Thread(target=lambda: answers.update(first=store.submit(one(pinned("first", 0, 10, 1)), gate)))
    first.start()
    assert gate.searching.wait(30)  # the first batch is deciding: the next ones queue behind it
    rest = [threading.Thread(target=lambda n=n: answers.update({f"q{n}": store.submit(one(pinned(f"q{n}", 0, 10, 2)))}))
            for n in range(5)]
    for thread in rest:
        thread.start()
    while sum(store._submissions.sizes.values()) < 1 or len(store._submissions._waiting) < 5:
        threading.Event().wait(0.01)
    gate.gate.set()
    for thread in [first, *rest]:
        thread.join(30)
    assert store._submissions.sizes == {1: 1, 5: 1}  # one batch of one, then the five that queued: one commit
    assert sum(answers[f"q{n}"].accepted for n in range(5)) == 3  # 1 + 3 x 2 of 8 vcores: the other two do not fit
    assert stored_violations(store) == []
    assert len([e for e in store.log() if e.action == "submit"]) == 6


def test_concurrent_processes_never_double_book(target: str, store: Store) -> None:
    with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
        results = pool.starmap(submit_batch, [(target, w) for w in range(WORKERS)])
    assert_consistent(target, sum(results))


class _Gated:
    """An agent that waits at a gate before its first placement: a search that takes as long as the test says."""

    def __init__(self) -> None:
        self.name = "gree"
        self.searching, self.gate = threading.Event(), threading.Event()
        self.inner = get_agent("gree")

    def place(self, plan: AnyType, reservation: AnyType, submitted: AnyType) -> AnyType:
        self.searching.set()
        assert self.gate.wait(30)
        return self.inner.place(plan, reservation, submitted)


def test_a_long_search_stalls_no_other_writer_and_commits_on_the_plan_as_it_then_is(target: str,
                                                                                    store: Store) -> None:
    slow = _Gated()
    answers: dict[str, AnyType] = {}
    thread = threading.Thread(target=lambda: answers.update(slow=store.submit(one(pinned("slow", 0, 10, 4)), slow)))
    thread.start()
    assert slow.searching.wait(30)
    with Store.open(target) as other:  # another writer (a server's, a command's) on the same plan
        quick = other.submit(one(pinned("quick", 0, 10, 6)))  # answered while the slow search is still under way
    assert quick.accepted and thread.is_alive()
    slow.gate.set()
    thread.join(30)
    assert not answers["slow"].accepted  # decided again on the plan with `quick`: 4 + 6 > 8 vcores
    assert [r.name for r in store.list(state="accepted")] == ["quick"]
    assert stored_violations(store) == []


def test_a_name_another_user_holds_is_refused_inside_the_write_and_nothing_is_written(store: Store) -> None:
    bobs = one(pinned("shared", 0, 10, 99).replace("reservation shared", "reservation shared user=bob"))
    assert not store.submit(bobs, actor="bob").accepted  # rejected, but the name is bob's
    logged = len(store.log())
    alices = one(pinned("shared", 0, 10, 2).replace("reservation shared", "reservation shared user=alice"))
    with pytest.raises(StoreError, match="belongs to another user") as error:
        store.submit(alices, actor="alice", owner="alice")
    assert error.value.code == "forbidden" and len(store.log()) == logged
    assert store.get("shared").user == "bob" and store.get("shared").state == "rejected"
    assert store.submit(one(pinned("mine", 0, 10, 2)), owner="alice").accepted  # a free name is anyone's
