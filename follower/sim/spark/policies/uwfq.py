"""`uwfq`: User Weighted Fair Queuing with per-stage virtual deadlines, as the paper's patched Spark runs it.

What we took from the tool's `UserClusterFairScheduler` (kazemaksOG/spark-benchmark-tool) and the
`deadline` field its Spark fork (kazemaksOG/spark-3.5.5-custom) adds to `TaskSetManager`:

- Deadlines are computed only when a stage is submitted; task sets are then served by deadline,
  lowest first, ties in submission order. A task set whose deadline was never set keeps the
  field's initial value 0, so it goes first.
- Global virtual time `V` (core-seconds per user) advances at `slots / u` per second, `u` the users
  active in the virtual system; a user leaves when `V` reaches the end of its chain of jobs.
- Each active user has a user virtual time `v` that advances at `slots / u / j` per second, `j` its
  jobs not yet virtually finished. A job gets the user deadline `v + estimate` when its first
  stage arrives and finishes virtually when `v` reaches it; its estimate is then added to the
  user's chain start.
- At each stage submission, the user's virtually unfinished jobs, in user-deadline order, get
  chained global deadlines `start + e1`, `start + e1 + e2`, ... and every unfinished stage of each
  job takes its job's deadline. A late stage of a job that already finished virtually is in no
  chain and keeps deadline 0.
- Grace period: a user that left and comes back with a stage of a job it had before, while
  `V - end of its chain` is at most `3 s × slots / 2` (in `V`'s units), keeps its chain start;
  otherwise its chain restarts at `V`. The tool counts milliseconds; this model counts seconds.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from follower.sim.spark.policies.base import Policy
from follower.sim.spark.runtime import StageRun

BASE_GRACE = 3.0  # seconds; the tool's BASE_GRACE_PERIOD_MS, scaled by slots / 2


@dataclass(eq=False, slots=True)
class _Job:
    seq: int
    estimate: float
    user_deadline: float
    stages: list[StageRun] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _User:
    name: str
    start: float
    end: float
    virtual: float = 0.0
    known: dict[str, _Job] = field(default_factory=dict)
    active: list[_Job] = field(default_factory=list)  # virtually unfinished, by (user deadline, seq)

    def progress(self, seconds: float, share: float) -> None:
        """Advance the user's virtual time by `seconds` at `share` slots, finishing jobs virtually."""
        while self.active:
            rate = share / len(self.active)
            first = self.active[0]
            needed = max(first.user_deadline - self.virtual, 0.0) / rate
            if needed > seconds:
                break
            self.virtual = max(self.virtual, first.user_deadline)
            seconds -= needed
            self.start += first.estimate
            self.active.pop(0)
        if self.active:
            self.virtual += seconds * share / len(self.active)


class Uwfq(Policy):
    """Earliest per-stage global virtual deadline first."""

    name = "uwfq"

    def __init__(self, slots: int):
        super().__init__(slots)
        self.grace = BASE_GRACE * slots / 2
        self.virtual = 0.0
        self.clock = 0.0
        self.active: dict[str, _User] = {}
        self.history: dict[str, _User] = {}
        self.deadlines: dict[StageRun, float] = {}

    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        return (self.deadlines.get(stage, 0.0), stage.seq)

    def stage_submitted(self, stage: StageRun, now: float) -> None:
        self.advance(now)
        user = self._user(stage.job.user, stage.job.spec.id)
        job = user.known.get(stage.job.spec.id)
        if job is None:
            spec = stage.job.spec
            job = user.known[spec.id] = _Job(stage.job.seq, spec.estimate, user.virtual + spec.estimate)
            bisect.insort(user.active, job, key=lambda j: (j.user_deadline, j.seq))
        job.stages.append(stage)
        self._chain(user)

    def advance(self, now: float) -> None:
        """Move `V` and every user's virtual time to real time `now`; users whose chains end leave."""
        while self.active:
            share = self.slots / len(self.active)
            first = min(self.active.values(), key=lambda user: (user.end, user.name))
            leaves = self.clock + max(first.end - self.virtual, 0.0) / share
            if leaves > now:
                break
            self._progress(leaves, share)
            self.history[first.name] = self.active.pop(first.name)
        if self.active:
            self._progress(now, self.slots / len(self.active))
        self.clock = now

    def virtual_deadline(self, stage: StageRun) -> float:
        """The deadline the stage is served by (0 when none was set)."""
        return self.deadlines.get(stage, 0.0)

    def _progress(self, until: float, share: float) -> None:
        seconds = until - self.clock
        self.virtual += seconds * share
        for user in self.active.values():
            user.progress(seconds, share)
        self.clock = until

    def _user(self, name: str, job_id: str) -> _User:
        if name in self.active:
            return self.active[name]
        user = self.history.pop(name, None)
        if user is None:
            user = _User(name, self.virtual, self.virtual)
        elif job_id not in user.known or self.virtual - user.end > self.grace:
            user.start = self.virtual
        self.active[name] = user
        return user

    def _chain(self, user: _User) -> None:
        if not user.active:
            return
        deadline = user.start
        for job in user.active:
            deadline += job.estimate
            job.stages = [stage for stage in job.stages if not stage.finished]
            for stage in job.stages:
                self.deadlines[stage] = deadline
        user.end = deadline
