"""Offline replanning on a schedule: `rayon serve --replan-every 6h` starts a replan job each time the plan's clock
has moved that far (plan time, so a fast clock replans as often in plan time as a wall one).

The job is the one `POST /v1/admin/replan` starts (planner/api/jobs.py): the MILP in a worker process, against a
snapshot of the plan, committed only if nothing changed meanwhile, never blocking admission. While one runs the
schedule waits for the next tick.
"""

from __future__ import annotations

import logging
from datetime import datetime

from planner.api.errors import ApiError
from planner.api.jobs import Jobs
from planner.store.facade import Store

log = logging.getLogger("rayon.replan")
ACTOR = "schedule"  # who the log says asked for a scheduled replan
DEFAULT_REPLAN_LIMIT = 60.0  # seconds a scheduled replan's solver may take


class ReplanSchedule:
    """Starts a replan job every `every` seconds of plan time, each with `time_limit` seconds for the solver."""

    def __init__(self, store: Store, jobs: Jobs, every: float, time_limit: float):
        self.store, self.jobs, self.every, self.time_limit = store, jobs, every, time_limit
        self.last: datetime | None = None  # the plan's clock at the last replan started (or at start)

    def tick(self) -> None:
        if not self.store.keeps_clock():  # one server replans on schedule: the one that keeps the clock
            return
        now = self.store.now()
        if self.last is None:
            self.last = now
            return
        if (now - self.last).total_seconds() < self.every:
            return
        try:
            job = self.jobs.replan(ACTOR, self.time_limit, None, None)
        except ApiError as exc:
            if exc.status in (409, 503):  # one is running, or the server is stopping: the next tick tries again
                return
            raise
        self.last = now
        log.info("scheduled replan job %s started (the plan's clock at %s)", job.id, now.isoformat())
