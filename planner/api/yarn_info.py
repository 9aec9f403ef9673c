"""YARN's ReservationInfo of a stored reservation, as the dialect's `list` answers it (planner/api/yarn.py): its
definition in YARN's form (or its window and RDL when that form cannot express it), and what it holds over time."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any as AnyType

from planner.core.compile import Clock
from planner.core.plan import Allocation
from planner.store.records import Record
from rdl.forms import yarn as yarn_form
from rdl.forms.yarn_read import decode_name
from rdl.tree import Reservation, Window


def info(record: Record, clock: Clock, include: bool) -> dict[str, AnyType]:
    """One reservation as YARN's ReservationInfo; with the RDL text when YARN's form cannot express it."""
    reservation = record.reservation()
    data: dict[str, AnyType] = {"acceptance-time": epoch_ms(record.decided), "user": record.user or "",
                                "reservation-id": record.name}
    try:
        data["reservation-definition"] = yarn_form.to_yarn(reservation)["reservation-definition"]
        if reservation.body.name is not None:  # YARN's `reservation-name`; else the reservation's own name
            data["reservation-definition"]["reservation-name"] = decode_name(reservation.body.name)
    except ValueError:
        data["reservation-definition"] = plain_definition(reservation, record, clock)
        data["rdl"] = record.rdl
    if include:
        data["resource-allocations"] = [
            {"resource": {"memory": round(held.get("memory", 0.0)), "vCores": round(held.get("vcores", 0.0))},
             "startTime": epoch_ms(clock.at(start)), "endTime": epoch_ms(clock.at(end))}
            for start, end, held in totals(record.allocations)]
    return data


def totals(allocations: Iterable[Allocation]) -> list[tuple[int, int, dict[str, float]]]:
    """What a reservation holds over time, as YARN lists it: one (start, end, resources) per stretch of steps in
    which its total stays the same, in time order (not one entry per lease)."""
    changes: dict[int, dict[str, float]] = {}
    for allocation in allocations:
        for step, sign in ((allocation.start, 1.0), (allocation.end, -1.0)):
            at = changes.setdefault(step, {})
            for name, value in allocation.resources().items():
                at[name] = at.get(name, 0.0) + sign * value
    stretches: list[tuple[int, int, dict[str, float]]] = []
    held: dict[str, float] = {}
    steps = sorted(changes)
    for step, following in itertools.pairwise(steps):
        held = {name: held.get(name, 0.0) + changes[step].get(name, 0.0) for name in held.keys() | changes[step]}
        if not any(value > 1e-9 for value in held.values()):
            continue
        if stretches and stretches[-1][1] == step and stretches[-1][2] == held:
            stretches[-1] = (stretches[-1][0], following, held)
        else:
            stretches.append((step, following, dict(held)))
    return stretches


def window_of(reservation: Reservation, record: Record, clock: Clock) -> tuple[datetime, datetime]:
    """A stored reservation's arrival and deadline (the plan's end when it names none)."""
    arrival = reservation.arrival_at(record.submitted)
    if reservation.deadline is not None:
        return arrival, reservation.deadline.resolve(arrival)
    if isinstance(reservation.body, Window):
        return arrival, reservation.body.end.resolve(arrival)
    return arrival, clock.at(clock.steps)


def plain_definition(reservation: Reservation, record: Record, clock: Clock) -> dict[str, AnyType]:
    """What YARN's definition can say of a reservation it cannot express: its window, name and priority."""
    arrival, deadline = window_of(reservation, record, clock)
    return {"arrival": epoch_ms(arrival), "deadline": epoch_ms(deadline), "reservation-name": record.name,
            "priority": -record.priority, "reservation-requests": {"reservation-request": []}}


def epoch_ms(value: datetime) -> int:
    """An instant as YARN's epoch milliseconds."""
    return (value - yarn_form.EPOCH) // timedelta(milliseconds=1)
