"""What the Spark model runs: jobs of stages of tasks, as plain frozen facts (no run state)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StageSpec:
    """One stage: its tasks' run times in seconds and the stages (by index in the job) it waits for."""

    tasks: tuple[float, ...]
    parents: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.tasks or min(self.tasks) < 0:
            raise ValueError(f"a stage needs at least one task and no negative task time, got {self.tasks!r}")

    @property
    def work(self) -> float:
        """Core-seconds the stage's tasks take in all."""
        return sum(self.tasks)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One Spark job of a user: when it is submitted, its stages, and the work a scheduler is told to expect.

    `follows` names the job of the same stream that must finish first (the tool's `SEQ` workloads):
    then the job is submitted at `max(that job's submission + submit, that job's end)`, `submit`
    being the wait; otherwise `submit` is seconds from the start.
    """

    id: str
    user: str
    submit: float
    stages: tuple[StageSpec, ...]
    estimate: float
    kind: str = ""
    follows: str | None = None

    def __post_init__(self) -> None:
        for index, stage in enumerate(self.stages):
            if any(not 0 <= parent < index for parent in stage.parents):
                raise ValueError(f"job {self.id}: stage {index} may wait only for earlier stages, got {stage.parents}")

    @property
    def work(self) -> float:
        """Core-seconds all the job's tasks take."""
        return sum(stage.work for stage in self.stages)

    @property
    def critical_path(self) -> float:
        """The shortest time the job can take on unlimited slots: the longest chain of longest tasks."""
        finish: list[float] = []
        for stage in self.stages:
            start = max((finish[p] for p in stage.parents), default=0.0)
            finish.append(start + max(stage.tasks, default=0.0))
        return max(finish, default=0.0)


@dataclass(frozen=True, slots=True)
class Cluster:
    """The application's executors and the cores (task slots) each one has."""

    executors: int = 8
    cores: int = 4

    @property
    def slots(self) -> int:
        """How many tasks run at once."""
        return self.executors * self.cores
