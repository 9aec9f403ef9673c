"""A short account of a reservation: its window, its work, its atoms and its critical path."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any as AnyType

from rdl import units
from rdl.graph import critical_path
from rdl.tree import Any, Atom, Expr, Reservation, Window, atoms
from rdl.validate import Context


@dataclass(frozen=True, slots=True)
class Summary:
    name: str
    user: str | None
    queue: str | None
    start: datetime
    end: datetime | None
    work_seconds: float
    atoms: int
    critical_path_seconds: int | None
    critical_path: tuple[str, ...]
    every: float | None

    def to_json(self) -> dict[str, AnyType]:
        return {
            "name": self.name, "user": self.user, "queue": self.queue,
            "window": {"start": units.format_instant(self.start),
                       "end": units.format_instant(self.end) if self.end else None},
            "work_bundle_hours": round(self.work_seconds / 3600, 6),
            "atoms": self.atoms,
            "critical_path": {"seconds": self.critical_path_seconds, "atoms": list(self.critical_path)},
            "every": units.format_duration(self.every) if self.every else None,
        }


def least_work(node: Expr) -> float:
    """Bundle-seconds of work the expression needs at the least (`any` counts its lightest alternative)."""
    if isinstance(node, Atom):
        return node.work
    if isinstance(node, Any):
        return min(least_work(child) for child in node.children)
    return sum(least_work(child) for child in node.children)


def span(node: Expr, arrival: datetime) -> tuple[datetime, datetime | None]:
    """Where the expression may run: its outermost windows' hull, open-ended (None) where a piece has none."""
    if isinstance(node, Window):
        return (node.start.resolve(arrival) if node.start is not None else arrival), node.end.resolve(arrival)
    if isinstance(node, Atom):
        return arrival, None
    parts = [span(child, arrival) for child in node.children]
    ends = [end for _, end in parts]
    return min(start for start, _ in parts), None if None in ends else max(e for e in ends if e is not None)


def summarize(reservation: Reservation, context: Context) -> Summary:
    """What `rayon check` prints for a valid reservation."""
    arrival = reservation.arrival_at(context.now)
    expr = reservation.expr
    start, end = span(expr, arrival)
    path = critical_path(expr, context.steps)
    return Summary(
        name=reservation.name, user=reservation.user, queue=reservation.queue, start=start, end=end,
        work_seconds=least_work(expr), atoms=len(atoms(expr)),
        critical_path_seconds=path.steps * context.step if path else None,
        critical_path=path.atoms if path else (), every=reservation.every,
    )
