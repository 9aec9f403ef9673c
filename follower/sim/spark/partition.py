"""Cutting a stage's work into tasks: runtime partitioning on or off, and skewed task times.

On, the tool's `RuntimePartitioner` rule: `floor(estimated run time / 0.5 s)` tasks (at least one),
so every task takes about half a second. Off, the stage keeps the task count of its input (Spark's
file splits; `input_tasks`). Either way the stage's work is shared equally, then each task's time is
drawn log-normally around its share (`sigma` 0 gives equal tasks), with the caller's seeded random.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

TASK_TARGET = 0.5  # seconds; the tool's MAX_TASK_RUNTIME of 500 ms


@dataclass(frozen=True, slots=True)
class Partitioning:
    """How a stage becomes tasks: by run time (`runtime`) or by input, the target, the input's split count."""

    runtime: bool = True
    target: float = TASK_TARGET
    input_tasks: int = 32

    def task_count(self, work: float) -> int:
        """How many tasks a stage of `work` core-seconds is cut into."""
        if not self.runtime:
            return self.input_tasks
        return max(1, math.floor(work / self.target + 1e-9))


def skewed(mean: float, count: int, sigma: float, rng: random.Random) -> tuple[float, ...]:
    """`count` task times whose expected value is `mean`, log-normal with shape `sigma`."""
    if sigma <= 0:
        return (mean,) * count
    mu = math.log(mean) - sigma * sigma / 2 if mean > 0 else 0.0
    return tuple(rng.lognormvariate(mu, sigma) if mean > 0 else 0.0 for _ in range(count))


def stage_tasks(work: float, partitioning: Partitioning, sigma: float, rng: random.Random) -> tuple[float, ...]:
    """The task times of a stage of `work` core-seconds under the partitioning, with skew."""
    count = partitioning.task_count(work)
    return skewed(work / count, count, sigma, rng)
