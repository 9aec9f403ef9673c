"""`jobfq`: fair queuing between jobs by virtual finish times (the tool's `ClusterFairScheduler`, per job).

Virtual time `V` counts the core-seconds each active job would have received under processor
sharing: it advances at `slots / n` per second, `n` the jobs not yet virtually finished. A job
arriving at `V` gets the finish tag `V + estimate` (its expected core-seconds); stages are served
by their job's tag, earliest first. The tool tags each stage by its own estimate; this one tags the
job, so that it differs from UWFQ only by having no user level.
"""

from __future__ import annotations

import heapq
from typing import Any

from follower.sim.spark.policies.base import Policy
from follower.sim.spark.runtime import JobRun, StageRun


class JobFairQueuing(Policy):
    """Earliest virtual finish time of the stage's job first."""

    name = "jobfq"

    def __init__(self, slots: int):
        super().__init__(slots)
        self.virtual = 0.0
        self.clock = 0.0
        self.tags: dict[JobRun, float] = {}
        self.unfinished: list[float] = []  # tags of the jobs not yet virtually finished, a heap

    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        return (self.tags[stage.job], stage.job.seq, stage.seq)

    def stage_submitted(self, stage: StageRun, now: float) -> None:
        self.advance(now)
        if stage.job not in self.tags:
            tag = self.tags[stage.job] = self.virtual + stage.job.spec.estimate
            heapq.heappush(self.unfinished, tag)

    def advance(self, now: float) -> None:
        """Move virtual time to real time `now`, finishing jobs virtually on the way."""
        while self.unfinished:
            rate = self.slots / len(self.unfinished)
            reached = self.clock + (self.unfinished[0] - self.virtual) / rate
            if reached > now:
                self.virtual += (now - self.clock) * rate
                break
            self.virtual, self.clock = heapq.heappop(self.unfinished), reached
        self.clock = now
