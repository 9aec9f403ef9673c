"""A job's application while the simulator runs it: what it holds, and how much work is left."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from follower.sim.metrics import JobRecord
from follower.sim.workloads.job import Job


@dataclass
class RunningJob:
    """A job's application while it lives: what it holds and how much work is left.

    Jobs with per-task times (`Job.tasks`) run them one by one on their executors (`pending`,
    `running`); the others are fluid: `work` executor-seconds done at one per running executor.
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
    running: dict[str, tuple[float, int]] = field(default_factory=dict)  # executor -> (task seconds, token)
    done: list[float] = field(default_factory=list)  # the tasks that ran to their end, in the order they did
    ended: bool = False

    @property
    def needs_driver(self) -> bool:
        return self.job.containers > self.job.executors

    @property
    def by_task(self) -> bool:
        return bool(self.job.tasks) and self.job.executors > 0

    def speed(self) -> float:
        """Units of work done per second with what it holds now (fluid jobs)."""
        if self.needs_driver and self.driver is None:
            return 0.0
        return float(len(self.executors)) if self.job.executors else 1.0


def estimated_work(job: Job) -> float:
    """What the job declares it will use, in vcore-seconds (the unit uwfq's virtual time counts)."""
    if job.tasks and job.executors:
        return sum(job.tasks) * float(job.executor.get("vcores") or 1.0)
    return job.declared * float(job.total.get("vcores") or 1.0)
