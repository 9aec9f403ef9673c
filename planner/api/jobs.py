"""Long work off the request path: re-planning runs in a worker process; callers get a job to poll or cancel.

The MILP holds a CPU for up to its time limit and would stall a server thread (and, through the
interpreter lock, the others), so a replan runs in a separate process on its own store connection:
the store serialises it with the server's writers like any other process, and the server keeps
answering meanwhile. One replan runs at a time; jobs are kept in memory (the last `KEEP` of them)
by the server that started them. A job can be cancelled (its process is ended: the replan writes
whole or not at all), and a worker never outlives its server: the server ends it when it shuts
down, and the worker ends itself when its server has gone (killed without a shutdown).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any as AnyType

from planner.api.errors import ApiError
from rdl import units

KEEP = 100
MAX_TIME_LIMIT = 3600.0  # seconds a replan may be given: an hour, far beyond a week of N=1000 (about a minute)
ORPHAN_CHECK = 1.0  # seconds between a worker's checks that its server is still there


def replan_in_worker(target: str, actor: str, time_limit: float | None, solver: str | None,
                     gap: float | None) -> dict[str, AnyType]:
    """Re-plan the store at `target` (runs in the worker process); the outcome, or the error, as JSON."""
    from planner.core.compile import Clock
    from planner.store.facade import Store, StoreError

    started = units.format_instant(datetime.now(UTC))
    try:
        with Store.open(target) as store:
            outcome = store.replan(actor=actor, time_limit=time_limit, backend=solver, gap=gap)
            cluster = store.cluster()
            result = outcome.to_json(Clock(cluster.start, cluster.step, cluster.steps))
        return {"started": started, "result": result}
    except StoreError as error:
        return {"started": started, "error": {"code": error.code, "message": error.message, "hint": error.hint}}


def _worker_main(answer: Connection, server: int, args: tuple[AnyType, ...]) -> None:
    """The worker process: watch for the server's end, replan, send the outcome back."""
    threading.Thread(target=_end_when_orphaned, args=(server,), daemon=True).start()
    try:
        outcome = replan_in_worker(*args)
    except Exception as exc:  # an internal failure: reported in the job, never lost with the process
        outcome = {"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}}
    answer.send(outcome)
    answer.close()


def _end_when_orphaned(server: int) -> None:
    """End this process once its server is gone (its parent changed), whatever the replan is doing."""
    while os.getppid() == server:
        time.sleep(ORPHAN_CHECK)
    os._exit(1)


@dataclass
class Job:
    """One piece of long work, the process doing it, and where it stands."""

    id: str
    kind: str
    requested_by: str
    params: dict[str, AnyType]
    submitted: datetime
    process: BaseProcess = field(repr=False)
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
                                                          f"(exit code {self.process.exitcode})"}}


class Jobs:
    """Starts replans in worker processes and keeps their jobs; thread-safe."""

    def __init__(self, target: str):
        self.target = target
        self._lock = threading.RLock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._context = multiprocessing.get_context("spawn")  # not fork: a threaded server could copy a held lock

    def replan(self, actor: str, time_limit: float | None, solver: str | None, gap: float | None) -> Job:
        """Start a replan; refused (409) while another one is running."""
        with self._lock:
            busy = [job for job in self._jobs.values() if job.finished is None]
            if busy:
                raise ApiError(409, "busy", f"a replan is already under way: job {busy[0].id}",
                               f"poll GET /v1/jobs/{busy[0].id}, or cancel it with DELETE /v1/jobs/{busy[0].id}")
            receive, send = self._context.Pipe(duplex=False)
            process = self._context.Process(target=_worker_main, daemon=True,
                                            args=(send, os.getpid(), (self.target, actor, time_limit, solver, gap)))
            process.start()
            send.close()
            params = {"time_limit": time_limit, "solver": solver, "gap": gap}
            job = Job(uuid.uuid4().hex[:16], "replan", actor, params, datetime.now(UTC), process)
            threading.Thread(target=self._wait, args=(job, receive), daemon=True).start()
            self._jobs[job.id] = job
            while len(self._jobs) > KEEP:
                self._jobs.popitem(last=False)
            return job

    def _wait(self, job: Job, receive: Connection) -> None:
        """Collect the worker's answer (none if it was ended or died), then stamp the job finished."""
        try:
            outcome = receive.recv()
        except EOFError:  # the process ended without answering: cancelled, killed, out of memory
            outcome = None
        finally:
            receive.close()
        job.process.join()
        with self._lock:
            job.outcome = outcome
            job.finished = datetime.now(UTC)
        job.done.set()

    def get(self, job_id: str) -> Job:
        """The job of that id; 404 if this server has none."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, "unknown", f"no job `{job_id}` on this server",
                           "jobs live in the memory of the server that started them")
        return job

    def cancel(self, job_id: str) -> Job:
        """End the job's worker if it is still running (its replan commits whole or not at all)."""
        job = self.get(job_id)
        with self._lock:
            if job.finished is None:
                job.cancelled = True
                job.process.terminate()
        job.done.wait()  # the waiting thread stamps it once the pipe closes
        return job

    def close(self) -> None:
        """End every worker still running: none outlives the server."""
        with self._lock:
            running = [job for job in self._jobs.values() if job.finished is None]
        for job in running:
            self.cancel(job.id)
