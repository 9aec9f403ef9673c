"""The run state of jobs and stages while the Spark model runs (what Spark's TaskSetManagers count)."""

from __future__ import annotations

from dataclasses import dataclass, field

from follower.sim.spark.model import JobSpec, StageSpec


@dataclass(eq=False, slots=True)
class JobRun:
    """A submitted job: its order of submission, when, and how many of its tasks run now."""

    spec: JobSpec
    seq: int
    submitted: float
    running: int = 0
    stages_done: set[int] = field(default_factory=set)
    finished: float | None = None

    @property
    def user(self) -> str:
        return self.spec.user


@dataclass(eq=False, slots=True)
class StageRun:
    """A submitted stage (a task set): the next task to launch, and how many run and are done."""

    job: JobRun
    index: int
    seq: int
    submitted: float
    next_task: int = 0
    running: int = 0
    done: int = 0

    @property
    def spec(self) -> StageSpec:
        return self.job.spec.stages[self.index]

    @property
    def name(self) -> str:
        """`JOB/sINDEX`, for traces and messages."""
        return f"{self.job.spec.id}/s{self.index}"

    @property
    def pending(self) -> bool:
        """Whether a task of this stage is still waiting for a slot."""
        return self.next_task < len(self.spec.tasks)

    @property
    def finished(self) -> bool:
        return self.done == len(self.spec.tasks)
