"""Reads the API needs that the store does not offer yet: one page of reservations, an owner, the log by owner.

`Store.list` reads every matching reservation with its leases, and an unknown name makes `Store.get`
list every name to suggest a close one (to anybody, whoever owns them); a server answering many
callers needs a page at a time, and suggestions only among the caller's own. These are plain
read-only queries over the store's tables (planner/store/schema.py), in one snapshot each; they
never take the store's writer lock, so readers never wait for submissions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.store import schema
from planner.store.facade import LogEntry, Record, Store, StoreError
from rdl.cluster import Cluster
from rdl.shape import step_ceil, step_floor

reservations, leases, log = schema.reservations, schema.leases, schema.log
_OWNER = sa.select(reservations.c.user, reservations.c.state).where(reservations.c.name == sa.bindparam("name"))


@dataclass(frozen=True, slots=True)
class Owner:
    """Who owns a stored reservation, and its state."""

    user: str | None
    state: str


@contextlib.contextmanager
def reading(store: Store) -> Iterator[Connection]:
    """One read-only snapshot of the store; database failures become StoreErrors, as in the store."""
    try:
        with schema.transaction(store.engine, write=False) as connection:
            yield connection
    except sa.exc.DBAPIError as exc:
        raise StoreError("database", f"the plan store at {store.where} failed: {exc.orig}",
                         "is the database reachable?") from exc


def meta(store: Store) -> dict[str, str]:
    """The store's meta rows (plan id, version, clock), read without the store's lock."""
    with reading(store) as connection:
        if not schema.has_tables(connection):
            raise StoreError("uninitialised", f"the plan store at {store.where} holds no plan yet")
        return schema.read_meta(connection)


def owner(store: Store, name: str) -> Owner | None:
    """The owner and state of the named reservation, or None if there is none."""
    return meta_and_owner(store, name)[1]


def meta_and_owner(store: Store, name: str | None) -> tuple[dict[str, str], Owner | None]:
    """The meta rows and the named reservation's owner (None: no such reservation, or no name), in one snapshot."""
    with reading(store) as connection:
        try:
            values = schema.read_meta(connection)
        except sa.exc.OperationalError as exc:  # the tables went away: the store was emptied under the server
            raise StoreError("uninitialised", f"the plan store at {store.where} holds no plan") from exc
        if name is None:
            return values, None
        row = connection.execute(_OWNER, {"name": name}).first()
    return values, None if row is None else Owner(row.user, row.state)


def names(store: Store, user: str | None) -> list[str]:
    """Names of the user's reservations (every reservation's when `user` is None)."""
    query = sa.select(reservations.c.name)
    if user is not None:
        query = query.where(reservations.c.user == user)
    with reading(store) as connection:
        return list(connection.execute(query).scalars())


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


def page(store: Store, cluster: Cluster, *, user: str | None = None, state: str | None = None,
         start: datetime | None = None, end: datetime | None = None, names_in: list[str] | None = None,
         queue: str | None = None, offset: int = 0, limit: int = 100, with_leases: bool = True) -> Page:
    """One page of stored reservations in decision order, with the number matching in all.

    Without leases, each record's allocations are left empty and `holdings` says what they add up
    to: a reservation of hundreds of leases costs one row instead of hundreds.
    """
    conditions = _conditions(cluster, user, state, start, end, names_in, queue)
    with reading(store) as connection:
        total = connection.execute(sa.select(sa.func.count()).select_from(reservations).where(*conditions)).scalar_one()
        ids = sa.select(reservations.c.id).where(*conditions).order_by(reservations.c.id).offset(offset).limit(limit)
        rows = connection.execute(sa.select(reservations).where(reservations.c.id.in_(ids.scalar_subquery()))
                                  .order_by(reservations.c.id)).all()
        row_ids = [row.id for row in rows]
        held = schema.read_leases(connection, row_ids) if with_leases else {}
        sums = {} if with_leases else _holdings(connection, row_ids)
    records = [_record(row, held.get(row.id, [])) for row in rows]
    return Page(records, int(total), {row.name: sums[row.id] for row in rows if row.id in sums})


def _holdings(connection: Connection, ids: list[int]) -> dict[int, Holding]:
    """Per reservation id: its leases' first start, last end and count."""
    query = sa.select(leases.c.reservation_id, sa.func.min(leases.c.start_step), sa.func.max(leases.c.end_step),
                      sa.func.count()).where(leases.c.reservation_id.in_(ids)).group_by(leases.c.reservation_id)
    return {row[0]: Holding(row[1], row[2], row[3]) for row in connection.execute(query)}


def _conditions(cluster: Cluster, user: str | None, state: str | None, start: datetime | None, end: datetime | None,
                names_in: list[str] | None, queue: str | None) -> list[AnyType]:
    """The WHERE clauses of a page (the time range as the store reads it: a lease inside [start, end))."""
    conditions: list[AnyType] = []
    if user is not None:
        conditions.append(reservations.c.user == user)
    if state is not None:
        conditions.append(reservations.c.state == state)
    if names_in is not None:
        conditions.append(reservations.c.name.in_(names_in))
    if queue is not None:
        conditions.append(reservations.c.queue == queue)
    if start is not None or end is not None:
        inside = [leases.c.reservation_id == reservations.c.id]
        if start is not None:
            inside.append(leases.c.end_step > step_floor(cluster.start, start, cluster.step))
        if end is not None:
            inside.append(leases.c.start_step < step_ceil(cluster.start, end, cluster.step))
        conditions.append(sa.exists().where(*inside))
    return conditions


def _record(row: sa.Row[AnyType], allocations: list[AnyType]) -> Record:
    return Record(row.name, row.rdl, row.user, row.queue, row.value, row.priority, row.submitted, row.state,
                  row.agent, row.decided, row.updated, schema.reason_from_json(row.reason), tuple(allocations))


def log_entries(store: Store, *, limit: int = 100, before: int | None = None, reservation: str | None = None,
                visible_to: str | None = None) -> list[LogEntry]:
    """The latest `limit` log entries (older than id `before`), oldest first.

    With `visible_to`, only what that user may read: entries the user made, and what others (admins)
    did to the user's reservations, such as cancelling or moving them; not another user's attempt to
    submit under a name the user holds.
    """
    query = sa.select(log).order_by(log.c.id.desc()).limit(limit)
    if before is not None:
        query = query.where(log.c.id < before)
    if reservation is not None:
        query = query.where(log.c.reservation == reservation)
    if visible_to is not None:
        own = sa.select(reservations.c.name).where(reservations.c.user == visible_to)
        query = query.where(sa.or_(log.c.actor == visible_to,
                                   sa.and_(log.c.reservation.in_(own), log.c.action != "submit")))
    with reading(store) as connection:
        rows = connection.execute(query).all()
    return [LogEntry(**row._mapping) for row in reversed(rows)]
