"""Deadlines where a trace has none, which jobs are production, and the seeded draws behind both.

The recipe (Hadoop's scheduler load simulator, the traces' README): deadline = submit +
ceil(f × duration), the slack factor f drawn log-normally around a configurable mean. Here
f = 1 + X with X log-normal of mean `mean − 1`, so that f > 1 always: a deadline shorter
than the job's own declared duration could not be met by any scheduler and is not a valid
reservation. The deadline is also at least `floor` seconds beyond the duration, so that the
reservation's window still holds its lease once the planner rounds the window inwards and
the lease up to whole plan steps (two steps suffice; see docs/workloads.md).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from follower.sim.workloads.fields import duration, number, words

DEFAULT_FLOOR = 120.0  # two one-minute plan steps


@dataclass(frozen=True, slots=True)
class Slack:
    """How far a deadline lies beyond submission, as a multiple of the declared duration."""

    mean: float = field(default=3.0, metadata=number(minimum=1.0, strict=True))
    sigma: float = field(default=0.5, metadata=number(minimum=0.0))
    floor: float | None = field(default=None, metadata=duration())  # None: two plan steps (DEFAULT_FLOOR at 1 min)

    def __post_init__(self) -> None:
        if not self.mean > 1:
            raise ValueError(f"the mean slack factor must exceed 1, got {self.mean}")
        if self.sigma < 0 or (self.floor is not None and self.floor < 0):
            raise ValueError("sigma and floor must not be negative")

    def factor(self, rng: random.Random) -> float:
        """One slack factor f > 1 with mean `self.mean` (f − 1 is log-normal)."""
        mu = math.log(self.mean - 1) - self.sigma**2 / 2
        return 1.0 + rng.lognormvariate(mu, self.sigma)

    def deadline(self, submit: float, declared: float, rng: random.Random) -> float:
        """submit + max(ceil(f × declared), ceil(declared) + floor), in whole seconds after submission."""
        floor = DEFAULT_FLOOR if self.floor is None else self.floor
        return submit + max(math.ceil(self.factor(rng) * declared), math.ceil(declared) + floor)


@dataclass(frozen=True, slots=True)
class ProductionRule:
    """Which jobs of a trace are production: those of the listed queues, and a seeded share of the rest."""

    fraction: float = field(default=0.0, metadata=number(minimum=0.0, maximum=1.0))
    queues: tuple[str, ...] = field(default=(), metadata=words())

    def __post_init__(self) -> None:
        if not 0 <= self.fraction <= 1:
            raise ValueError(f"the production fraction must lie in [0, 1], got {self.fraction}")

    def is_production(self, queue: str | None, rng: random.Random) -> bool:
        """Whether one job is production; always takes exactly one draw, so later draws do not shift."""
        draw = rng.random()
        return (queue is not None and queue in self.queues) or draw < self.fraction


def job_random(seed: int, key: str) -> random.Random:
    """A generator of its own for one job: its draws depend on the seed and the job, not on which jobs came before.

    So a slice of a trace gives each job the same production flag and deadline as the whole trace does.
    """
    return random.Random(f"{seed}:{key}")
