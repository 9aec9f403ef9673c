"""One worker decides for all (planner/store/forward.py): another process's submissions are decided and committed
by the decider, its errors come back as they were raised, and when the decider goes a worker decides itself and
takes its place."""

from __future__ import annotations

import asyncio
import multiprocessing
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any as AnyType

import pytest
import uvloop

from planner.store.errors import StoreError
from planner.store.facade import Store
from planner.store.forward import KEY, LOCK, SOCKET, Desk, Forwarder, LoopForwarder, SharedDecider, make_folder
from rdl import parse_text
from rdl.errors import RayonError
from tests.planner.support import cluster_text, pinned

CLUSTER = cluster_text({"vcores": 8}, steps=60)


def worker(path: str, folder: str, asked: AnyType, told: AnyType) -> None:
    """Another worker process: submits what it is asked (name, start, bundles, owner), says what it got back and
    whether it decides for itself, until asked for nothing."""
    with Store.open(path) as store:
        store.share_decisions(Path(folder))
        while (wanted := asked.get(timeout=60)) is not None:
            answers = []
            for name, start, bundles, owner in wanted:
                try:
                    decision = store.submit(parse_text(pinned(name, start, 10, bundles))[0], "gree", actor=owner,
                                            owner=owner)
                    answers.append((name, decision.accepted, decision.reason.code if decision.reason else None))
                except StoreError as error:
                    answers.append((name, None, error.code))
            assert store._shared is not None
            told.put((answers, store._shared.deciding, store.known_meta()))


def _log(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT reservation, accepted FROM rayon_log WHERE action = 'submit' "
                                  "ORDER BY id").fetchall()


def test_the_decider_decides_another_worker_s_batches_and_a_worker_takes_over_when_it_goes(tmp_path: Path) -> None:
    path, folder = tmp_path / "plan.db", tmp_path / "workers"
    folder.mkdir()
    make_folder(folder)
    decided: list[int] = []
    decider = Store.open(path)
    decider.init(CLUSTER)
    decider.count_batches(decided.append)
    decider.share_decisions(folder)
    assert decider._shared is not None and decider._shared.deciding
    context = multiprocessing.get_context("spawn")
    asked, told = context.Queue(), context.Queue()
    other = context.Process(target=worker, args=(str(path), str(folder), asked, told))
    other.start()
    try:
        decider.submit(parse_text(pinned("mine", 0, 10, 4))[0], "gree", actor="alice", owner="alice")
        asked.put([("theirs", 0, 4, "bob"), ("too-big", 0, 1, "bob"), ("mine", 20, 1, "bob")])
        answers, deciding, meta = told.get(timeout=60)
        # 4 + 4 fill the 8 vcores: the third asks for one more in the same steps; `mine` is alice's name
        assert answers == [("theirs", True, None), ("too-big", False, "capacity"), ("mine", None, "forbidden")]
        assert not deciding and sum(decided) == 1 + 3  # the decider's own batch and the forwarded one
        assert meta == decider.known_meta()  # the worker learnt the plan it was decided on
        decider.close()  # the decider goes: the worker decides itself, and decides for all from now on
        asked.put([("later", 30, 8, "bob")])
        answers, deciding, _ = told.get(timeout=60)
        assert answers == [("later", True, None)] and deciding
        assert sum(decided) == 4
        asked.put(None)
        other.join(60)
        assert other.exitcode == 0
    finally:
        if other.is_alive():
            other.kill()
        decider.close()
    assert _log(path) == [("mine", 1), ("theirs", 1), ("too-big", 0), ("later", 1)]


class Unpicklable(Exception):
    """An error holding what pickle cannot carry (a lock)."""

    def __init__(self) -> None:
        super().__init__("holds a lock")
        self.lock = threading.Lock()


