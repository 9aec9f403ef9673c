"""A job's application while the simulator runs it: what it holds, how much work is left, and what it would lose.

What a lost container costs (preempted, or its node failed), as a real cluster charges it:
- a task (jobs with per-task times) starts over: the time it ran since its start, or since its last checkpoint,
  is lost;
- an executor of an elastic job loses the work it did since it started (or since its last checkpoint);
- a gang (an MPI job's ranks, or a job of one container) runs only with every container, and losing any one
  of them loses the whole gang's work since it last started (or since its last checkpoint).
A Spark driver does no work of its own here: losing it stalls the job until it is back (YARN's preemption
spares application masters where it can, and an elastic job's executors keep what they did).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from follower.sim.metrics import JobRecord
from follower.sim.workloads.job import Job


def unsaved(seconds: float, checkpoint: float | None) -> float:
    """The part of `seconds` of work done since the last checkpoint (all of it when nothing is saved)."""
    if checkpoint is None or seconds <= 0:
        return max(0.0, seconds)
    return seconds - math.floor(seconds / checkpoint) * checkpoint


@dataclass
class RunningJob:
    """A job's application while it lives: what it holds and how much work is left.

    Jobs with per-task times (`Job.tasks`) run them one by one on their executors (`pending`,
    `running`); the others are fluid: `work` executor-seconds done at one per running executor, a gang's
    only while it holds every container.
    """

    job: Job
    record: JobRecord
    work: float
    driver: str | None = None
    executors: set[str] = field(default_factory=set)
    rate: float = 0.0
    since: float = 0.0
    version: int = 0
    asks: int = 0
    executors_asked: bool = False
    pending: deque[float] = field(default_factory=deque)
    running: dict[str, tuple[float, int, float]] = field(default_factory=dict)  # executor -> (task s, token, start)
    done: list[float] = field(default_factory=list)  # the tasks that ran to their end, in the order they did
    worked: dict[str, float] = field(default_factory=dict)  # an elastic job's executor -> seconds it has worked
    segment: float = 0.0  # a gang's seconds of progress since it last started whole
    ended: bool = False

    @property
    def needs_driver(self) -> bool:
        return self.job.containers > self.job.executors

    @property
    def by_task(self) -> bool:
        return bool(self.job.tasks) and self.job.executors > 0

    @property
    def is_gang(self) -> bool:
        """Runs only whole: an MPI job's ranks, or a job of one container."""
        return self.job.gang or self.job.executors == 0

    def speed(self) -> float:
        """Units of work done per second with what it holds now (fluid jobs)."""
        if self.needs_driver and self.driver is None:
            return 0.0
        if self.is_gang:
            whole = len(self.executors) == self.job.executors
            return float(max(1, self.job.executors)) if whole else 0.0
        return float(len(self.executors)) if self.job.executors else 1.0

    def progress(self, now: float) -> None:
        """Count the work done since the last change at the rate it ran."""
        seconds = now - self.since
        if seconds > 0 and self.rate > 0:
            self.work -= self.rate * seconds
            if self.is_gang:
                self.segment += seconds
            else:
                for executor in self.executors:
                    self.worked[executor] = self.worked.get(executor, 0.0) + seconds
        self.since = now

    def lose(self, container: str, now: float, checkpoint: float | None) -> float:
        """What losing `container` now throws away, in container-seconds; the work it held goes back to be done.
        Call after `progress(now)`, before the container leaves `executors`."""
        if self.by_task:
            task = self.running.get(container)
            if task is None:
                return 0.0
            seconds, _, started = task
            lost = unsaved(now - started, checkpoint)
            self.pending.appendleft(seconds - (now - started - lost))  # what it saved is not done again
            return lost
        if self.is_gang:
            lost_seconds = unsaved(self.segment, checkpoint)
            self.segment = 0.0
            self.work += lost_seconds * self.speed_whole()
            return lost_seconds * self.job.containers
        lost = unsaved(self.worked.pop(container, 0.0), checkpoint)
        self.work += lost
        return lost

    def speed_whole(self) -> float:
        """A gang's rate with every container running."""
        return float(max(1, self.job.executors))


def estimated_work(job: Job) -> float:
    """What the job declares it will use, in vcore-seconds (the unit uwfq's virtual time counts)."""
    if job.tasks and job.executors:
        return sum(job.tasks) * float(job.executor.get("vcores") or 1.0)
    return job.declared * float(job.total.get("vcores") or 1.0)
