"""A batch of submissions stored in one go (`Rows.submissions`) leaves the very rows that storing them one at a time
does: rejected names replaced, an accepted name's clash only logged, a name twice in one batch, plan versions. And a
batch decided on the cached plan without a read is decided again when another store wrote meanwhile."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from planner.store import facade
from planner.store.facade import Store, _Ticket
from rdl import parse_text
from tests.planner.support import cluster_text, pinned

CLUSTER = cluster_text({"vcores": 8}, steps=60)
FIRST = [pinned("kept", 0, 10, 4), pinned("refused", 0, 10, 6)]  # 4 + 6 > 8: `refused` is rejected
# Then: `refused` again, now fitting (its rejected row is replaced); `kept` again (accepted: only logged);
# `twice` in the same batch two times (the second sees the first's accepted row); and two plain ones.
SECOND = [pinned("refused", 20, 10, 6), pinned("kept", 40, 10, 1), pinned("twice", 40, 5, 2),
          pinned("twice", 50, 5, 2), pinned("plain", 30, 5, 1), pinned("big", 0, 60, 9)]


def _tickets(texts: list[str]) -> list[_Ticket]:
    return [_Ticket(parse_text(text)[0], "gree", "tester", None, False, False) for text in texts]


def _tables(path: Path) -> tuple[list[tuple[object, ...]], ...]:
    with sqlite3.connect(path) as connection:
        reservations = connection.execute(
            "SELECT id, name, state, version, reason_code, rdl FROM rayon_reservations ORDER BY id").fetchall()
        leases = connection.execute("SELECT r.name, l.atom, l.instance, l.start_step, l.end_step, l.bundles, l.bundle "
                                    "FROM rayon_leases l JOIN rayon_reservations r ON r.id = l.reservation_id "
                                    "ORDER BY r.name, l.start_step").fetchall()
        log = connection.execute("SELECT action, reservation, accepted, reason_code, request FROM rayon_log "
                                 "ORDER BY id").fetchall()
        meta = connection.execute("SELECT value FROM rayon_meta WHERE key = 'plan_version'").fetchall()
    return reservations, leases, log, meta


def test_a_batch_stores_what_one_at_a_time_stores(tmp_path: Path) -> None:
    stored = {}
    for way in ("one at a time", "batched"):
        path = tmp_path / f"{way}.db"
        with Store.open(path) as store:
            store.init(CLUSTER)
            for texts in (FIRST, SECOND):
                if way == "batched":
                    answers = store._submit_batch(_tickets(texts))
                else:
                    answers = [store._submit_batch([ticket])[0] for ticket in _tickets(texts)]
                assert not any(isinstance(answer, BaseException) for answer in answers)
        stored[way] = _tables(path)
    assert stored["batched"] == stored["one at a time"]
    reservations, _, log, meta = stored["batched"]
    assert [(name, state) for _, name, state, *_ in reservations] == [
        ("kept", "accepted"), ("refused", "accepted"), ("twice", "accepted"), ("plain", "accepted"),
        ("big", "rejected")]
    assert [action for action, *_ in log] == ["submit"] * 8 and meta == [("4",)]
    assert [(name, accepted) for _, name, accepted, *_ in log][3:5] == [("kept", 0), ("twice", 1)]


def test_a_batch_decided_on_the_cached_plan_is_decided_again_when_another_store_wrote(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    with Store.open(path) as mine, Store.open(path) as other:
        mine.init(CLUSTER)
        assert mine.submit(parse_text(pinned("first", 0, 10, 2))[0]).accepted  # `mine` caches the plan
        assert mine._distrust == 0
        assert other.submit(parse_text(pinned("theirs", 20, 10, 8))[0]).accepted  # unknown to `mine`'s cache
        clash = mine.submit(parse_text(pinned("clash", 20, 10, 1))[0])
        assert not clash.accepted and clash.reason is not None and clash.reason.code == "capacity"
        assert mine._distrust == facade.DISTRUST_BATCHES  # the next batches read the plan first
        assert mine.submit(parse_text(pinned("later", 40, 10, 8))[0]).accepted
        assert mine._distrust == facade.DISTRUST_BATCHES - 1
    with Store.open(path) as reader:
        assert sorted(reader.load_plan().accepted) == ["first", "later", "theirs"]
