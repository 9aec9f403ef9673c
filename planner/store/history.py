"""The store's past: reservations that ended long ago move out of the live tables, and the retention setting.

A reservation that has ended (expired, cancelled, rejected or dropped) stays in the live tables for one
horizon after it was submitted and after its last lease ended, so that `rayon list` still shows what
just happened and a rejected one can still be admitted again (`Store.readmit`); then it moves, with its
leases as one compact JSON text, to the history table, and the live tables stay the size of the live
plan however long the plan runs. The past instances of a live series move the same way, a horizon after they
ended (`archive_instances`): a history row of the series as it stands, state `accepted`, holding the leases
moved. The decision log and the history keep `retention` of plan time behind the clock (`forever` keeps
all), but for what a live reservation still needs: its log rows, and its past instances, by which the log replays
to the store (docs/decisions.md, "The history"). All of this happens whenever the clock moves (`Store.advance`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.core.plan import Allocation
from planner.store import schema
from planner.store.errors import StoreError
from planner.store.records import Record, record_of
from planner.store.writes import Rows
from rdl import units
from rdl.cluster import Cluster
from rdl.shape import step_floor
from rdl.tree import Resources

log = logging.getLogger("rayon.store")

FOREVER = "forever"
reservations, leases, history = schema.reservations, schema.leases, schema.history


@dataclass(frozen=True)
class Archived:
    """A reservation as it was when it moved to the history, and the plan's clock then."""

    record: Record
    archived: datetime


@dataclass(frozen=True)
class Swept:
    """What one move of the clock cleared: reservations moved to the history, and rows past the retention deleted."""

    archived: int = 0
    log_deleted: int = 0
    history_deleted: int = 0
    instances: dict[str, frozenset[int]] = field(default_factory=dict)  # past instances moved, by series


def retention_seconds(text: str) -> float | None:
    """A retention setting in seconds (None: `forever`); a bad one is a StoreError that says what is allowed."""
    value = text.strip()
    if value == FOREVER:
        return None
    try:
        seconds = units.parse_duration(value, "d")  # retentions are days and weeks
    except ValueError as exc:
        raise StoreError("input", f"a retention of `{value}` is not a duration: {exc}",
                         f"give a duration with a unit, such as `90d` or `12w`, or `{FOREVER}`") from exc
    if seconds <= 0:
        raise StoreError("input", f"a retention must be longer than nothing, got `{value}`",
                         f"give a positive duration, or `{FOREVER}` to keep everything")
    return seconds


def sweep(rows: Rows, cluster: Cluster, to: datetime, series: Sequence[str] = (), window: int = 0) -> Swept:
    """Move what ended a horizon before `to` to the history, and so the past instances of the `series` (the plan's
    accepted recurring reservations) that ended a horizon before `to` (and before step `window` of the store's
    axis, where the plan's window begins: the plan's arrays never held them); then delete the log and history
    rows older than the retention (counted back from `to`), but for what a reservation still in the plan needs:
    every log row that decided it (a series that lives for years keeps its submission) and its past instances.
    Inside the write transaction that moves the clock."""
    archived = _archive(rows.connection, cluster, to)
    behind = step_floor(cluster.start, to - timedelta(seconds=cluster.horizon), cluster.step)
    instances = archive_instances(rows.connection, series, min(behind, window), to)
    try:
        seconds = retention_seconds(rows.meta.get("retention", FOREVER))
    except StoreError as exc:  # set before retentions were bounded (`3000000d`): keep all rather than stop the clock
        log.warning("the stored retention is not one any more (%s); keeping everything until it is set again", exc)
        seconds = None
    if seconds is None:
        return Swept(archived, instances=instances)
    oldest = to - timedelta(seconds=seconds)
    connection = rows.connection
    live = sa.select(reservations.c.name)  # a reservation still in the plan keeps every row that decided it
    logged = connection.execute(schema.log.delete().where(
        schema.log.c.clock < oldest,
        sa.or_(schema.log.c.reservation.is_(None), schema.log.c.reservation.not_in(live)))).rowcount
    kept = connection.execute(history.delete().where(
        history.c.archived < oldest, sa.or_(history.c.state != "accepted", history.c.name.not_in(live)))).rowcount
    return Swept(archived, int(logged or 0), int(kept or 0), instances)


