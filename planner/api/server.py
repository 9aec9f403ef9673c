"""Running the app under uvicorn until SIGTERM or Ctrl-C, then ending cleanly: exit status 0, no process left.

On SIGTERM (or SIGINT) the server stops accepting connections, lets the requests in flight finish
(for up to GRACE_SECONDS), then cancels a replan still running (its worker's process group is ended;
the plan stays as it was: a replan commits whole or not at all) and closes the store.

With several worker processes (`rayon serve --workers N`, `run_workers`) uvicorn's own supervisor runs
them on the one listening socket: it restarts a worker that dies, and on SIGTERM passes the signal on
to each (each ends as above) and returns once all have ended. A process of their own decides every
submission, and the workers forward theirs to it (planner/api/decider.py, planner/store/forward.py):
deciding in each would cost each the catching up with all the others' decisions.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from planner.api.context import Service
from planner.api.decider import DeciderProcess
from planner.api.guard import LIMITS, GuardedHttp
from planner.api.limits import ConnectionLimits
from planner.api.metrics import SHARED_DIR
from planner.api.processes import ENV_SERVER, ENV_WORKERS
from planner.store.forward import ENV_FOLDER, make_folder

log = logging.getLogger("rayon.api")
GRACE_SECONDS = 10  # for the requests in flight at a SIGTERM to finish; a decision takes milliseconds
METRICS_PREFIX, DECIDER_PREFIX = "rayon-metrics-", "rayon-decider-"  # then the server's pid: found again if killed
MISSED_CHECKS = 6  # health checks in a row (uvicorn's, 5 s each) a live worker may miss before it is taken for hung
ORPHAN_CHECK = 1.0  # seconds between two looks, in a worker or the decider, at whether the server is still there
# Python's cyclic collector, tuned for a server holding a large, long-lived plan: a young collection every
# 50,000 allocations rather than 700, and a full one after 100 of the middle generation's rather than 10.
COLLECTOR_THRESHOLDS = (50_000, 50, 100)


class Server(uvicorn.Server):
    """uvicorn's server, whose process ends with status 0 after a graceful shutdown on SIGTERM or SIGINT.

    uvicorn itself raises the signal again once it has shut down, so that the process dies of it
    (status 143 for SIGTERM, and no exit handlers run); here the shutdown is complete by then, so the
    process exits normally. A second Ctrl-C still forces the end, as in uvicorn.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # only the main thread may take signals
            yield
            return
        previous = {signum: signal.signal(signum, self.handle_exit) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def tune_collector() -> None:
    """Keep the garbage collector's pauses out of the answers' tail: freeze what exists now (the libraries and the
    app just built, which live as long as the process) out of every collection, and collect less often.

    With Python's defaults a full collection walks every object of the plan and of the libraries, stalling every
    request for tens of milliseconds (`benchmarks/api.py --wrk`: p99 78–108 ms with the defaults, 26–36 ms with
    either change). Garbage without cycles is freed at once whatever the collector does; cycles wait longer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def guarded(config: uvicorn.Config, limits: ConnectionLimits) -> uvicorn.Config:
    """`config` serving HTTP through GuardedHttp with these limits (planner/api/guard.py)."""
    config.http = GuardedHttp
    setattr(config, LIMITS, limits)
    return config


def run(app: FastAPI, sock: socket.socket, log_level: str, limits: ConnectionLimits = ConnectionLimits()) -> None:
    """Serve `app` on the listening socket until a signal ends it; then no worker of it is left running.

    Logging is configured already (planner/api/logs.py); the access lines are the app's own (`AccessLog`)."""
    tune_collector()
    config = guarded(uvicorn.Config(app, log_level=log_level, log_config=None, access_log=False,
                                    timeout_graceful_shutdown=GRACE_SECONDS), limits)
    try:
        Server(config).run(sockets=[sock])
    finally:
        service: Service = app.state.service
        service.close()  # done already by the app's shutdown, unless a second Ctrl-C cut it short


def end_with_server(end: Callable[[], None]) -> None:
    """In a worker or the deciding process: call `end` once the server that started this process has gone (killed
    with SIGKILL, say), so that no process of a dead server goes on answering on its port or holding the plan's
    locks. Under systemd the unit's control group is cleaned up anyway; started by hand, nothing else would."""
    expected = os.environ.get(ENV_SERVER)
    if expected is None:
        return
    server = int(expected)

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(ORPHAN_CHECK)
        log.warning("the server process (pid %s) has gone: this process (pid %d) ends too", expected, os.getpid())
        end()

    threading.Thread(target=watch, name="rayon-server-watch", daemon=True).start()


class Supervisor(Multiprocess):
    """uvicorn's supervisor of the worker processes, telling a slow worker from a dead one: a worker whose process
    has ended is replaced at once, one that is alive but does not answer a health check only once it has missed
    MISSED_CHECKS in a row (on a busy machine a worker still importing at start can miss one: `--workers 2` with
    three busy loops beside it was restarted four times in 40 s)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]):
        super().__init__(config, sockets)
        self._missed: dict[int | None, int] = {}
        for signum in (signal.SIGINT, signal.SIGTERM):  # the end begins at once, not at the loop's next half second
            signal.signal(signum, lambda *_: self.should_exit.set())

    def terminate_all(self) -> None:
        """End the workers (each finishes its requests in flight), having let go of the listening socket first: once
        the workers let go of theirs too, a new connection is refused at once instead of waiting unanswered in the
        queue of a socket this process would otherwise hold open until every worker has ended."""
        for sock in self.sockets:
            sock.close()
        super().terminate_all()

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if self._keep(process):
                continue
            process.kill()
            process.join()
            self._missed.pop(process.pid, None)
            if process.exitcode == STARTUP_FAILURE:  # the app cannot start: another would fail the same way
                log.error("worker process [%s] failed to start: the server stops", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            log.warning("worker process [%s] ended or hung: starting another", process.pid)
            replacement = Process(self.config, self.sockets)
            replacement.start()
            self.processes[index] = replacement

    def _keep(self, process: Process) -> bool:
        """Whether the worker stays: it answers, or it is alive and has missed fewer than MISSED_CHECKS in a row."""
        if not process.process.is_alive():
            return False
        if process.ping(self.config.timeout_worker_healthcheck):
            self._missed.pop(process.pid, None)
            return True
        missed = self._missed[process.pid] = self._missed.get(process.pid, 0) + 1
        log.warning("worker process [%s] did not answer a health check (%d of %d in a row)", process.pid, missed,
                    MISSED_CHECKS)
        return missed < MISSED_CHECKS


def sweep_stale_folders(temporary: Path) -> list[Path]:
    """Remove the folders (and the decider's key in one) that servers killed before they could clean up left in
    `temporary`: ours, named after a server process that no longer exists; which were removed."""
    removed = []
    for folder in temporary.glob("rayon-*-*-*"):
        pid = folder.name.removeprefix(METRICS_PREFIX).removeprefix(DECIDER_PREFIX).split("-", 1)[0]
        with contextlib.suppress(OSError):
            if folder.name.startswith((METRICS_PREFIX, DECIDER_PREFIX)) and pid.isdigit() and \
                    folder.stat().st_uid == os.getuid() and not _alive(int(pid)):
                shutil.rmtree(folder)
                removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process of that id exists (ours or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_workers(factory: Callable[[], FastAPI], sock: socket.socket, log_level: str, count: int,
                decider: Callable[[], None] | None, limits: ConnectionLimits = ConnectionLimits()) -> None:
    """Serve the app `factory` builds in each of `count` worker processes, all on the listening socket, until a
    signal ends them, with `decider` deciding their submissions in a process of its own (None: one of the workers
    decides for all); returns once every process has ended.

    `factory` and `decider` must pickle (the processes are fresh interpreters); each worker builds its own app
    over the one plan store. Their metrics are counted in files of a folder made here and removed at the end."""
    sweep_stale_folders(Path(tempfile.gettempdir()))
    shared = tempfile.mkdtemp(prefix=f"{METRICS_PREFIX}{os.getpid()}-")
    deciding = tempfile.mkdtemp(prefix=f"{DECIDER_PREFIX}{os.getpid()}-")  # private (0700): one decides for all
    make_folder(Path(deciding))
    os.environ[SHARED_DIR] = shared  # the workers inherit it, so their prometheus-client counts together
    os.environ[ENV_FOLDER] = deciding  # and this: each worker's store decides with the others (share_decisions)
    os.environ[ENV_SERVER] = str(os.getpid())  # and this: they end if this process goes (end_with_server)
    os.environ[ENV_WORKERS] = str(count)  # and this: a lone worker shows its own process_* metrics
    deciding_process = DeciderProcess(decider, Path(deciding)) if decider is not None else None
    try:
        if deciding_process is not None:
            deciding_process.start()  # first: the workers find it listening
        config = guarded(uvicorn.Config(factory, factory=True, workers=count, log_level=log_level, log_config=None,
                                        access_log=False, timeout_graceful_shutdown=GRACE_SECONDS), limits)
        Supervisor(config, sockets=[sock]).run()
    finally:
        if deciding_process is not None:
            deciding_process.stop()  # last: the workers' requests in flight are answered
        os.environ.pop(ENV_SERVER, None)
        os.environ.pop(ENV_WORKERS, None)
        for name, folder in ((SHARED_DIR, shared), (ENV_FOLDER, deciding)):
            os.environ.pop(name, None)
            shutil.rmtree(folder, ignore_errors=True)
