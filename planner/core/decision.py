"""Decision records: what the planner answers to every submission (spec: decisions.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any as AnyType

from planner.core.compile import Clock
from planner.core.plan import Allocation
from rdl import units

REASON_CODES = ("capacity", "policy", "window", "invalid", "timeout")


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a reservation was rejected: a code from the spec, the piece, a sentence with numbers."""

    code: str
    message: str
    atom: str | None = None
    earliest_deadline: datetime | None = None

    def to_json(self) -> dict[str, AnyType]:
        data: dict[str, AnyType] = {"code": self.code}
        if self.atom is not None:
            data["atom"] = self.atom
        data["message"] = self.message
        if self.earliest_deadline is not None:
            data["earliest_deadline"] = units.format_instant(self.earliest_deadline)
        return data


@dataclass(frozen=True, slots=True)
class Decision:
    """Accepted with its allocations, or rejected with a reason."""

    reservation: str
    accepted: bool
    allocations: tuple[Allocation, ...] = ()
    reason: Reason | None = None
    extra: dict[str, AnyType] = field(default_factory=dict, compare=False)

    def to_json(self, clock: Clock) -> dict[str, AnyType]:
        data: dict[str, AnyType] = {"reservation": self.reservation, "accepted": self.accepted}
        if self.accepted:
            data["allocations"] = [allocation_json(a, clock) for a in self.allocations]
        if self.reason is not None:
            data["reason"] = self.reason.to_json()
        data.update(self.extra)
        return data


def allocation_json(allocation: Allocation, clock: Clock) -> dict[str, AnyType]:
    data: dict[str, AnyType] = {
        "atom": allocation.atom,
        "start": units.format_instant(clock.at(allocation.start)),
        "end": units.format_instant(clock.at(allocation.end)),
        "bundles": allocation.bundles,
        "resources": {k: _number(v) for k, v in allocation.resources().items()},
    }
    if allocation.instance:
        data["instance"] = allocation.instance
    return data


def _number(value: float) -> int | float:
    return int(value) if value == int(value) else value
