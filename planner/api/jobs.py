"""Long work off the request path: re-planning runs in a worker process; callers get a job to poll or cancel.

The MILP holds a CPU for up to its time limit and would stall a server thread (and, through the
interpreter lock, the others), so a replan runs in a separate process (planner/api/worker.py) on its
own store connection: the store serialises it with the server's writers like any other process, and
the server keeps answering meanwhile. One replan runs at a time; jobs are kept in memory (the last
`KEEP` of them) by the server that started them. A job can be cancelled (its process group is ended:
the replan writes whole or not at all), and a worker never outlives its server: the server ends it
when it shuts down (`close`), and the worker ends itself when its server has gone (killed without a
shutdown).

Workers are plain subprocesses, not `multiprocessing` ones: a spawned `multiprocessing` process
brings a resource tracker process along, which nothing stops and which outlived the server (it
ends only once every process holding its pipe has exited, the server and its workers alike).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO
from typing import Any as AnyType

from planner.api.errors import ApiError
from rdl import units

KEEP = 100
MAX_TIME_LIMIT = 3600.0  # seconds a replan may be given: an hour, far beyond a week of N=1000 (about a minute)
STOP_SECONDS = 5.0  # a cancelled worker's group gets this long to end on SIGTERM before it is killed
log = logging.getLogger("rayon.jobs")
WORKER = (sys.executable, "-m", "planner.api.worker")
ENDED = ("done", "failed", "cancelled")


@dataclass
class Job:
    """One piece of long work, the process doing it, and where it stands."""

    id: str
    kind: str
    requested_by: str
    params: dict[str, AnyType]
    submitted: datetime
    process: subprocess.Popen[bytes] = field(repr=False)
    outcome: dict[str, AnyType] | None = None
    finished: datetime | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False)  # set when `finished` is stamped
    cancelled: bool = False

    @property
    def status(self) -> str:
        if self.finished is None:
            return "running"
        if self.outcome is None:  # a cancel that came after the answer does not count: the answer does
            return "cancelled" if self.cancelled else "failed"
        return "failed" if "error" in self.outcome else "done"

    def to_json(self) -> dict[str, AnyType]:
        data: dict[str, AnyType] = {"id": self.id, "kind": self.kind, "status": self.status,
                                    "requested_by": self.requested_by, "params": self.params,
                                    "submitted": units.format_instant(self.submitted)}
        if self.finished is not None:
            data["finished"] = units.format_instant(self.finished)
            data.update(self.outcome or self._lost())
        return data

    def _lost(self) -> dict[str, AnyType]:
        if self.cancelled:
            return {"error": {"code": "cancelled", "message": "cancelled; the plan is as it was before the job"}}
        return {"error": {"code": "internal", "message": f"the worker ended without an answer "
                                                          f"(exit code {self.process.returncode})"}}


class Jobs:
    """Starts replans in worker processes and keeps their jobs; thread-safe."""

    def __init__(self, target: str):
        self.target = target
        self._lock = threading.RLock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._ended: collections.Counter[str] = collections.Counter()  # every job that ended, by status
        self._closed = False

    def replan(self, actor: str, time_limit: float | None, solver: str | None, gap: float | None) -> Job:
        """Start a replan; refused (409) while another one is running, and (503) once the server is shutting down."""
        with self._lock:
            if self._closed:
                raise ApiError(503, "shutting_down", "the server is shutting down", "ask again once it is back")
            busy = [job for job in self._jobs.values() if job.finished is None]
            if busy:
                raise ApiError(409, "busy", f"a replan is already under way: job {busy[0].id}",
                               f"poll GET /v1/jobs/{busy[0].id}, or cancel it with DELETE /v1/jobs/{busy[0].id}")
            # A session of its own: a terminal's Ctrl-C reaches the server only, and a cancel reaches the whole group.
            process = subprocess.Popen(WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
            params = {"time_limit": time_limit, "solver": solver, "gap": gap}
            _send(process.stdin, {"target": self.target, "actor": actor, **params})
            job = Job(uuid.uuid4().hex[:16], "replan", actor, params, datetime.now(UTC), process)
            log.info("replan job %s started by %s (worker process %d)", job.id, actor, process.pid)
            threading.Thread(target=self._wait, args=(job,), daemon=True).start()
            self._jobs[job.id] = job
            while len(self._jobs) > KEEP:
                self._jobs.popitem(last=False)
            return job

    def _wait(self, job: Job) -> None:
        """Collect the worker's answer (none if it was ended or died), then stamp the job finished."""
        process = job.process
        assert process.stdout is not None and process.stdin is not None
        with process.stdout:
            answer = process.stdout.read()
        process.wait()
        process.stdin.close()  # only now: the worker reads the end of its input as its server's end
        try:
            outcome = json.loads(answer) if answer else None  # none: cancelled, killed, out of memory
        except ValueError:
            outcome = None
        with self._lock:
            job.outcome = outcome
            job.finished = datetime.now(UTC)
            self._ended[job.status] += 1
        log.info("replan job %s %s", job.id, job.status)
        job.done.set()

    def all(self) -> list[Job]:
        """Every job this server keeps (the latest KEEP), oldest first."""
        with self._lock:
            return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        """The job of that id; 404 if this server has none."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, "unknown", f"no job `{job_id}` on this server",
                           "jobs live in the memory of the server that started them")
        return job

    def cancel(self, job_id: str) -> Job:
        """End the job's worker if it is still running (its replan commits whole or not at all): SIGTERM to its
        process group, SIGKILL if it has not ended within STOP_SECONDS."""
        job = self.get(job_id)
        with self._lock:
            if job.finished is None:
                job.cancelled = True
                _signal_group(job.process, signal.SIGTERM)
        if not job.done.wait(STOP_SECONDS):
            _signal_group(job.process, signal.SIGKILL)
            job.done.wait()
        return job

    def close(self) -> None:
        """Refuse new jobs and end every worker still running: none outlives the server."""
        with self._lock:
            self._closed = True
            running = [job for job in self._jobs.values() if job.finished is None]
        for job in running:
            log.warning("replan job %s is cancelled: the server is shutting down", job.id)
            self.cancel(job.id)

    def tally(self) -> dict[str, int]:
        """How many jobs are running now, and how many have ended in each way since the server started."""
        with self._lock:
            running = sum(job.finished is None for job in self._jobs.values())
            return {"running": running, **{status: self._ended[status] for status in ENDED}}


def _send(stream: IO[bytes] | None, job: dict[str, AnyType]) -> None:
    """Hand the worker its job (one JSON line); its input stays open while the server lives."""
    assert stream is not None
    try:
        stream.write(json.dumps(job).encode() + b"\n")
        stream.flush()
    except OSError:  # the worker died at once: its job ends as failed, without an answer
        pass


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send a signal to the worker's process group (the worker and whatever it started)."""
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended already
        os.killpg(process.pid, signum)
