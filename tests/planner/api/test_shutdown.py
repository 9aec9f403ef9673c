"""SIGTERM: the server stops taking connections, finishes the requests in flight, cancels a running replan, and
exits 0 leaving no process behind (Linux: processes are found through /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planner.api import jobs as jobs_module
from planner.api.jobs import Jobs
from planner.store.facade import Store
from tests.planner.api.support import (
    CLUSTER,
    Server,
    descendants,
    exists,
    make_tokens,
    pinned,
    start,
    stop,
    stored_violations,
    submit,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds processes through /proc")
EXIT_SECONDS = 30.0


def command_line(pid: int) -> bytes:
    """A process's command line (empty once it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own: the test ends it."""
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    started = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"))
    yield started
    if started.process.poll() is None:
        stop(started)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_cancels_a_running_replan_exits_0_and_leaves_no_process(server: Server, signum: int) -> None:
    with server.client("alice") as alice, server.client("ops") as ops:
        for index in range(6):
            assert submit(alice, pinned(f"r{index}", 30 * index, 60, 2)).status_code == 201
        job = ops.post("/v1/admin/replan", json={"time_limit": 60})
        assert job.status_code == 202 and job.json()["status"] == "running"
    # The replan's worker among the server's processes, beside any serving or deciding one (a moment after it is
    # started it still bears its parent's command line, until its exec)
    deadline = time.monotonic() + EXIT_SECONDS
    children = descendants(server.process.pid)
    while not any(b"planner.api.worker" in command_line(pid) for pid in children):
        assert time.monotonic() < deadline, "the replan's worker should be running"
        time.sleep(0.02)
        children = descendants(server.process.pid)
    server.process.send_signal(signum)
    assert server.process.wait(EXIT_SECONDS) == 0
    # With a deciding process, multiprocessing's helper (its resource tracker) ends once the server has: it reads
    # the server's end of a pipe. Nothing else may be left, and it not for long.
    deadline = time.monotonic() + EXIT_SECONDS
    while [pid for pid in children if exists(pid)]:
        left = [pid for pid in children if exists(pid)]
        assert time.monotonic() < deadline, f"processes of the server outlived it: {left}"
        time.sleep(0.05)
    assert any("is cancelled: the server is shutting down" in line for line in server.output())
    assert stored_violations(server.state) == []


def test_sigterm_finishes_a_request_in_flight_and_takes_no_new_one(server: Server) -> None:
    text = pinned("late", 0, 30, 2).encode()
    refused: list[bool] = []

    def body() -> Iterator[bytes]:
        yield text[:20]
        # Wait for the server to read the headers: a connection whose request has not begun is closed at once on
        # SIGTERM (uvicorn's graceful shutdown keeps only requests under way), which is not what is tested here.
        assert read_by_server(server.url), "the server did not read the request's start"
        server.process.send_signal(signal.SIGTERM)  # the rest of the body is still to come
        refused.append(connection_refused(server.url))
        yield text[20:]

    with server.client("alice") as alice:
        answer = alice.post("/v1/reservations", content=body(), headers={"Content-Type": "text/plain"})
    assert refused == [True]
    assert answer.status_code == 201 and answer.json()["accepted"]
    assert server.process.wait(EXIT_SECONDS) == 0
    with Store.open(server.state) as store:
        assert store.get("late").state == "accepted"


def read_by_server(url: str, within: float = EXIT_SECONDS) -> bool:
    """Whether, within `within` seconds, the server has read all that was sent on its connections (their receive
    queues are empty; it parses what it reads in the same step)."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        queues = [int(fields[4].split(":")[1], 16) for table in ("/proc/net/tcp", "/proc/net/tcp6")
                  for fields in (line.split() for line in Path(table).read_text().splitlines()[1:])
                  if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01"]  # 01: established
        if queues and not any(queues):
            time.sleep(0.1)  # read, and given a moment past it for the request to be under way
            return True
        time.sleep(0.02)
    return False


def connection_refused(url: str, within: float = EXIT_SECONDS) -> bool:
    """Whether new connections are refused within EXIT_SECONDS (a busy machine's patience, not a speed bound)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/v1/health", timeout=1.0)
        except httpx.ConnectError:
            return True
        time.sleep(0.05)
    return False


def test_cancelling_a_job_ends_its_worker_s_whole_process_group(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "WORKER", ("sh", "-c", "sleep 60 & wait"))  # a worker that started a solver
    jobs = Jobs(str(tmp_path / "plan.db"))
    job = jobs.replan("ops", 1.0, None, None)
    group = wait_for_children(job.process.pid)
    jobs.close()
    assert job.to_json()["status"] == "cancelled"
    assert still_running([job.process.pid, *group]) == []


def test_a_worker_deaf_to_sigterm_is_killed_within_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "WORKER", ("sh", "-c", "trap '' TERM; sleep 60 & wait"))
    monkeypatch.setattr(jobs_module, "STOP_SECONDS", 0.5)
    sent: list[int] = []
    real = jobs_module._signal_group
    monkeypatch.setattr(jobs_module, "_signal_group", lambda process, signum: (sent.append(signum),
                                                                                real(process, signum)))
    jobs = Jobs(str(tmp_path / "plan.db"))
    job = jobs.replan("ops", 1.0, None, None)
    group = wait_for_children(job.process.pid)
    jobs.close()
    assert sent == [signal.SIGTERM, signal.SIGKILL]  # the bound is STOP_SECONDS of waiting, then SIGKILL
    assert job.process.returncode == -signal.SIGKILL
    assert still_running(group) == []
    with pytest.raises(Exception, match="shutting down"):
        jobs.replan("ops", 1.0, None, None)  # closed: no new worker


def test_a_worker_whose_server_has_gone_ends_its_process_group(tmp_path: Path) -> None:
    script = ("import subprocess; from planner.api.worker import end_with_server; "
              "subprocess.Popen(['sleep', '60']); print(flush=True); end_with_server()")
    worker = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              start_new_session=True)
    assert worker.stdout is not None and worker.stdin is not None
    worker.stdout.readline()  # its `sleep` has started
    group = descendants(worker.pid)
    assert group
    worker.stdin.close()  # as when the server is killed: the end of the worker's input
    assert worker.wait(EXIT_SECONDS) == -signal.SIGKILL
    assert still_running(group) == []


def wait_for_children(pid: int) -> list[int]:
    """The process's children once it has one."""
    deadline = time.monotonic() + EXIT_SECONDS
    while not (found := descendants(pid)):
        assert time.monotonic() < deadline, "the worker started nothing"
        time.sleep(0.02)
    return found


def still_running(pids: list[int]) -> list[int]:
    """The processes still running once EXIT_SECONDS have passed, or none as soon as all have ended: a process sent
    SIGKILL ends when the kernel gets to it, later on a busy machine."""
    deadline = time.monotonic() + EXIT_SECONDS
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if running(pid)]


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (one whose parent, gone, left it to init to collect)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_pids_are_found_for_this_process() -> None:
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child.pid in descendants(os.getpid()) and running(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not exists(child.pid)