def test_errors_cross_to_the_worker_as_raised_and_one_that_cannot_is_said_as_an_internal_error(
        tmp_path: Path) -> None:
    make_folder(tmp_path)
    refused = StoreError("forbidden", "not yours", "choose another")

    def decide(tickets: list[AnyType]) -> tuple[list[AnyType], dict[str, str]]:
        return [refused, Unpicklable(), "decided"], {"plan_id": "p"}

    desk = Desk(tmp_path, decide)
    try:
        answered = Forwarder(tmp_path).forward(["a", "b", "c"])
    finally:
        desk.close()
    assert answered is not None
    (crossed, lost, decided), meta = answered
    assert isinstance(crossed, StoreError) and (crossed.code, crossed.message, crossed.hint) == (
        "forbidden", "not yours", "choose another")
    assert isinstance(lost, RayonError) and lost.code == "internal" and lost.message == "Unpicklable: holds a lock"
    assert decided == "decided" and meta == {"plan_id": "p"}


def test_a_batch_the_decider_took_and_never_answered_is_an_error_and_is_not_decided_again(tmp_path: Path) -> None:
    make_folder(tmp_path)
    forwarder = Forwarder(tmp_path)
    with Listener(str(tmp_path / SOCKET), family="AF_UNIX", authkey=(tmp_path / KEY).read_bytes()) as crashing:

        def takes_it_and_dies() -> None:
            with crashing.accept() as connection:
                connection.recv()

        decider = threading.Thread(target=takes_it_and_dies)
        decider.start()
        with pytest.raises(StoreError, match="may or may not be committed") as raised:
            forwarder.forward(["a ticket"])
        decider.join(30)
    assert raised.value.code == "database"
    assert forwarder.forward(["a ticket"]) is None  # nobody listens now: this worker decides it itself


def test_a_caller_without_the_key_is_refused_and_the_decider_goes_on_answering(tmp_path: Path) -> None:
    make_folder(tmp_path)
    desk = Desk(tmp_path, lambda tickets: ([t.upper() for t in tickets], None))
    try:
        with pytest.raises(AuthenticationError):
            Client(str(tmp_path / SOCKET), family="AF_UNIX", authkey=b"not the key")
        got: list[object] = []  # asked in a thread: a decider that stopped accepting would leave it waiting
        asking = threading.Thread(target=lambda: got.append(Forwarder(tmp_path).forward(["a", "b"])), daemon=True)
        asking.start()
        asking.join(30)
        assert got == [(["A", "B"], None)]
    finally:
        desk.close()


def test_batches_waiting_together_are_decided_as_one_and_each_worker_gets_its_own_outcomes(tmp_path: Path) -> None:
    make_folder(tmp_path)
    calls: list[list[str]] = []
    first_taken, release = threading.Event(), threading.Event()

    def decide(tickets: list[AnyType]) -> tuple[list[AnyType], dict[str, str]]:
        calls.append(list(tickets))
        if len(calls) == 1:  # hold the first batch until two others are waiting
            first_taken.set()
            release.wait(30)
        return [t.upper() for t in tickets], {"batch": str(len(calls))}

    desk = Desk(tmp_path, decide)
    got: dict[str, object] = {}

    def ask(tickets: list[str]) -> threading.Thread:
        def run() -> None:
            got[tickets[0]] = Forwarder(tmp_path).forward(tickets)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    try:
        asking = [ask(["a"])]
        assert first_taken.wait(30)
        asking += [ask(["b", "c"]), ask(["d"])]
        deadline = time.monotonic() + 60
        # Both later batches sent and waiting on their connections (the desk reads none while it decides the first),
        # however long a busy machine takes to send them: then they are read together.
        while sum(waiting(connection) for connection in list(desk._connections)) < 2:
            assert time.monotonic() < deadline, "the later batches never reached the desk"
            time.sleep(0.01)
        release.set()
        for thread in asking:
            thread.join(30)
    finally:
        desk.close()
    assert len(calls) == 2 and calls[0] == ["a"] and sorted(calls[1]) == ["b", "c", "d"]
    assert got == {"a": (["A"], {"batch": "1"}), "b": (["B", "C"], {"batch": "2"}), "d": (["D"], {"batch": "2"})}


def waiting(connection: AnyType) -> bool:
    """Whether a batch waits unread on this connection of the desk (one closed meanwhile holds none)."""
    try:
        return bool(connection.poll(0))
    except (OSError, EOFError):
        return False