def archive_instances(connection: Connection, series: Sequence[str], window: int,
                      to: datetime) -> dict[str, frozenset[int]]:
    """Move the instances of the named accepted series whose every lease ended by step `window` of the store's
    axis to the history: per series, a row of its record as it stands (state `accepted`) holding the leases moved,
    archived at `to`. The instances moved, by series."""
    if not series:
        return {}
    found = connection.execute(sa.select(reservations).where(
        reservations.c.state == "accepted", reservations.c.name.in_(list(series)),
        sa.exists().where(leases.c.reservation_id == reservations.c.id, leases.c.end_step <= window))
        .order_by(reservations.c.id)).all()
    if not found:
        return {}
    held = schema.read_leases(connection, [row.id for row in found])
    columns = [c.name for c in reservations.columns if c.name not in ("id", "version")]
    moved: dict[str, frozenset[int]] = {}
    for row in found:
        allocations = held.get(row.id, [])
        lasting = {a.instance for a in allocations if a.end > window}  # instances not wholly behind the window
        past = [a for a in allocations if a.instance not in lasting]
        if not past:
            continue
        connection.execute(history.insert(), [{**{name: getattr(row, name) for name in columns}, "archived": to,
                                                "leases": _compact(past)}])
        connection.execute(leases.delete().where(leases.c.reservation_id == row.id, leases.c.end_step <= window,
                                                 leases.c.instance.not_in(sorted(lasting))))
        moved[row.name] = frozenset(a.instance for a in past)
    return moved


def _archive(connection: Connection, cluster: Cluster, to: datetime) -> int:
    """Move every ended reservation submitted, and done with its leases, a horizon before `to`; how many moved."""
    cutoff = to - timedelta(seconds=cluster.horizon)
    lasting = sa.exists().where(leases.c.reservation_id == reservations.c.id,
                                leases.c.end_step > step_floor(cluster.start, cutoff, cluster.step))
    found = connection.execute(sa.select(reservations).where(
        reservations.c.state != "accepted", reservations.c.submitted <= cutoff, ~lasting)
        .order_by(reservations.c.id)).all()
    if not found:
        return 0
    ids = [row.id for row in found]
    held = schema.read_leases(connection, ids)
    columns = [c.name for c in reservations.columns if c.name not in ("id", "version")]
    connection.execute(history.insert(), [
        {**{name: getattr(row, name) for name in columns}, "archived": to, "leases": _compact(held.get(row.id, []))}
        for row in found])
    connection.execute(leases.delete().where(leases.c.reservation_id.in_(ids)))
    connection.execute(reservations.delete().where(reservations.c.id.in_(ids)))
    return len(found)


def _compact(allocations: list[Allocation]) -> str:
    """Leases as one JSON text: [atom, instance, start step, end step, bundles, bundle] each."""
    return json.dumps([[a.atom, a.instance, a.start, a.end, a.bundles, dict(a.bundle.items())]
                       for a in allocations], separators=(",", ":"))


def _expanded(text: str) -> list[Allocation]:
    """The leases of a history row back as allocations."""
    return [Allocation(atom, start, end, bundles, Resources.of(bundle), instance)
            for atom, instance, start, end, bundles, bundle in json.loads(text)]


def conditions(name: str | None = None, user: str | None = None, state: str | None = None) -> list[AnyType]:
    """The WHERE clauses for history rows."""
    found: list[AnyType] = []
    if name is not None:
        found.append(history.c.name == name)
    if user is not None:
        found.append(history.c.user == user)
    if state is not None:
        found.append(history.c.state == state)
    return found


def page(connection: Connection, where: list[AnyType], offset: int, limit: int) -> tuple[list[Archived], int]:
    """One page of history rows matching `where`, the latest archived first, and how many match in all."""
    total = connection.execute(sa.select(sa.func.count()).select_from(history).where(*where)).scalar_one()
    rows = connection.execute(sa.select(history).where(*where).order_by(history.c.id.desc())
                              .offset(offset).limit(limit)).all()
    return [Archived(record_of(row, _expanded(row.leases)), row.archived) for row in rows], int(total)


def latest(connection: Connection, name: str) -> Archived | None:
    """The named reservation's latest history row, or None."""
    found, _ = page(connection, conditions(name=name), 0, 1)
    return found[0] if found else None
