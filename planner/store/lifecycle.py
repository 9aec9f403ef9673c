"""The plan's life after submission: the clock moving on (expiry), capacity changes, and MILP re-planning.

Each step works inside a transaction the Store holds (or, for the solver, on a snapshot of the
plan) and returns what the Store commits and reports; the cached planner is never touched here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import replace as replaced
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.admission import Planner
from planner.agents.registry import Agent
from planner.core.decision import Reason
from planner.core.plan import Plan, capacity_over_time, window_cluster
from planner.replan import adapt
from planner.store import schema, series
from planner.store.errors import StoreError
from planner.store.records import AdvanceReport, CapacityReport, ReplanOutcome, parse_stored
from planner.store.writes import Rows, utcnow
from rdl import units
from rdl.cluster import CapacityChange, Cluster, parse_cluster
from rdl.errors import RDLErrors, did_you_mean
from rdl.shape import step_floor
from rdl.tree import Resources

REPLAN_LEAST_SECONDS = 0.5  # a re-planning attempted again after a conflict needs at least this much of the limit
REPLAN_SOLVE_SHARE = 0.8  # of a replan command's time limit for the solver; the rest for re-admitting and writing
REPLAN_ATTEMPTS = 3  # re-plannings solved on a snapshot that another writer changed before they could commit


def aware(value: datetime, what: str) -> None:
    """Refuse a time without a zone (`what` names it in the error)."""
    if value.tzinfo is None:
        raise StoreError("input", f"{what} must be a time with a zone, got {value.isoformat()}",
                         "write ISO-8601 with a zone, such as 2026-11-23T06:00:00Z")


# -- the clock ----------------------------------------------------------------------------------------------------

def expire(rows: Rows, cluster: Cluster, to: datetime, actor: str | None) -> AdvanceReport:
    """Move the stored clock to `to` (never back; any distance: the plan's window rolls with it) and expire
    whoever has ended by then. `cluster`: the stored cluster file (lease rows count steps from its `start`)."""
    connection, previous = rows.connection, units.read_instant(rows.meta["now"])
    if not units.EARLIEST <= to < units.LATEST:
        raise StoreError("input", f"the plan's clock cannot move to {units.format_instant(to)}", units.TIME_RANGE)
    if to < previous:
        raise StoreError("input", f"the plan's clock is at {units.format_instant(previous)} and never "
                         f"moves back (asked for {units.format_instant(to)})", "give a time at or after the clock")
    table = schema.reservations
    ended = step_floor(cluster.start, to, cluster.step)
    running = sa.exists().where(schema.leases.c.reservation_id == table.c.id, schema.leases.c.end_step > ended)
    found = [row for row in connection.execute(sa.select(table.c.id, table.c.name, table.c.rdl, table.c.submitted)
                                               .where(table.c.state == "accepted", ~running).order_by(table.c.id))
             if not series.goes_on_after(parse_stored(row.rdl, row.name), row.submitted, to)]
    version = rows.bump()
    schema.write_meta(connection, {"now": units.format_instant(to), "rebuild_version": str(version)})
    rows.clock = to
    expired = tuple(row.name for row in found)
    if found:
        connection.execute(table.update().where(table.c.id.in_([row.id for row in found]))
                           .values(state="expired", updated=utcnow(), version=version))
    for name in expired:
        rows.log("advance", actor, name, None, None, None,
                 {"reservation": name, "state": "expired", "now": units.format_instant(to)})
    return AdvanceReport(previous, to, expired)  # the caller logs it, once the series have gone on (series.py)


def moving_clock(report: AdvanceReport) -> Callable[[Planner], None]:
    """The change to a cached planner that an advance made: the expired ones gone, the clock and window moved."""

    def move(planner: Planner) -> None:
        for name in report.expired:
            planner.plan.remove(name)
        planner.advance(report.now)

    return move


# -- capacity changes ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckedChange:
    """A checked capacity change: the whole new vector, and the cluster file and cluster with the change appended."""

    at: datetime
    capacity: Resources
    text: str
    cluster: Cluster


@dataclass(frozen=True)
class Adapted:
    """A capacity change worked out: the report, and a trial planner over the adapted plan."""

    report: CapacityReport
    planner: Planner


def check_capacity(connection: Connection, meta: dict[str, str], cluster: Cluster, at: datetime,
                   capacity: Mapping[str, float | str]) -> CheckedChange:
    """A capacity change checked against the cluster and the clock, and appended to the stored cluster file."""
    given = _capacity_vector(cluster, capacity)
    now = units.read_instant(meta["now"])
    if at < now:
        raise StoreError("input", f"a capacity change at {units.format_instant(at)} is before the "
                         f"plan's clock, {units.format_instant(now)}", "changes apply from the clock on")
    whole = Resources.of({**dict(adapt.capacity_at(cluster, at).items()), **given})
    row = connection.execute(sa.select(schema.cluster.c.yaml, schema.cluster.c.source)).one()
    text, changed = _changed_cluster(row.yaml, row.source, cluster, CapacityChange(at, whole))
    return CheckedChange(at, whole, text, changed)


def adapt_to(connection: Connection, planner: Planner, change: CheckedChange, agent: str | Agent,
             dry_run: bool) -> Adapted:
    """Adapt a trial copy of `planner`'s plan to a checked capacity change (`planner` itself is untouched)."""
    table = schema.reservations
    acceptance = list(connection.execute(sa.select(table.c.name).where(table.c.state == "accepted")
                                         .order_by(table.c.decided, table.c.id)).scalars())
    trial = Planner.over(planner.plan)  # adapting lays a copy over the new capacity: the cached plan stays as it is
    window = window_cluster(change.cluster, planner.plan.now)  # the plan's window over the changed cluster file
    moves = trial.adapt(capacity_over_time(window, planner.plan.clock), acceptance, agent, window)
    priorities = {name: planner.plan.accepted[name].reservation.priority for name in moves.affected}
    vector = ", ".join(f"{k}: {units.format_quantity(k, v)}" for k, v in change.capacity.items())
    reasons = {name: _dropped_reason(name, change.at, vector, priorities[name],
                                     adapt.started(planner.plan, planner.plan.accepted[name]))
               for name in moves.dropped}
    missed = {(name, index): _missed_reason(name, index, change.at, vector, priorities[name])
              for name, lost in moves.missed.items() for index in lost}
    return Adapted(CapacityReport(change.at, change.capacity, moves, reasons, priorities, dry_run, missed), trial)


def _changed_cluster(text: str, source: str, cluster: Cluster, change: CapacityChange) -> tuple[str, Cluster]:
    """The stored cluster file with the change appended, and the cluster it now describes."""
    expected = tuple(sorted((*cluster.changes, change), key=lambda c: c.at))
    for candidate in adapt.appended_texts(text, adapt.change_entry(change.at, change.capacity)):
        try:
            changed = parse_cluster(candidate, source)
        except RDLErrors:
            continue
        if changed.changes == expected and changed == replaced(cluster, changes=expected):
            return candidate, changed
    raise StoreError("input", f"the capacity change could not be added to the stored cluster file `{source}`",
                     "re-initialise the plan from a cluster file that lists the change under `changes:`")


def _capacity_vector(cluster: Cluster, capacity: Mapping[str, float | str]) -> dict[str, float]:
    """A capacity change's resources, checked against the cluster; every problem named in one error."""
    names = cluster.resource_names
    if not capacity:
        raise StoreError("input", "the capacity change names no resource",
                         f"give one or more of {', '.join(names)}, such as `{{{names[0]}: ...}}`")
    values: dict[str, float] = {}
    problems: list[str] = []
    hints: list[str] = []
    for name, value in capacity.items():
        if name not in names:
            problems.append(f"the cluster has no resource `{name}` (it has {', '.join(names)})")
            hint = did_you_mean(name, names)
            if hint:
                hints.append(hint)
            continue
        quantity: float | None = None
        if isinstance(value, str):
            try:
                quantity = units.parse_quantity(name, value.strip())
            except ValueError as exc:
                problems.append(f"`{name}`: {exc}")
                continue
        elif isinstance(value, int | float) and not isinstance(value, bool):
            quantity = float(value)
        if quantity is None or not math.isfinite(quantity) or quantity < 0:  # 0: an outage, as in `changes:`
            problems.append(f"`{name}` must be a quantity of zero or more, got `{value}`")
            continue
        values[name] = quantity
    if problems:
        raise StoreError("input", "; ".join(problems), "; ".join(hints) or None)
    return values


def _dropped_reason(name: str, at: datetime, vector: str, priority: int, running: bool) -> Reason:
    """Why adapting to a capacity change dropped a reservation."""
    where = "it is running, so it cannot move" if running else "no other place in its window fits beside the " \
        "reservations kept"
    return Reason("capacity", f"dropped by the capacity change at {units.format_instant(at)} to {{{vector}}}: its "
                  f"leases no longer fit under the new capacity and {where} (reservations are dropped lowest "
                  f"priority first, the most recently accepted first among equals, and only as many as needed; "
                  f"`{name}` has priority {priority})")


def _missed_reason(name: str, index: int, at: datetime, vector: str, priority: int) -> Reason:
    """Why adapting to a capacity change dropped one instance of a series, and not the series."""
    return Reason("capacity", f"instance {index} of `{name}` dropped by the capacity change at "
                  f"{units.format_instant(at)} to {{{vector}}}: no place in its own period fits beside the "
                  f"reservations kept (lowest priority first; `{name}` has priority {priority}); the series goes on, "
                  "each instance its own decision")


# -- re-planning --------------------------------------------------------------------------------------------------

def reoptimise(plan: Plan, time_limit: float | None, backend: str | None, gap: float | None) -> ReplanOutcome:
    """Re-optimise a snapshot of the plan in place with the MILP; running reservations stay where they are."""
    # Imported here so that the MILP stack loads only when a plan is re-planned.
    from planner.agents.milp.agent import DEFAULT_GAP, DEFAULT_TIME_LIMIT
    from planner.agents.milp.solvers import DEFAULT_BACKEND
    from planner.replan.optimise import replan

    backend = backend or DEFAULT_BACKEND
    before = dict(plan.accepted)
    running = {name: a for name, a in plan.accepted.items() if adapt.started(plan, a)}
    for name in running:
        del plan.accepted[name]  # out of the model, but their use stays in the plan
    report = replan(plan, None, backend, DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
                    DEFAULT_GAP if gap is None else gap)
    plan.accepted.update(running)
    return ReplanOutcome(report.status, backend, report.seconds,
                         {name: tuple(plan.accepted[name].allocations) for name in report.moved},
                         {name: tuple(before[name].allocations) for name in report.moved},
                         tuple(running), report.changes_before, report.changes_after)
