"""What the store hands out: stored reservations and log rows as records, and reports of what a change did."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any as AnyType

import sqlalchemy as sa

from planner.core.compile import Clock
from planner.core.decision import Decision, Reason, allocation_json
from planner.core.plan import Allocation
from planner.replan import adapt
from planner.store import schema
from rdl import units
from rdl.syntax.parser import parse_text
from rdl.tree import Reservation, Resources


@dataclass(frozen=True, slots=True)
class Record:
    """One stored reservation: canonical RDL text, who and when, its state, why, and the leases it holds."""

    name: str
    rdl: str
    user: str | None
    queue: str | None
    value: float
    priority: int
    submitted: datetime
    state: str
    agent: str | None
    decided: datetime
    updated: datetime
    reason: Reason | None = None
    allocations: tuple[Allocation, ...] = field(default=(), repr=False)

    def reservation(self) -> Reservation:
        """The reservation, parsed back from its canonical text."""
        return parse_stored(self.rdl, self.name)

    def decision(self) -> Decision:
        """The decision record as it stands now (a cancelled reservation is no longer accepted)."""
        accepted = self.state == "accepted"
        return Decision(self.name, accepted, self.allocations if accepted else (), self.reason,
                        extra={"agent": self.agent, "state": self.state})


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One row of the append-only decision log."""

    id: int
    time: datetime
    actor: str | None
    action: str
    reservation: str | None
    request: str | None
    accepted: bool | None
    reason_code: str | None
    reason: dict[str, AnyType] | None
    decision: dict[str, AnyType] | None
    clock: datetime | None = None  # the plan's clock when it was written (None: before schema version 2)


@dataclass(frozen=True)
class AdvanceReport:
    """What moving the plan's clock did: from when to when, and who expired."""

    previous: datetime
    now: datetime
    expired: tuple[str, ...] = ()
    placed: tuple[tuple[str, int], ...] = ()  # instances of series that came into the horizon and were placed
    missed: tuple[tuple[str, int, Reason], ...] = ()  # ... and those that did not fit, with why
    archived: int = 0  # reservations that ended a horizon ago, moved to the history (planner/store/history.py)
    pruned: int = 0  # log and history rows older than the retention, deleted

    def to_json(self) -> dict[str, AnyType]:
        data: dict[str, AnyType] = {"from": units.format_instant(self.previous), "to": units.format_instant(self.now),
                                    "expired": list(self.expired)}
        if self.placed or self.missed:
            data["placed"] = [{"reservation": name, "instance": index} for name, index in self.placed]
            data["missed"] = [{"reservation": name, "instance": index, "reason": reason.to_json()}
                              for name, index, reason in self.missed]
        if self.archived or self.pruned:
            data["archived"], data["pruned"] = self.archived, self.pruned
        return data


@dataclass(frozen=True)
class CapacityReport:
    """A capacity change and how the plan adapted: who stayed, who moved, who was dropped and why."""

    at: datetime
    capacity: Resources  # the whole vector from `at` on (resources not named keep what they had)
    adaptation: adapt.Adaptation
    reasons: dict[str, Reason] = field(default_factory=dict)  # why each dropped one was dropped
    priorities: dict[str, int] = field(default_factory=dict)  # of every affected reservation
    dry_run: bool = False
    missed: dict[tuple[str, int], Reason] = field(default_factory=dict)  # why each instance dropped alone was

    def dropped_instances(self, clock: Clock) -> list[dict[str, AnyType]]:
        """The instances of series dropped alone (the series goes on), each a rejected decision of its own."""
        previous = self.adaptation.previous
        return [{"reservation": name, "instance": index, "priority": self.priorities.get(name),
                 "reason": reason.to_json(),
                 "previous": [allocation_json(a, clock) for a in previous.get(name, ()) if a.instance == index]}
                for (name, index), reason in self.missed.items()]

    def to_json(self, clock: Clock) -> dict[str, AnyType]:
        moves = self.adaptation
        return {
            "dry_run": self.dry_run,
            "change": {"at": units.format_instant(self.at), "capacity": adapt.vector_json(self.capacity)},
            "affected": list(moves.affected),
            "kept": list(moves.kept),
            "moved": [{"reservation": name, "priority": self.priorities.get(name),
                       "allocations": [allocation_json(a, clock) for a in allocations],
                       "previous": [allocation_json(a, clock) for a in moves.previous.get(name, ())]}
                      for name, allocations in moves.moved.items()],
            "dropped": [{"reservation": name, "priority": self.priorities.get(name),
                         "reason": self.reasons[name].to_json(),
                         "previous": [allocation_json(a, clock) for a in moves.previous.get(name, ())]}
                        for name in moves.dropped],
            "dropped_instances": self.dropped_instances(clock),
        }


@dataclass(frozen=True)
class ReplanOutcome:
    """What re-planning the stored plan did: the solver's word and who moved (nothing changes if nobody did)."""

    status: str
    backend: str
    seconds: float
    moved: dict[str, tuple[Allocation, ...]] = field(default_factory=dict)
    previous: dict[str, tuple[Allocation, ...]] = field(default_factory=dict)
    running: tuple[str, ...] = ()  # started before the clock, so left where they are
    changes_before: int = 0  # allocation changes (bundles started or stopped) of those it could move, before and after
    changes_after: int = 0

    def to_json(self, clock: Clock) -> dict[str, AnyType]:
        return {"status": self.status, "solver": self.backend, "seconds": round(self.seconds, 3),
                "changed": bool(self.moved), "running": list(self.running),
                "changes_before": self.changes_before, "changes_after": self.changes_after,
                "moved": [{"reservation": name, "allocations": [allocation_json(a, clock) for a in allocations],
                           "previous": [allocation_json(a, clock) for a in self.previous.get(name, ())]}
                          for name, allocations in self.moved.items()]}


@dataclass(frozen=True, slots=True)
class Owner:
    """Who owns a stored reservation, and its state."""

    user: str | None
    state: str


@dataclass(frozen=True, slots=True)
class Holding:
    """What a reservation's leases add up to, without the leases: steps [start, end) and how many allocations."""

    start: int
    end: int
    allocations: int


@dataclass
class Page:
    """Stored reservations of one page (with their leases, or only what they add up to) and the total matching."""

    records: list[Record]
    total: int
    holdings: dict[str, Holding]


def parse_stored(text: str, name: str) -> Reservation:
    """A stored reservation's canonical text parsed back into its tree."""
    return parse_text(text, f"<plan store: {name}>")[0]


def record_of(row: sa.Row[AnyType], allocations: list[Allocation]) -> Record:
    """A reservations row and its leases as a Record."""
    return Record(row.name, row.rdl, row.user, row.queue, row.value, row.priority, row.submitted, row.state,
                  row.agent, row.decided, row.updated, schema.reason_from_json(row.reason), tuple(allocations))
