"""`rayon serve --workers N`: several processes on one port and one SQLite plan, counted as one server, one of
them keeping the clock and a process of their own deciding every submission; SIGTERM ends them all (Linux:
processes, sockets and locks are found through /proc)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any as AnyType

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from planner.api import server as server_module
from planner.api.server import MISSED_CHECKS, Supervisor, sweep_stale_folders
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
    eventually(lambda: all(listens(pid, port) for pid in processes if pid != decider), "a worker holds no socket")
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
        # The worker holds the listening socket once it has it from the server (on a starved machine, a moment after
        # it first shows among the processes); the deciding process never does.
        eventually(lambda: listens(worker, port), "the worker never held the listening socket")
        assert not listens(decider, port)
        answers = submit_shares(load, lambda _thread: server)
        assert len(answers) == 160 and 0 < sum(answers.values()) < 160
        with Store.open(state) as store:
            assert {r.name for r in store.list(state="accepted")} == {name for name, ok in answers.items() if ok}
        assert stored_violations(state) == []
        scraped = {(s.name): s.value for family in text_string_to_metric_families(httpx.get(server.url + "/metrics")
                                                                                  .text) for s in family.samples}
        # The lone worker shows its own process_* figures (the same process answers every scrape), and the server's
        # processes together hold more than it alone: the decider holds the plan too.
        assert scraped["rayon_server_processes"] >= 3  # the server, its worker, its decider
        assert scraped["rayon_server_resident_memory_bytes"] > scraped["process_resident_memory_bytes"] > 0
        assert_sigterm_ends_every_process(server)
    finally:
        if server.process.poll() is None:
            stop(server)


def test_when_the_server_process_is_killed_its_worker_and_decider_end_too(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=60), "cluster.yaml")
    temporary = tmp_path / "tmp"  # its own: another server starting on this machine would sweep the folders
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
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
        left = sorted(temporary.glob(f"rayon-*-{server.process.pid}-*"))
        assert len(left) == 2  # the killed server's folders (the decider's key in one), named after it
        assert sorted(sweep_stale_folders(temporary)) >= left  # the next server removes them
        assert not any(folder.exists() for folder in left)
    finally:
        for pid in filter(running_spawned, processes):  # after a failure: no process left behind by the test
            os.kill(pid, signal.SIGKILL)
        if server.process.poll() is None:
            stop(server)


def running_spawned(pid: int) -> bool:
    """Whether the process is still one of those the server spawned (its pid not yet reused by another)."""
    return exists(pid) and b"spawn_main" in command(pid)


@pytest.mark.parametrize("mode", [("--decider", "process"), ("--workers", "2")], ids=["decider", "workers"])
def test_a_decision_of_thousands_of_allocations_comes_back_from_the_decider(tmp_path: Path,
                                                                            mode: tuple[str, str]) -> None:
    """An answer larger than the socket's buffer is not a lost decider (issue #29: 503 for accepted submissions)."""
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"memory": "64GiB", "vcores": 16}, steps=3 * 24 * 60), "cluster.yaml")
    tokens = make_tokens(tmp_path / "tokens.yaml", {"alice": "user"})
    server = start(state, tmp_path / "tokens.yaml", tokens, *mode)
    try:
        processes_of(server, 2 if mode[0] == "--decider" else WORKERS + 1)
        with server.client("alice") as alice:
            for index in range(3):
                text = f"reservation wide{index} {{ atom(b={{memory: 1GiB, vcores: 1}}, w=1d) }}"
                answer = submit(alice, text, agent="gree-l")
                assert answer.status_code == 201, answer.text
                assert answer.json()["accepted"] and len(answer.json()["allocations"]) >= 720
        assert stored_violations(state) == []
    finally:
        stop(server)


def test_only_the_folders_of_servers_that_are_gone_are_swept(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stale = [tmp_path / f"rayon-decider-{gone}-abc", tmp_path / f"rayon-metrics-{gone}-def"]
    kept = [tmp_path / f"rayon-decider-{os.getpid()}-ghi", tmp_path / "rayon-cbc-jkl", tmp_path / "rayon-decider-mno"]
    for folder in stale + kept:
        folder.mkdir()
        (folder / "decider.key").write_bytes(b"k")
    assert sorted(sweep_stale_folders(tmp_path)) == sorted(stale)
    assert all(folder.exists() for folder in kept) and not any(folder.exists() for folder in stale)


class FakeWorker:
    """A worker process as the supervisor sees it: alive or not, answering its health checks or not."""

    made = 0

    def __init__(self, *_: object, alive: bool = True, answers: bool = True):
        FakeWorker.made += 1
        self.pid, self.alive, self.answers, self.killed = 1000 + FakeWorker.made, alive, answers, False
        self.process = type("OS", (), {"is_alive": lambda _self: self.alive})()
        self.exitcode: int | None = None

    def ping(self, timeout: float) -> bool:
        return self.alive and self.answers

    def kill(self) -> None:
        self.killed, self.alive, self.exitcode = True, False, -9

    def join(self) -> None:
        pass

    def start(self) -> None:
        pass


def supervisor(workers: list[FakeWorker]) -> AnyType:
    """A Supervisor over fake workers (built without uvicorn's signal handlers: this is the test's process)."""
    made = Supervisor.__new__(Supervisor)
    made.config, made.sockets, made.processes = SimpleNamespace(timeout_worker_healthcheck=5), [], workers
    made.should_exit, made._missed = threading.Event(), {}
    return made


def test_a_slow_worker_is_kept_and_a_dead_one_replaced_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #29: under CPU contention a worker still starting missed one 5 s health check and was killed."""
    monkeypatch.setattr(server_module, "Process", FakeWorker)
    slow, dead = FakeWorker(answers=False), FakeWorker(alive=False)
    watching = supervisor([slow, dead])
    watching.keep_subprocess_alive()
    assert not slow.killed and watching.processes[0] is slow  # a missed check is not death
    assert watching.processes[1] is not dead  # an ended process is replaced at the first look
    for _ in range(MISSED_CHECKS - 2):
        watching.keep_subprocess_alive()
    slow.answers = True  # it answers again: its misses are forgiven
    watching.keep_subprocess_alive()
    slow.answers = False
    for _ in range(MISSED_CHECKS - 1):
        watching.keep_subprocess_alive()
    assert not slow.killed
    watching.keep_subprocess_alive()  # hung: MISSED_CHECKS in a row
    assert slow.killed and watching.processes[0] is not slow
