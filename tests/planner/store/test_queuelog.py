"""The queue log (planner/store/queuelog.py): runs of equal figures per queue, a step recorded once, retention."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from planner.store.errors import StoreError
from planner.store.facade import Store
from planner.store.queuelog import FOLLOWER, QueueFigures, QueueLog, Run
from tests.planner.support import cluster_text, instant


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "plan.db") as opened:
        opened.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
        yield opened


def figures(vcores: int) -> dict[str, dict[str, int]]:
    return {"guaranteed": {"vcores": vcores}, "planned": {"vcores": vcores}}


def step(log: QueueLog, at: int, **queues: int) -> int:
    return log.record(FOLLOWER, instant(at), instant(at + 1),
                      [QueueFigures(f"root.plan.{name}", figures(v), "reservation", name, "alice")
                       for name, v in queues.items()])


def test_equal_steps_stretch_one_row_and_a_change_starts_another(store: Store) -> None:
    log = QueueLog(store.engine)
    assert [step(log, s, a=2) for s in range(5)] == [1, 0, 0, 0, 0]
    assert step(log, 5, a=3) == 1
    runs = log.read(instant(0), instant(10))
    assert [(r.start, r.end, r.figures["guaranteed"]["vcores"]) for r in runs] == [
        (instant(0), instant(5), 2), (instant(5), instant(6), 3)]
    assert runs[0].user == "alice" and runs[0].reservation == "a" and runs[0].kind == "reservation"


def test_a_step_recorded_again_is_left_as_it_was_and_a_gap_starts_a_new_row(store: Store) -> None:
    log = QueueLog(store.engine)
    step(log, 0, a=2)
    assert step(log, 0, a=9) == 0  # a restarted server records the step it already did: nothing changes
    step(log, 3, a=2)  # the server was down for steps 1 and 2: the gap stays one
    assert [(r.start, r.end) for r in log.read(instant(0), instant(10))] == [
        (instant(0), instant(1)), (instant(3), instant(4))]


def test_recording_does_not_move_the_plan_version(store: Store) -> None:
    before = store.meta()["plan_version"]
    step(QueueLog(store.engine), 0, a=1)
    assert store.meta()["plan_version"] == before


def test_rows_older_than_the_retention_go_per_source(store: Store) -> None:
    log = QueueLog(store.engine, keep=timedelta(minutes=10))
    log.load("simulate", [Run("simulate", "root.plan.a", instant(0), instant(2), {"allocated": {"vcores": 1}})])
    for s in range(0, 30, 2):  # a change at every other step: one row each
        step(log, s, a=s)
    kept = log.read(instant(0), instant(40), FOLLOWER)
    assert kept[0].start == instant(18)  # ended at or after 29 - 10 steps
    assert len(log.read(instant(0), instant(40), "simulate")) == 1  # another source's span is its own


def test_loading_a_queues_span_again_replaces_what_that_source_had_of_it_there(store: Store) -> None:
    log = QueueLog(store.engine)

    def run(queue: str, start: int, end: int, vcores: int) -> Run:
        return Run("simulate", queue, instant(start), instant(end), {"allocated": {"vcores": vcores}})

    log.load("simulate", [run("root.plan.a", 0, 10, 1), run("root.plan.b", 0, 10, 1)])
    log.load("simulate", [run("root.plan.a", 5, 8, 2)])  # a's [0, 10) goes; b stays
    log.load("simulate", [run("root.plan.a", 8, 12, 3)])  # a later piece of a: a's [5, 8) stays
    assert [(r.queue, r.start, r.figures["allocated"]["vcores"]) for r in log.read(instant(0), instant(20))] == [
        ("root.plan.a", instant(5), 2), ("root.plan.a", instant(8), 3), ("root.plan.b", instant(0), 1)]


def test_an_unknown_source_and_a_backward_step_are_refused(store: Store) -> None:
    log = QueueLog(store.engine)
    with pytest.raises(StoreError, match="`kueue` is not a source"):
        log.record("kueue", instant(0), instant(1), [])
    with pytest.raises(StoreError, match="ends after it starts"):
        log.record(FOLLOWER, instant(1), instant(1), [])
    assert log.read(instant(0), instant(10)) == []


def test_a_store_of_schema_version_two_gets_the_queue_log_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    with Store.open(path) as store:
        store.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
    with sqlite3.connect(path) as connection:  # the layout of schema version 2
        connection.execute("DROP TABLE rayon_queue_log")
        connection.execute("UPDATE rayon_meta SET value = '2' WHERE key = 'schema_version'")
    with Store.open(path) as store:
        step(QueueLog(store.engine), 0, a=1)
        assert len(QueueLog(store.engine).read(instant(0), instant(1))) == 1
        assert store.meta()["schema_version"] == "3"
