"""The seam every Spark-model policy fills: a sort key over stages, and hooks that keep its own state."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from follower.sim.spark.runtime import JobRun, StageRun


class Policy(ABC):
    """Orders the stages that have a task waiting; the first in order gets the free slots, as in Spark.

    Spark sorts its task sets once per round of resource offers (`getSortedTaskSetQueue`), then
    fills the free slots in that order; the engine does the same, so `key` is read once per round.
    """

    name: ClassVar[str] = ""

    def __init__(self, slots: int):
        self.slots = slots

    @abstractmethod
    def key(self, stage: StageRun, now: float) -> tuple[Any, ...]:
        """Lower keys are served first."""

    def stage_submitted(self, stage: StageRun, now: float) -> None:  # noqa: B027 (an optional hook: empty unless a policy needs it)
        """A stage's parents are done and its task set joins the queue."""

    def task_started(self, stage: StageRun, now: float) -> None:  # noqa: B027 (an optional hook: empty unless a policy needs it)
        """One of the stage's tasks took a slot."""

    def task_finished(self, stage: StageRun, now: float) -> None:  # noqa: B027 (an optional hook: empty unless a policy needs it)
        """One of the stage's tasks freed its slot."""

    def job_finished(self, job: JobRun, now: float) -> None:  # noqa: B027 (an optional hook: empty unless a policy needs it)
        """The job's last task ended."""
