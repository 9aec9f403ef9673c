"""Long work off the request path: re-planning runs in a worker process; callers get a job to poll.

The MILP holds a CPU for up to its time limit and would stall a server thread (and, through the
interpreter lock, the others), so a replan runs in a separate process on its own store connection:
the store serialises it with the server's writers like any other process, and the server keeps
answering meanwhile. One replan runs at a time; jobs are kept in memory (the last `KEEP` of them)
by the server that started them.
"""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any as AnyType

from planner.api.errors import ApiError
from rdl import units

KEEP = 100


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
    except StoreError as error:  # StoreError does not pickle back; its fields do
        return {"started": started, "error": {"code": error.code, "message": error.message, "hint": error.hint}}


@dataclass
class Job:
    """One piece of long work and where it stands."""

    id: str
    kind: str
    requested_by: str
    params: dict[str, AnyType]
    submitted: datetime
    future: Future[dict[str, AnyType]] = field(repr=False)
    finished: datetime | None = None

    @property
    def status(self) -> str:
        if not self.future.done():
            return "running" if self.future.running() else "queued"
        if self.future.exception() is not None:
            return "failed"
        return "failed" if "error" in self.future.result() else "done"

    def to_json(self) -> dict[str, AnyType]:
        data: dict[str, AnyType] = {"id": self.id, "kind": self.kind, "status": self.status,
                                    "requested_by": self.requested_by, "params": self.params,
                                    "submitted": units.format_instant(self.submitted)}
        if self.finished is not None:
            data["finished"] = units.format_instant(self.finished)
        if self.future.done():
            failure = self.future.exception()
            if failure is not None:
                data["error"] = {"code": "internal", "message": f"{type(failure).__name__}: {failure}"}
            else:
                data.update(self.future.result())
        return data


class Jobs:
    """Starts replans in a worker process and keeps their jobs; thread-safe."""

    def __init__(self, target: str):
        self.target = target
        self._lock = threading.RLock()  # a done callback may run at once, in the thread that holds it
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._executor: ProcessPoolExecutor | None = None

    def replan(self, actor: str, time_limit: float | None, solver: str | None, gap: float | None) -> Job:
        """Start a replan; refused (409) while another one is queued or running."""
        with self._lock:
            busy = [job for job in self._jobs.values() if not job.future.done()]
            if busy:
                raise ApiError(409, "busy", f"a replan is already under way: job {busy[0].id}",
                               f"poll GET /v1/jobs/{busy[0].id} and ask again when it is done")
            try:
                pool = self._pool()
                future = pool.submit(replan_in_worker, self.target, actor, time_limit, solver, gap)
            except BrokenProcessPool:  # its worker died (killed, out of memory) while idle: start a new one
                self._executor = None
                pool = self._pool()
                future = pool.submit(replan_in_worker, self.target, actor, time_limit, solver, gap)
            params = {"time_limit": time_limit, "solver": solver, "gap": gap}
            job = Job(uuid.uuid4().hex[:16], "replan", actor, params, datetime.now(UTC), future)
            future.add_done_callback(lambda done: self._finished(job, pool, done))
            self._jobs[job.id] = job
            while len(self._jobs) > KEEP:
                self._jobs.popitem(last=False)
            return job

    def _finished(self, job: Job, pool: ProcessPoolExecutor, future: Future[dict[str, AnyType]]) -> None:
        """Stamp the job; a worker that died under it fails it, and the next replan starts a new worker."""
        job.finished = datetime.now(UTC)
        if isinstance(future.exception(), BrokenProcessPool):
            with self._lock:
                if self._executor is pool:
                    self._executor = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # spawn, not fork: forking a server that runs threads can copy a held lock into the child
            self._executor = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self._executor

    def get(self, job_id: str) -> Job:
        """The job of that id; 404 if this server has none."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, "unknown", f"no job `{job_id}` on this server",
                           "jobs live in the memory of the server that started them")
        return job

    def close(self) -> None:
        """Stop taking work; queued jobs are dropped, one under way finishes (it writes whole or not at all)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
