"""What one follower round wants of the queues, and the calls the follower made on a scheduler for it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any as AnyType

from follower.follow.text import vector_json
from rdl import units
from rdl.tree import Resources


@dataclass(frozen=True, slots=True)
class QueueTarget:
    """What one queue the follower manages should be this round.

    `kind` is `plan` (the plan queue), `default` (the plan's default queue) or `reservation`;
    `planned` is what the plan alone gives the queue, before scaling down for lost capacity.
    """

    path: str
    kind: str
    reservation: str | None
    guaranteed: Resources
    maximum: Resources | None
    planned: Resources

    def to_json(self) -> dict[str, AnyType]:
        return {"queue": self.path, "kind": self.kind, "reservation": self.reservation,
                "guaranteed": vector_json(self.guaranteed),
                "max": None if self.maximum is None else vector_json(self.maximum),
                "planned": vector_json(self.planned)}


@dataclass(frozen=True, slots=True)
class Round:
    """The queues the plan wants at one time, and what happened since the previous round."""

    time: datetime
    step: int
    plan_capacity: Resources  # the plan's capacity at this step
    capacity: Resources  # what the cluster really has (the plan's capacity unless told otherwise)
    reserved: Resources  # what the active reservations hold now, before scaling
    plan: QueueTarget
    default: QueueTarget
    reservations: tuple[QueueTarget, ...]  # by reservation name
    ended: tuple[str, ...]  # reservations whose window closed since the previous round
    scale: float  # applied to every reservation queue: 1.0 unless over-committed

    @property
    def overcommitted(self) -> bool:
        """Whether the reservations active now need more than the cluster really has."""
        return self.scale < 1.0

    @property
    def queues(self) -> tuple[QueueTarget, ...]:
        """Every queue the round wants, parents first: the plan queue, its default queue, the reservations."""
        return (self.plan, self.default, *self.reservations)

    def settings(self) -> tuple[tuple[str, Resources, Resources | None], ...]:
        """What a scheduler is told this round (path, guaranteed, max): equal settings, equal configuration."""
        return tuple((q.path, q.guaranteed, q.maximum) for q in self.queues)

    def to_json(self) -> dict[str, AnyType]:
        return {"time": units.format_instant(self.time), "step": self.step,
                "plan_capacity": vector_json(self.plan_capacity), "capacity": vector_json(self.capacity),
                "reserved": vector_json(self.reserved), "overcommitted": self.overcommitted,
                "scale": self.scale, "ended": list(self.ended), "queues": [q.to_json() for q in self.queues]}


@dataclass(frozen=True, slots=True)
class Action:
    """One call the follower made on the scheduler: `create`, `set`, `move`, `kill`, `remove`, `scale`, `replan`."""

    kind: str
    queue: str
    application: str | None = None
    detail: str = ""

    def __str__(self) -> str:
        subject = self.queue if self.application is None else f"{self.application} in {self.queue}"
        return f"{self.kind} {subject}" + (f": {self.detail}" if self.detail else "")
