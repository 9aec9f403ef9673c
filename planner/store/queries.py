"""Read-only queries over the store's tables, each within a snapshot the caller holds: records, pages, owners, the log.

`Store.list` reads every matching reservation with its leases; a server answering many callers
needs a page at a time (`page`), and suggestions among the caller's own names only (`names`).
None of these take the writer lock, so readers never wait for submissions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.store import driver, schema
from planner.store.records import Holding, LogEntry, Owner, Page, Record, record_of
from rdl.cluster import Cluster
from rdl.shape import step_ceil, step_floor

reservations, leases, log = schema.reservations, schema.leases, schema.log
_OWNER = sa.select(reservations.c.user, reservations.c.state).where(reservations.c.name == sa.bindparam("name"))


def state_of(connection: Connection, name: str) -> str | None:
    """The state of the named reservation, or None if there is none."""
    state = connection.execute(sa.select(reservations.c.state).where(reservations.c.name == name)).scalar()
    return None if state is None else str(state)


def owner(connection: Connection, name: str) -> Owner | None:
    """The owner and state of the named reservation, or None if there is none."""
    row = connection.execute(_OWNER, {"name": name}).first()
    return None if row is None else Owner(row.user, row.state)


@dataclass(frozen=True)
class Named:
    """A stored reservation's row id, owner and state, as a batch of submissions needs them."""

    id: int
    user: str | None
    state: str


def named(connection: Connection, wanted: Iterable[str]) -> dict[str, Named]:
    """The stored reservations of these names (one query for a whole batch), by name."""
    return {name: Named(row_id, user, state)
            for row_id, name, user, state in driver.named_rows(connection, reservations, sorted(set(wanted)))}


def names(connection: Connection, user: str | None) -> list[str]:
    """Names of the user's reservations (every reservation's when `user` is None)."""
    query = sa.select(reservations.c.name)
    if user is not None:
        query = query.where(reservations.c.user == user)
    return list(connection.execute(query).scalars())


def records(connection: Connection, *conditions: AnyType) -> list[Record]:
    """The reservations matching the conditions, with their leases, in decision order."""
    rows = connection.execute(sa.select(reservations).where(*conditions).order_by(reservations.c.id)).all()
    held = schema.read_leases(connection, sa.select(reservations.c.id).where(*conditions))
    return [record_of(row, held.get(row.id, [])) for row in rows]


def conditions(cluster: Cluster | None, user: str | None = None, state: str | None = None,
               start: datetime | None = None, end: datetime | None = None, names_in: list[str] | None = None,
               queue: str | None = None) -> list[AnyType]:
    """The WHERE clauses for reservations; `start`/`end` keep those holding a lease inside [start, end) (on
    `cluster`'s step grid, which only a time range needs)."""
    found: list[AnyType] = []
    if user is not None:
        found.append(reservations.c.user == user)
    if state is not None:
        found.append(reservations.c.state == state)
    if names_in is not None:
        found.append(reservations.c.name.in_(names_in))
    if queue is not None:
        found.append(reservations.c.queue == queue)
    if start is not None or end is not None:
        assert cluster is not None, "a time range needs the cluster's step grid"
        inside = [leases.c.reservation_id == reservations.c.id]
        if start is not None:
            inside.append(leases.c.end_step > step_floor(cluster.start, start, cluster.step))
        if end is not None:
            inside.append(leases.c.start_step < step_ceil(cluster.start, end, cluster.step))
        found.append(sa.exists().where(*inside))
    return found


def page(connection: Connection, where: list[AnyType], offset: int, limit: int, with_leases: bool) -> Page:
    """One page of the reservations matching `where`, in decision order, with the number matching in all.

    Without leases, each record's allocations are left empty and `holdings` says what they add up
    to: a reservation of hundreds of leases costs one row instead of hundreds.
    """
    total = connection.execute(sa.select(sa.func.count()).select_from(reservations).where(*where)).scalar_one()
    ids = sa.select(reservations.c.id).where(*where).order_by(reservations.c.id).offset(offset).limit(limit)
    rows = connection.execute(sa.select(reservations).where(reservations.c.id.in_(ids.scalar_subquery()))
                              .order_by(reservations.c.id)).all()
    row_ids = [row.id for row in rows]
    held = schema.read_leases(connection, row_ids) if with_leases else {}
    sums = {} if with_leases else _holdings(connection, row_ids)
    found = [record_of(row, held.get(row.id, [])) for row in rows]
    return Page(found, int(total), {row.name: sums[row.id] for row in rows if row.id in sums})


def log_entries(connection: Connection, limit: int | None, before: int | None = None,
                reservation: str | None = None, visible_to: str | None = None) -> list[LogEntry]:
    """The latest `limit` log entries (all without a limit; older than id `before`), oldest first.

    With `visible_to`, only what that user may read: entries the user made, and what others (admins)
    did to the user's reservations, such as cancelling or moving them; not another user's attempt to
    submit under a name the user holds.
    """
    query = sa.select(log).order_by(log.c.id.desc())
    if limit is not None:
        query = query.limit(limit)
    if before is not None:
        query = query.where(log.c.id < before)
    if reservation is not None:
        query = query.where(log.c.reservation == reservation)
    if visible_to is not None:
        own = sa.select(reservations.c.name).where(reservations.c.user == visible_to)
        query = query.where(sa.or_(log.c.actor == visible_to,
                                   sa.and_(log.c.reservation.in_(own), log.c.action != "submit")))
    rows = connection.execute(query).all()
    return [LogEntry(**row._mapping) for row in reversed(rows)]


def _holdings(connection: Connection, ids: list[int]) -> dict[int, Holding]:
    """Per reservation id: its leases' first start, last end and count."""
    query = sa.select(leases.c.reservation_id, sa.func.min(leases.c.start_step), sa.func.max(leases.c.end_step),
                      sa.func.count()).where(leases.c.reservation_id.in_(ids)).group_by(leases.c.reservation_id)
    return {row[0]: Holding(row[1], row[2], row[3]) for row in connection.execute(query)}
