"""`uwfq`: User Weighted Fair Queuing, two-level virtual time with earliest-deadline-first dispatch.

After the UWFQ scheduler of the spark-benchmark-tool repository (kazemaksOG,
`UserClusterFairScheduler.java`) and its paper, rewritten with one unit throughout:

- Work is measured in resource-seconds of one resource (option `resource`, default `vcores`): an
  application's `estimated_work` (vcore-seconds by default) is its job size. The capacity `C` is
  the queue's guarantee of that resource, or the cluster's when the queue guarantees none.
- Global virtual time `V` (work per unit of user weight) advances at `C / W`, `W` the sum of the
  weights of the users with virtually unfinished jobs: each active user is served `w_u · dV`.
- Each user's service is split equally among its active jobs: its user virtual time `v_u` (work per
  job) advances at `w_u / n_u` per unit of `V`. A job arriving at `v_u` has user deadline
  `v_u + size` and finishes virtually when `v_u` reaches it.
- A user's jobs, ordered by user deadline, get chained global virtual deadlines
  `S_u + size_1 / w_u`, `+ size_2 / w_u`, ...; `S_u` is `V` when the user became active and grows
  by `size / w_u` as each job finishes. Applications are served earliest global deadline first.
- Grace period: a user that left (all its jobs finished virtually) and returns within
  `grace_period` real seconds with an application of a job it ran before (same `job` label) keeps
  its old place (`S_u` = where it ended) instead of starting at `V`.

Unit fixes against the published code: there the global time advances in core-milliseconds per user
while deadlines add estimated run times in milliseconds, and the grace period (5 s scaled by
cores / 2) is compared against virtual time; here every virtual quantity is work per unit weight and
the grace period is real time. An application that really ends (or moves away) before its virtual
finish leaves the virtual system at once, charged its whole estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from follower.scheduler.applications import Application
from follower.scheduler.policies.base import KeyOrdering, LeafQueue, PolicyContext
from rdl import units

DEFAULTS: dict[str, Any] = {"resource": "vcores", "default_work": 600.0, "grace_period": 5.0, "user_weights": {}}
TOLERANCE = 1e-9


@dataclass(slots=True)
class _Job:
    app_id: str
    size: float
    user_deadline: float
    label: str


@dataclass(slots=True)
class _User:
    name: str
    weight: float
    start: float = 0.0
    virtual: float = 0.0
    jobs: dict[str, _Job] = field(default_factory=dict)
    ended_at_virtual: float = 0.0
    left_at: float | None = None
    past_labels: set[str] = field(default_factory=set)


class Uwfq(KeyOrdering):
    """Earliest global virtual deadline first."""

    name = "uwfq"
    options = tuple(DEFAULTS)

    def __init__(self, queue: LeafQueue, context: PolicyContext) -> None:
        super().__init__(queue, context)
        settings = {**DEFAULTS, **queue.settings.options}
        self.resource: str = settings["resource"]
        self.default_work = float(settings["default_work"])
        self.grace_period = _seconds(settings["grace_period"])
        self.user_weights = {str(k): float(v) for k, v in dict(settings["user_weights"]).items()}
        self.virtual_time = 0.0
        self.clock: float | None = None
        self.users: dict[str, _User] = {}
        self.deadlines: dict[str, float] = {}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> list[tuple[str, str]]:
        problems = []
        if "resource" in options and not isinstance(options["resource"], str):
            problems.append(("resource", "must be a resource name such as `vcores`"))
        if "default_work" in options and not _positive_number(options["default_work"]):
            problems.append(("default_work", "must be a positive number of resource-seconds"))
        if "grace_period" in options:
            try:
                if _seconds(options["grace_period"]) < 0:
                    problems.append(("grace_period", "must not be negative"))
            except ValueError as exc:
                problems.append(("grace_period", str(exc)))
        weights = options.get("user_weights", {})
        if not isinstance(weights, Mapping):
            problems.append(("user_weights", "must map user names to positive weights"))
        else:
            problems += [(f"user_weights.{user}", "must be a positive number")
                         for user, weight in weights.items() if not _positive_number(weight)]
        return problems

    def key(self, app: Application) -> tuple[Any, ...]:
        return (self.deadlines.get(app.id, math.inf), app.submitted)

    def add(self, app: Application, now: float) -> None:
        self.advance(now)
        user = self.users.get(app.user)
        if user is None:
            user = self.users[app.user] = _User(app.user, self.user_weights.get(app.user, 1.0))
        label = app.job or app.id
        if not user.jobs:
            returning = (user.left_at is not None and label in user.past_labels
                         and now - user.left_at <= self.grace_period)
            user.start = user.ended_at_virtual if returning else self.virtual_time
            user.virtual = 0.0
        size = app.estimated_work if app.estimated_work is not None else self.default_work
        user.jobs[app.id] = _Job(app.id, size, user.virtual + size, label)
        self._chain(user)
        self.ranked.invalidate()
        self.ranked.put(app)

    def remove(self, app: Application, now: float) -> None:
        self.advance(now)
        user = self.users.get(app.user)
        if user is not None and app.id in user.jobs:
            self._finish(user, user.jobs[app.id], now)
            self._chain(user)
            self.ranked.invalidate()
        self.deadlines.pop(app.id, None)
        self.ranked.discard(app)

    def advance(self, now: float) -> None:
        if self.clock is None:
            self.clock = now
        finished = False
        while now > self.clock + TOLERANCE:
            active = [user for user in self.users.values() if user.jobs]
            capacity = self._capacity()
            if not active or capacity <= 0:
                self.clock = now
                break
            rate = capacity / sum(user.weight for user in active)  # dV/dt
            until = {user.name: self._until_next_finish(user, rate) for user in active}
            soonest = min(until.values())
            step = min(soonest, now - self.clock)
            self._progress(active, rate, step)
            self.clock += step
            if soonest <= step:
                due = [user for user in active if until[user.name] <= step]
                finished |= self._finish_due(due, self.clock)
        if finished:
            for user in self.users.values():
                self._chain(user)
            self.ranked.invalidate()

    def virtual_deadline(self, app_id: str) -> float | None:
        """The application's global virtual deadline, if it has one."""
        return self.deadlines.get(app_id)

    def _capacity(self) -> float:
        guaranteed = self.queue.guaranteed.get(self.resource)
        return guaranteed if guaranteed > 0 else self.context.capacity().get(self.resource)

    @staticmethod
    def _until_next_finish(user: _User, rate: float) -> float:
        """Real seconds until this user's earliest job reaches its user deadline."""
        soonest = min(job.user_deadline for job in user.jobs.values())
        per_job = rate * user.weight / len(user.jobs)
        return max(soonest - user.virtual, 0.0) / per_job

    def _progress(self, active: list[_User], rate: float, seconds: float) -> None:
        delta = rate * seconds
        self.virtual_time += delta
        for user in active:
            user.virtual += delta * user.weight / len(user.jobs)

    def _finish_due(self, due: list[_User], now: float) -> bool:
        """Finish each due user's soonest job (and any tied with it): progress even under float noise."""
        for user in due:
            soonest = min(job.user_deadline for job in user.jobs.values())
            slack = TOLERANCE * max(1.0, abs(soonest))
            for job in [job for job in user.jobs.values() if job.user_deadline <= soonest + slack]:
                self._finish(user, job, now)
        return bool(due)

    @staticmethod
    def _finish(user: _User, job: _Job, now: float) -> None:
        del user.jobs[job.app_id]
        user.start += job.size / user.weight
        user.past_labels.add(job.label)
        if not user.jobs:
            user.ended_at_virtual = user.start
            user.left_at = now

    def _chain(self, user: _User) -> None:
        deadline = user.start
        for job in sorted(user.jobs.values(), key=lambda job: (job.user_deadline, job.app_id)):
            deadline += job.size / user.weight
            self.deadlines[job.app_id] = deadline


def _seconds(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"`{value}` is not a duration")
    if isinstance(value, int | float):
        return float(value)
    return units.parse_duration(str(value))


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