def test_a_process_standing_by_becomes_the_decider_once_the_one_deciding_lets_go(tmp_path: Path) -> None:
    path, folder = tmp_path / "plan.db", tmp_path / "workers"
    folder.mkdir()
    make_folder(folder)
    holder = Store.open(path)
    holder.init(CLUSTER)
    holder.share_decisions(folder)
    context = multiprocessing.get_context("spawn")
    told = context.Queue()
    try:
        assert holder._shared is not None and holder._shared.deciding
        waiting = context.Process(target=stand_by, args=(str(path), str(folder), told))
        waiting.start()
        assert told.get(timeout=60) == "waiting"
        time.sleep(0.3)
        assert told.empty()  # it cannot decide while `holder` does
        holder.close()  # lets the lock go
        assert told.get(timeout=60) == "deciding"
        waiting.join(60)
        assert waiting.exitcode == 0
    finally:
        holder.close()


def stand_by(path: str, folder: str, told: AnyType) -> None:
    """A deciding process started while another decides: says it waits, then that it decides once it does."""
    with Store.open(path) as store:
        store.share_decisions(Path(folder))
        assert store._shared is not None and not store._shared.deciding
        told.put("waiting")
        assert store.wait_to_decide(threading.Event(), every=0.05)
        told.put("deciding")


def test_from_an_event_loop_the_submissions_of_one_turn_go_as_one_batch_and_none_without_a_decider(
        tmp_path: Path) -> None:
    make_folder(tmp_path)
    calls: list[list[str]] = []

    def decide(tickets: list[AnyType]) -> tuple[list[AnyType], dict[str, str]]:
        calls.append(list(tickets))
        return [t.upper() for t in tickets], {"plan_id": "p"}

    async def three(forwarder: LoopForwarder) -> list[AnyType]:
        return list(await asyncio.gather(*(forwarder.forward(ticket) for ticket in ("a", "b", "c"))))

    desk = Desk(tmp_path, decide)
    forwarder = LoopForwarder(tmp_path)
    try:
        answers = asyncio.run(three(forwarder))
        assert calls == [["a", "b", "c"]]
        assert answers == [("A", {"plan_id": "p"}), ("B", {"plan_id": "p"}), ("C", {"plan_id": "p"})]
    finally:
        desk.close()
    assert asyncio.run(three(forwarder)) == [None, None, None]  # nobody listens: each is decided where it is
    forwarder.close()


@pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_an_answer_larger_than_the_socket_s_buffer_is_read_whole_on_the_event_loop(tmp_path: Path,
                                                                                    run: AnyType) -> None:
    """uvloop makes the connection non-blocking once the loop watches it: an answer arriving in pieces is read as
    they come, not taken for a lost decider (issue #29)."""
    make_folder(tmp_path)
    big = "x" * 3_000_000

    def decide(tickets: list[AnyType]) -> tuple[list[AnyType], dict[str, str]]:
        return [big + t for t in tickets], {"plan_id": "p"}

    async def several(forwarder: LoopForwarder) -> list[AnyType]:
        return [await forwarder.forward(ticket * 1_000_000) for ticket in ("a", "b", "c")]

    desk = Desk(tmp_path, decide)
    forwarder = LoopForwarder(tmp_path)
    try:
        answers = run(several(forwarder))
    finally:
        forwarder.close()
        desk.close()
    assert [answer[0] == big + ticket * 1_000_000 for answer, ticket in zip(answers, "abc", strict=True)] == [True] * 3


HOLD_LOCK = ("import fcntl, os, sys, time; d = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
             "fcntl.flock(d, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)")


def test_a_worker_whose_folder_was_swept_decides_for_itself_instead_of_failing(tmp_path: Path) -> None:
    """Chaos (#29): a worker outliving its killed server, whose folder the next server swept, answered 500
    (FileNotFoundError on the decider's lock) where it can decide itself, as without a decider."""
    folder = tmp_path / "decider"
    folder.mkdir()
    make_folder(folder)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder / LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        shared = SharedDecider(folder, lambda tickets: pytest.fail("nothing is decided here"))
        assert not shared.deciding
        shutil.rmtree(folder)
        assert shared.forward(["a ticket"]) is None  # no decider answers: this process decides it itself
        assert not shared.deciding
        shared.close()
    finally:
        holder.kill()
        holder.wait()
