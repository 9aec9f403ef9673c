"""Recurring reservations keep coming: as the plan's clock moves, each instance of an accepted series that comes
into the horizon is placed by the agent that accepted the series, against the plan as it then is.

An instance that does not fit is logged as its own rejected decision (with its reason; it keeps to its own
period, so no later deadline is offered) and the series goes on. Which instances come in is worked out from the
horizon before and after the move (the ones whose window now ends inside it), so each instance is decided exactly
once, whoever moves the clock and however far. A series can also be cut: cancelled from an instance on (`cut`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.admission import Planner
from planner.agents.registry import DEFAULT_AGENT, get_agent
from planner.core.compile import Clock, compile_reservation, series_instance
from planner.core.decision import Reason
from planner.core.plan import Accepted, Allocation, shifted
from planner.store import queries, schema
from planner.store.records import Record
from planner.store.rendering import Instants, allocation_json
from planner.store.writes import Rows, utcnow
from rdl.syntax.printer import format_reservation
from rdl.tree import Absolute, Reservation


@dataclass(frozen=True)
class InstanceDecision:
    """One instance of a series decided as it came into the horizon: placed (its allocations) or missed (why)."""

    reservation: str
    instance: int
    allocations: tuple[Allocation, ...] = ()  # on the plan's window
    reason: Reason | None = None

    @property
    def placed(self) -> bool:
        return self.reason is None


def entering(reservation: Reservation, submitted: datetime, before: Clock, after: Clock,
             resources: tuple[str, ...]) -> range:
    """Indices of the series' instances inside the horizon `after` that were not inside the horizon `before`."""
    had = compile_reservation(reservation, submitted, before, 0, resources)[-1].index
    has = compile_reservation(reservation, submitted, after, 0, resources)[-1].index
    return range(had + 1, has + 1)


def go_on(planner: Planner, before: Clock, agents: dict[str, str | None]) -> list[InstanceDecision]:
    """Place (in `planner`'s plan, already moved on) every instance that came into its horizon since `before`.

    `agents`: the agent that accepted each series (by reservation name; None: the default one).
    """
    plan = planner.plan
    decided: list[InstanceDecision] = []
    for name in recurring(planner):
        accepted = plan.accepted[name]
        agent = get_agent(agents.get(name) or DEFAULT_AGENT)
        for index in entering(accepted.reservation, accepted.submitted, before, plan.clock, plan.resources):
            one = series_instance(accepted.reservation, accepted.submitted, index)
            decision = Planner.over(plan).submit(replace(one, name=f"{name}#{index}"), agent, plan.now,
                                                  dry_run=True, validated=True)
            if not decision.accepted:
                reason = decision.reason or Reason("capacity", "no placement found")
                decided.append(InstanceDecision(name, index, reason=reason))
                continue
            placed = tuple(replace(a, instance=index) for a in decision.allocations)
            current = plan.remove(name)
            plan.add(Accepted(current.reservation, current.submitted, [*current.allocations, *placed]))
            decided.append(InstanceDecision(name, index, placed))
    return decided


def recurring(planner: Planner) -> list[str]:
    """The accepted reservations of the plan that recur, by name."""
    return [name for name, accepted in planner.plan.accepted.items() if accepted.reservation.every is not None]


def agents_of(connection: Connection, names: Iterable[str]) -> dict[str, str | None]:
    """The agent that accepted each named reservation."""
    table = schema.reservations
    wanted = list(names)
    if not wanted:
        return {}
    rows = connection.execute(sa.select(table.c.name, table.c.agent).where(table.c.name.in_(wanted))).all()
    return {row.name: row.agent for row in rows}


def write(rows: Rows, decided: list[InstanceDecision], window: int, instants: Instants,
          actor: str | None) -> None:
    """Write what the series did: new lease rows for placed instances, and a log row for every instance.

    `window`: the step of the store's axis at which the plan's window begins; `instants` render the store's axis.
    """
    table = schema.reservations
    for item in decided:
        entry: dict[str, object] = {"reservation": item.reservation, "instance": item.instance,
                                    "accepted": item.placed}
        if item.placed:
            allocations = shifted(list(item.allocations), window)
            row = rows.connection.execute(schema.FIND_RESERVATION, {"name": item.reservation}).one()
            schema.insert_leases(rows.connection, [(row.id, allocations)])
            rows.connection.execute(table.update().where(table.c.id == row.id)
                                    .values(updated=utcnow(), version=rows.version))
            entry["allocations"] = [allocation_json(a, instants) for a in allocations]
            rows.log("advance", actor, item.reservation, None, True, None, entry)
        else:
            assert item.reason is not None
            entry["reason"] = item.reason.to_json()
            rows.log("advance", actor, item.reservation, None, False, item.reason.to_json(), entry)


def first_from(reservation: Reservation, submitted: datetime, at: datetime) -> int:
    """The index of the series' first instance arriving at or after `at`."""
    assert reservation.every is not None
    first = reservation.arrival_at(submitted)
    index = max(0, math.ceil((at - first).total_seconds() / reservation.every))
    while index > 0 and reservation.instance_arrival(first, index - 1) >= at:  # `tz`: a day may be 23 or 25 hours
        index -= 1
    while reservation.instance_arrival(first, index) < at:
        index += 1
    return index


def goes_on_after(reservation: Reservation, submitted: datetime, at: datetime) -> bool:
    """Whether a recurring reservation has instances still to come at or after `at` (no `until`: for ever)."""
    if reservation.every is None:
        return False
    first = reservation.arrival_at(submitted)
    coming = reservation.instance_arrival(first, first_from(reservation, submitted, at))
    return reservation.repeats_at(first, coming)


def ended_before(reservation: Reservation, submitted: datetime, index: int) -> Reservation:
    """The series with no instance from `index` on: its `until` at that instance's arrival (or earlier, as it was)."""
    assert reservation.every is not None
    first = reservation.arrival_at(submitted)
    end = reservation.instance_arrival(first, index)
    if reservation.until is not None and reservation.until.resolve(first) <= end:
        return reservation
    return replace(reservation, until=Absolute(end))


def cut(rows: Rows, record: Record, reservation: Reservation, index: int, instants: Instants,
        actor: str | None) -> Record:
    """Write a series cancelled from instance `index` on: its text with the new end, the leases of the instances
    from `index` on gone, and a `cancel` log row naming what it freed; the record as it now stands."""
    table = schema.reservations
    row = rows.connection.execute(schema.FIND_RESERVATION, {"name": record.name}).one()
    rows.connection.execute(schema.leases.delete().where(schema.leases.c.reservation_id == row.id,
                                                         schema.leases.c.instance >= index))
    rows.connection.execute(table.update().where(table.c.id == row.id).values(
        rdl=format_reservation(reservation), updated=utcnow(), version=rows.version))
    freed = [allocation_json(a, instants) for a in record.allocations if a.instance >= index]
    rows.log("cancel", actor, record.name, None, True, None,
             {"reservation": record.name, "cancelled": True, "from_instance": index, "allocations": freed})
    (found,) = queries.records(rows.connection, table.c.name == record.name)
    return found
