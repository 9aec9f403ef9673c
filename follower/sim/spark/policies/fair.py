"""Spark's FAIR ordering at two levels: between jobs (`fair`) and between users' pools (`userfair`).

Spark's `FairSchedulingAlgorithm` with no minimum shares and weight 1 serves the schedulable with
the fewest running tasks first, ties broken by name. `fair` puts each job in a pool of its own, so
jobs are compared by their running tasks and a job's stages go in submission order (FIFO within the
pool). `userfair` is the tool's `UserFairScheduler`: one FAIR pool per user at the root, compared by
the user's running tasks, ties by user name; within a user, `within="fifo"` (our default) serves the
user's jobs in submission order, and `within="fair"` compares the user's task sets by their own running
tasks as the tool's pools (mode FAIR) do.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from follower.sim.spark.policies.base import Policy
from follower.sim.spark.runtime import StageRun


class SparkFair(Policy):
    """Fair between jobs: the job with the fewest running tasks first, then earlier jobs, earlier stages."""

    name = "fair"

    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        return (stage.job.running, stage.job.seq, stage.seq)


class UserFair(Policy):
    """Fair between users (fewest running tasks first); FIFO or fair between task sets within a user."""

    name = "userfair"

    def __init__(self, slots: int, within: str = "fifo"):
        super().__init__(slots)
        if within not in ("fifo", "fair"):
            raise ValueError(f"within must be `fifo` or `fair`, got `{within}`")
        self.within = within
        self.running: Counter[str] = Counter()

    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        user = stage.job.user
        inside = (stage.job.seq, stage.seq) if self.within == "fifo" else (stage.running, stage.seq)
        return (self.running[user], user, *inside)

    def task_started(self, stage: StageRun, now: float) -> None:
        self.running[stage.job.user] += 1

    def task_finished(self, stage: StageRun, now: float) -> None:
        self.running[stage.job.user] -= 1
