"""`rayon serve --workers N`: several processes on one port and one SQLite plan, counted as one server, one of
them keeping the clock and a process of their own deciding every submission; SIGTERM ends them all (Linux:
processes, sockets and locks are found through /proc)."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from planner.store.facade import Store
from planner.store.forward import ENV_FOLDER, LOCK
from tests.planner.api.support import (
    PATIENCE,
    Load,
    Server,
    clock_moves,
    descendants,
    eventually,
    exists,
    make_tokens,
    now_of,
    start,
    stop,
    stored_violations,
    submit,
    submit_shares,
)
from tests.planner.support import cluster_text

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds processes through /proc")
WORKERS = 2


def processes_of(server: Server, count: int = WORKERS + 1, other_than: int | None = None) -> list[int]:
    """The server's worker processes and its deciding process, once it has `count` of them other than `other_than`
    (multiprocessing's own helper is neither)."""
    deadline = time.monotonic() + PATIENCE
    while len(found := [pid for pid in descendants(server.process.pid)
                        if b"spawn_main" in command(pid) and pid != other_than]) < count:
        assert time.monotonic() < deadline, f"the server started {len(found)} of {count} processes"
        time.sleep(0.05)
    return found


def listens(pid: int, port: int) -> bool:
    """Whether a process holds the socket listening on `port` (the workers do; the deciding process does not)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    try:
        links = {os.readlink(entry) for entry in Path(f"/proc/{pid}/fd").iterdir()}
    except OSError:
        return False
    return any(f"socket:[{inode}]" in links for inode in inodes)


def command(pid: int) -> bytes:
    """A process's command line (empty once it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def keeper(state: Path, other_than: int | None = None) -> int:
    """The process holding the keeper's lock on the plan file, once one other than `other_than` holds it."""
    return lock_holder(state.parent / f"{state.name}.keeper", "no worker keeps the clock", other_than)


def lock_holder(lock: Path, missing: str, other_than: int | None = None) -> int:
    """The process holding `lock` (from the kernel's table of locks), once one other than `other_than` holds it;
    fails saying `missing` if none does within PATIENCE."""
    deadline = time.monotonic() + PATIENCE
    while True:
        inode = lock.stat().st_ino if lock.exists() else None
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode) and int(fields[4]) != other_than:
                return int(fields[4])
        assert time.monotonic() < deadline, missing
        time.sleep(0.05)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, Load]]:
    """A server of WORKERS processes over a SQLite plan sized for a small concurrent load."""
    load = Load.make(4, 40)
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(load.cluster, "cluster.yaml")
    tokens = make_tokens(tmp_path / "tokens.yaml", {f"u{thread}": "user" for thread in range(4)})
    server = start(state, tmp_path / "tokens.yaml", tokens, "--workers", str(WORKERS))
    try:
        yield server, load
    finally:
        if server.process.poll() is None:
            stop(server)


def test_worker_processes_share_one_sqlite_plan_without_over_committing_and_count_as_one(
        served: tuple[Server, Load]) -> None:
    server, load = served
    assert len(processes_of(server)) == WORKERS + 1
    answers = submit_shares(load, lambda _thread: server)
    assert len(answers) == 160 and 0 < sum(answers.values()) < 160
    with Store.open(server.state) as store:
        assert {r.name for r in store.list(state="accepted")} == {name for name, ok in answers.items() if ok}
    assert stored_violations(server.state) == []
    scraped = httpx.get(server.url + "/metrics").text  # whichever worker answers, it sums them all
    counted = sum(float(value) for value in re.findall(r"^rayon_decisions_total\{[^}]*\} (\S+)$", scraped, re.M))
    assert counted == 160


def test_sigterm_ends_every_worker_and_the_server_exits_0(served: tuple[Server, Load]) -> None:
    server, _ = served
    processes_of(server)
    assert_sigterm_ends_every_process(server)


def assert_sigterm_ends_every_process(server: Server) -> None:
    """SIGTERM: the server exits 0 and none of its processes (workers, decider, multiprocessing's helper) outlives
    it."""
    started = descendants(server.process.pid)
    server.process.terminate()
    assert server.process.wait(timeout=PATIENCE) == 0
    deadline = time.monotonic() + PATIENCE
    while any(exists(pid) for pid in started):
        assert time.monotonic() < deadline, "a process of the server outlived it"
        time.sleep(0.05)


def test_one_worker_keeps_the_clock_and_another_takes_over_when_it_dies(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=24 * 60), "cluster.yaml")
    queues = tmp_path / "queues.yaml"
    server = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"), "--workers",
                   str(WORKERS), "--clock", "fast:600", "--follow-to", f"yunikorn:{queues}")  # 10 minutes a second
    try:
        workers = processes_of(server)
        holder = keeper(state)
        assert holder in workers
        eventually(lambda: queues.exists() and bool(clock_moves(state)), "the keeper neither moved nor published")
        moves = clock_moves(state)  # the keeper publishes the follower's round too
        assert all(m and m["from"] != m["to"] for m in moves)  # one keeper: no second, idle move
        with Store.open(state) as store:
            before = store.now()
        os.kill(holder, signal.SIGKILL)
        keeper(state, other_than=holder)  # the other worker, or the one started in its place
        eventually(lambda: now_of(state) > before + timedelta(minutes=10), "no worker took over the clock")
    finally:
        if server.process.poll() is None:
            stop(server)


def decider_lock(worker: int) -> Path:
    """The lock the deciding process holds (in the folder the server gave its processes, planner/store/forward.py)."""
    environment = dict(entry.split(b"=", 1) for entry in Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
                       if b"=" in entry)
    return Path(environment[ENV_FOLDER.encode()].decode()) / LOCK


def test_a_process_of_its_own_decides_for_all_and_when_it_is_killed_mid_load_nothing_accepted_is_lost(
        served: tuple[Server, Load]) -> None:
    server, load = served
    processes = processes_of(server)
    lock = decider_lock(processes[0])
    decider = lock_holder(lock, "nothing decides")
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    assert decider in processes and not listens(decider, port)  # it serves no HTTP request
    assert all(listens(pid, port) for pid in processes if pid != decider)
    answers: dict[str, int | bool] = {}  # accepted or not; 503, or 0 (no answer): not known

    def run(thread: int) -> None:
        with server.client(f"u{thread}") as client:
            for name, text in load.shares[thread]:
                try:
                    answer = submit(client, text)
                except httpx.TransportError:  # in flight on the killed worker itself: no answer
                    answers[name] = 0
                    continue
                assert answer.status_code in (200, 201, 503), answer.text  # 503: the decider died deciding it
                answers[name] = answer.json()["accepted"] if answer.status_code != 503 else 503

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(len(load.shares))]
    for thread in threads:
        thread.start()
    while len(answers) < 20:
        time.sleep(0.005)
    os.kill(decider, signal.SIGKILL)
    for thread in threads:
        thread.join(60)
    assert len(answers) == 160
    assert lock_holder(lock, "no worker took over deciding", other_than=decider) != decider
    assert len(processes_of(server, other_than=decider)) == WORKERS + 1  # and a new deciding process was started
    with Store.open(server.state) as store:
        accepted = {r.name for r in store.list(state="accepted")}
    assert {name for name, ok in answers.items() if ok is True} <= accepted  # what was answered accepted is kept
    assert not accepted & {name for name, ok in answers.items() if ok is False}
    assert stored_violations(server.state) == []


def test_one_worker_with_a_deciding_process_of_its_own_serves_the_plan_and_sigterm_ends_both(tmp_path: Path) -> None:
    load = Load.make(4, 40)
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(load.cluster, "cluster.yaml")
    tokens = make_tokens(tmp_path / "tokens.yaml", {f"u{thread}": "user" for thread in range(4)})
    server = start(state, tmp_path / "tokens.yaml", tokens, "--decider", "process")
    try:
        processes = processes_of(server, 2)
        decider = lock_holder(decider_lock(processes[0]), "nothing decides")
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        (worker,) = [pid for pid in processes if pid != decider]
        assert listens(worker, port) and not listens(decider, port)
        answers = submit_shares(load, lambda _thread: server)
        assert len(answers) == 160 and 0 < sum(answers.values()) < 160
        with Store.open(state) as store:
            assert {r.name for r in store.list(state="accepted")} == {name for name, ok in answers.items() if ok}
        assert stored_violations(state) == []
        assert_sigterm_ends_every_process(server)
    finally:
        if server.process.poll() is None:
            stop(server)


def test_when_the_server_process_is_killed_its_worker_and_decider_end_too(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
    server = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"), "--decider", "process")
    processes: list[int] = []
    try:
        processes = processes_of(server, 2)
        os.kill(server.process.pid, signal.SIGKILL)  # no SIGTERM passed on: they must notice by themselves
        server.process.wait(timeout=PATIENCE)
        deadline = time.monotonic() + PATIENCE
        while any(running_spawned(pid) for pid in processes):
            assert time.monotonic() < deadline, "a worker or the decider outlived the killed server"
            time.sleep(0.1)
    finally:
        for pid in filter(running_spawned, processes):  # after a failure: no process left behind by the test
            os.kill(pid, signal.SIGKILL)
        if server.process.poll() is None:
            stop(server)


def running_spawned(pid: int) -> bool:
    """Whether the process is still one of those the server spawned (its pid not yet reused by another)."""
    return exists(pid) and b"spawn_main" in command(pid)
