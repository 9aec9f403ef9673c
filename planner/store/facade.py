"""The durable plan store: the cluster, every reservation and its leases, and an append-only decision log.

SQLite (one file) by default, PostgreSQL through a URL for several API servers on one plan.
Every decision is made inside one write transaction that holds the plan's writer lock, and is
committed before it is answered: two processes submitting at once never double-book capacity,
and an accepted reservation is stored with all its leases or not at all.

A Store keeps the plan it last read, tagged with the meta `plan_version` counter; every writer
bumps the counter and stamps the rows it changes with it, so a store catches up by re-reading
only the rows newer than its copy (or everything when `rebuild_version` says the base changed).

Choices: a dry run writes nothing, not even a log row. A submission under the name of an
accepted reservation is rejected (`invalid`) and only logged; under the name of a rejected,
cancelled, expired or dropped one it replaces that row (the log keeps the history). The plan's
clock (`now`, the default submission time) is kept in meta and starts at the cluster's start.

The plan's life after submission: `update` swaps a reservation for a new version only if the new
one fits the plan without the old one (else the old one stays as it was); `advance` moves the
clock forward, expiring reservations whose every lease has ended; `set_capacity` appends a capacity
change to the stored cluster file and adapts the plan to it (planner/replan/adapt.py: keep, move, and
only then drop, lowest priority first); `replan` re-optimises the accepted reservations with the
MILP and writes back those that moved. Each is one write transaction with its log rows. The
plan's origin stays at the cluster's start while the clock moves: leases are stored as steps from
the origin, and sliding it would shift every lease row, rewrite relative times in the cluster file,
and bring new instances of recurring reservations into the horizon, which would then need placing;
so the usable plan is [clock, cluster start + horizon), and the clock cannot pass the horizon's end.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import getpass
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replaced
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from planner.admission import Planner
from planner.agents.registry import DEFAULT_AGENT, Agent, get_agent
from planner.core.compile import Clock
from planner.core.decision import Decision, Reason, allocation_json
from planner.core.plan import Accepted, Allocation, Plan, capacity_over_time
from planner.replan import adapt
from planner.store import schema
from rdl import units
from rdl.cluster import CapacityChange, Cluster, parse_cluster
from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, RayonError, RDLErrors, did_you_mean
from rdl.shape import step_ceil, step_floor
from rdl.syntax.parser import parse_text
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation, Resources

STATES = schema.STATES
ACTIONS = schema.ACTIONS
SCHEMA_VERSION = schema.SCHEMA_VERSION
DEFAULT_STATE = Path("~/.local/state/rayon/plan.db")
# How the error for an empty store says to fill it; the command line may point at its own command.
INIT_COMMAND = "rayon init --cluster CLUSTER.yaml"  # what `rayon` calls it (planner/cli/store.py)
ERROR_CODES = ("uninitialised", "initialised", "schema", "unknown", "state", "input", "driver", "target", "database",
               "conflict")
INTERNAL_CODES = ("database", "conflict")  # not the user's input: the command exits 1
REPLAN_ATTEMPTS = 3  # re-plannings solved on a snapshot that another writer changed before they could commit


class StoreError(RayonError):
    """A plan store problem the user can act on: a code, what went wrong and where, and what to do."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message, code=code, hint=hint,
                         exit_code=EXIT_INTERNAL if code in INTERNAL_CODES else EXIT_BAD_INPUT)


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


@dataclass(frozen=True)
class AdvanceReport:
    """What moving the plan's clock did: from when to when, and who expired."""

    previous: datetime
    now: datetime
    expired: tuple[str, ...] = ()

    def to_json(self) -> dict[str, AnyType]:
        return {"from": units.format_instant(self.previous), "to": units.format_instant(self.now),
                "expired": list(self.expired)}


@dataclass(frozen=True)
class CapacityReport:
    """A capacity change and how the plan adapted: who stayed, who moved, who was dropped and why."""

    at: datetime
    capacity: Resources  # the whole vector from `at` on (resources not named keep what they had)
    adaptation: adapt.Adaptation
    reasons: dict[str, Reason] = field(default_factory=dict)  # why each dropped one was dropped
    priorities: dict[str, int] = field(default_factory=dict)  # of every affected reservation
    dry_run: bool = False

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


@dataclass
class _Cached:
    """The plan as of `version` of the plan `plan_id`, with a Planner over it."""

    plan_id: str
    version: int
    planner: Planner


def default_state_path() -> Path | str:
    """`$RAYON_STATE` (a file path or a database URL) if set, else `~/.local/state/rayon/plan.db`."""
    value = os.environ.get("RAYON_STATE", "").strip()
    if "://" in value:
        return value
    return Path(value or DEFAULT_STATE).expanduser()


def parse_stored(text: str, name: str) -> Reservation:
    """A stored reservation's canonical text parsed back into its tree."""
    return parse_text(text, f"<plan store: {name}>")[0]


class Store:
    """The plan store. Thread-safe; open one per process (`Store.open`), close it when done."""

    def __init__(self, engine: Engine, where: str):
        self.engine = engine
        self.where = where
        self._lock = threading.RLock()
        self._cache: _Cached | None = None
        self._cluster: tuple[tuple[str, str], Cluster] | None = None
        self._instant_memo: schema.Instants | None = None
        self._ready = False

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, target: str | Path | None = None, *, check_version: bool = True) -> Store:
        """Open the store at a path or URL (default: `default_state_path()`); checks its schema version."""
        url = schema.target_url(default_state_path() if target is None else target)
        where = (url.database or "") if url.get_backend_name() == "sqlite" else url.render_as_string(hide_password=True)
        store = cls(_engine(url), where)
        if check_version:
            with store._transaction(write=False) as connection:
                if schema.has_tables(connection):
                    store._check_schema(schema.read_meta(connection))
        return store

    def close(self) -> None:
        """Release the store's connections."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the plan --------------------------------------------------------------------------------

    def init(self, cluster_yaml: str, source_name: str = "<cluster>", force: bool = False) -> Cluster:
        """Start a new plan over the cluster file's text; an existing plan is discarded only with `force`."""
        parsed = parse_cluster(cluster_yaml, source_name)  # bad input fails before anything is written
        with self._lock, self._transaction(write=True) as connection:
            exists = schema.has_tables(connection)
            if exists and not force:
                raise self._already(connection)
            schema.create(connection, self._fresh_meta(parsed), replace=exists)
            connection.execute(schema.cluster.insert().values(id=1, yaml=cluster_yaml, source=source_name,
                                                              loaded=_utcnow()))
            self._cache, self._cluster, self._ready = None, None, True
        return parsed

    def cluster(self) -> Cluster:
        """The plan's cluster, parsed from the stored cluster file."""
        with self._lock, self._session(write=False) as (connection, meta):
            return self._cluster_of(connection, meta)

    def now(self) -> datetime:
        """The plan's clock: the default submission time (the cluster's start until it is advanced)."""
        with self._lock, self._session(write=False) as (_, meta):
            return units.parse_instant(meta["now"])

    def load_plan(self, now: datetime | None = None) -> Plan:
        """The plan as stored: the cluster's capacity and every accepted reservation's leases (a new object)."""
        with self._lock, self._session(write=False) as (connection, meta):
            return _copy_plan(self._planner(connection, meta).plan, now)

    # -- decisions -------------------------------------------------------------------------------

    def submit(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, actor: str | None = None,
               submitted: datetime | None = None, dry_run: bool = False, explain: bool = True) -> Decision:
        """Decide one reservation and commit the decision (reservation, leases, log row) before answering."""
        with self._lock:
            if self._cache is None and not dry_run:
                self.load_plan()  # read the whole plan before taking the writer lock, not while holding it
            with self._session(write=not dry_run) as (connection, meta):
                planner = self._planner(connection, meta)
                when = submitted or planner.plan.now
                # Decide without touching the cached plan: it learns of the reservation only once committed.
                decision = planner.submit(reservation, agent, when, dry_run=True, explain=explain)
                if dry_run:
                    return decision
                version = self._record(connection, meta, planner, reservation, decision, when, actor)
            if decision.accepted:
                accepted = Accepted(reservation, when, list(decision.allocations))
                self._advance_cache(version, lambda plan: plan.add(accepted))
            return decision

    def cancel(self, name: str, actor: str | None = None) -> Record:
        """Cancel an accepted reservation, freeing its capacity; returns its record (state `cancelled`)."""
        with self._lock:
            with self._session(write=True) as (connection, meta):
                state = self._state_of(connection, name)
                if state != "accepted":
                    raise StoreError("state", f"reservation `{name}` is {state}, so there is nothing to cancel",
                                     "only accepted reservations hold capacity")
                version = self._bump(connection, meta)
                connection.execute(schema.reservations.update().where(schema.reservations.c.name == name)
                                   .values(state="cancelled", updated=_utcnow(), version=version))
                (record,) = self._records(connection, schema.reservations.c.name == name)
                clock = _clock(self._cluster_of(connection, meta))
                freed = [schema.allocation_json(a, self._instants(clock)) for a in record.allocations]
                self._log(connection, "cancel", actor, name, None, True, None,
                          {"reservation": name, "cancelled": True, "allocations": freed})
            self._advance_cache(version, lambda plan: plan.remove(name))
            return record

    def update(self, name: str, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT,
               actor: str | None = None, dry_run: bool = False, submitted: datetime | None = None,
               explain: bool = True) -> Decision:
        """Swap an accepted reservation for a new version of it, if the new one fits the plan without the old one.

        Accepted: the row gets the new text and leases (one transaction). Rejected: the old version
        stays exactly as it was, and the answer is the rejection, with its code and reason. The new
        version is submitted at `submitted` (default: the plan's clock), as a new submission would be.
        Extra field of the answer: `previous` is `replaced` or `kept`.
        """
        if reservation.name != name:
            raise StoreError("input", f"the new version is named `{reservation.name}`, not `{name}`",
                             "an update keeps the reservation's name")
        with self._lock:
            if self._cache is None and not dry_run:
                self.load_plan()
            with self._session(write=not dry_run) as (connection, meta):
                state = self._state_of(connection, name)
                if state != "accepted":
                    raise StoreError("state", f"reservation `{name}` is {state}, so there is nothing to update",
                                     "only accepted reservations can be updated; submit it again instead")
                planner = self._planner(connection, meta)
                old = planner.plan.accepted[name]
                if adapt.started(planner.plan, old):
                    first = min(a.start for a in old.allocations)
                    raise StoreError("state", f"reservation `{name}` is running (since "
                                     f"{units.format_instant(planner.plan.clock.at(first))}), so it cannot be "
                                     "updated", "cancel it and submit what is left as a new reservation")
                trial = _planner_over(planner.plan.copy())
                trial.plan.remove(name)
                when = submitted or planner.plan.now
                decision = trial.submit(reservation, agent, when, dry_run=True, explain=explain)
                swapped = decision.accepted and not dry_run
                decision = replaced(decision, extra={**decision.extra, "previous": "replaced" if swapped else "kept"})
                if dry_run:
                    return decision
                version = self._record_update(connection, meta, planner.plan.clock, old, reservation, decision,
                                              when, actor)
            if decision.accepted:
                new = Accepted(reservation, when, list(decision.allocations))
                self._advance_cache(version, lambda plan: (plan.remove(name), plan.add(new)))
            return decision

    def advance(self, to: datetime, actor: str | None = None) -> AdvanceReport:
        """Move the plan's clock forward to `to` (never back); reservations whose every lease has ended expire."""
        _aware(to, "the new clock")
        with self._lock:
            if self._cache is None:
                self.load_plan()
            with self._session(write=True) as (connection, meta):
                cluster = self._cluster_of(connection, meta)
                previous = units.parse_instant(meta["now"])
                if to < previous:
                    raise StoreError("input", f"the plan's clock is at {units.format_instant(previous)} and never "
                                     f"moves back (asked for {units.format_instant(to)})",
                                     "give a time at or after the clock")
                if to > cluster.end:
                    raise StoreError("input", f"{units.format_instant(to)} is past the end of the plan's horizon, "
                                     f"{units.format_instant(cluster.end)}",
                                     "the plan's origin stays at the cluster's start; start a new plan for later")
                table = schema.reservations
                ended = step_floor(cluster.start, to, cluster.step)
                running = sa.exists().where(schema.leases.c.reservation_id == table.c.id,
                                            schema.leases.c.end_step > ended)
                rows = connection.execute(sa.select(table.c.id, table.c.name)
                                          .where(table.c.state == "accepted", ~running).order_by(table.c.id)).all()
                version = self._bump(connection, meta)
                schema.write_meta(connection, {"now": units.format_instant(to), "rebuild_version": str(version)})
                expired = tuple(row.name for row in rows)
                if rows:
                    connection.execute(table.update().where(table.c.id.in_([row.id for row in rows]))
                                       .values(state="expired", updated=_utcnow(), version=version))
                for name in expired:
                    self._log(connection, "advance", actor, name, None, None, None,
                              {"reservation": name, "state": "expired", "now": units.format_instant(to)})
                report = AdvanceReport(previous, to, expired)
                self._log(connection, "advance", actor, None, None, None, None, report.to_json())

            def move(plan: Plan) -> None:
                for name in expired:
                    plan.remove(name)
                plan.now = to

            self._advance_cache(version, move)
            return report

    def set_capacity(self, at: datetime, capacity: Mapping[str, float | str], actor: str | None = None,
                     dry_run: bool = False, agent: str | Agent = DEFAULT_AGENT) -> CapacityReport:
        """Change the cluster's capacity from `at` on (appended to the stored cluster file) and adapt the plan.

        `capacity` names some of the cluster's resources (numbers, memory in MiB, or text with units
        such as `1TiB`); the others keep what they have at `at`. Reservations over the new capacity
        stay if they fit, move within their windows if they can (`agent` re-places them), and only
        then are dropped, lowest priority first (planner/replan/adapt.py). A bad change is an error that
        changes nothing.
        """
        _aware(at, "the time of a capacity change")
        with self._lock:
            if self._cache is None and not dry_run:
                self.load_plan()
            with self._session(write=not dry_run) as (connection, meta):
                cluster = self._cluster_of(connection, meta)
                given = _capacity_vector(cluster, capacity)
                now = units.parse_instant(meta["now"])
                if at < now:
                    raise StoreError("input", f"a capacity change at {units.format_instant(at)} is before the "
                                     f"plan's clock, {units.format_instant(now)}", "changes apply from the clock on")
                if at >= cluster.end:
                    raise StoreError("input", f"a capacity change at {units.format_instant(at)} is past the plan's "
                                     f"horizon, which ends at {units.format_instant(cluster.end)}")
                whole = Resources.of({**dict(adapt.capacity_at(cluster, at).items()), **given})
                row = connection.execute(sa.select(schema.cluster.c.yaml, schema.cluster.c.source)).one()
                text, changed = self._changed_cluster(row.yaml, row.source, cluster, CapacityChange(at, whole))
                planner = self._planner(connection, meta)
                plan = adapt.with_capacity(planner.plan, changed, capacity_over_time(changed, planner.plan.clock))
                table = schema.reservations
                acceptance = list(connection.execute(sa.select(table.c.name).where(table.c.state == "accepted")
                                                     .order_by(table.c.decided, table.c.id)).scalars())
                chosen = get_agent(agent) if isinstance(agent, str) else agent
                moves = adapt.adapt(plan, acceptance, chosen)
                priorities = {name: planner.plan.accepted[name].reservation.priority for name in moves.affected}
                vector = ", ".join(f"{k}: {units.format_quantity(k, v)}" for k, v in whole.items())
                reasons = {name: _dropped_reason(name, at, vector, priorities[name],
                                                 adapt.started(planner.plan, planner.plan.accepted[name]))
                           for name in moves.dropped}
                report = CapacityReport(at, whole, moves, reasons, priorities, dry_run)
                if dry_run:
                    return report
                version = self._write_capacity(connection, meta, text, report, plan.clock, actor)
            self._cache = _Cached(meta["plan_id"], version, _planner_over(plan))
            self._cluster = ((meta["plan_id"], str(version)), changed)
            return report

    def replan(self, actor: str | None = None, time_limit: float | None = None, backend: str | None = None,
               gap: float | None = None) -> ReplanOutcome:
        """Re-optimise the accepted reservations (MILP, planner.replan.optimise) and write back the leases that moved.

        Every accepted reservation stays accepted; running ones (a lease began before the clock) stay
        where they are. The solver works on a snapshot without holding the writer lock; what moved is
        written in one transaction, and only if no other writer changed the plan meanwhile (otherwise
        it solves again, up to REPLAN_ATTEMPTS times). If the solver finds nothing better, nothing changes.
        """
        from planner.agents.milp.agent import DEFAULT_GAP, DEFAULT_TIME_LIMIT
        from planner.agents.milp.solvers import DEFAULT_BACKEND
        from planner.replan.optimise import replan as reoptimise

        backend = backend or DEFAULT_BACKEND
        for _ in range(REPLAN_ATTEMPTS):
            with self._lock, self._session(write=False) as (connection, meta):
                plan = self._planner(connection, meta).plan.copy()
                seen = (meta["plan_id"], meta["plan_version"])
            before = dict(plan.accepted)
            running = {name: a for name, a in plan.accepted.items() if adapt.started(plan, a)}
            for name in running:
                del plan.accepted[name]  # out of the model, but their use stays in the plan
            report = reoptimise(plan, None, backend, DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
                                DEFAULT_GAP if gap is None else gap)
            plan.accepted.update(running)
            outcome = ReplanOutcome(report.status, backend, report.seconds,
                                    {name: tuple(plan.accepted[name].allocations) for name in report.moved},
                                    {name: tuple(before[name].allocations) for name in report.moved},
                                    tuple(running), report.changes_before, report.changes_after)
            with self._lock:
                with self._session(write=True) as (connection, meta):
                    if (meta["plan_id"], meta["plan_version"]) != seen:
                        continue  # another writer changed the plan while the solver ran: solve again
                    version = self._write_replan(connection, meta, outcome, plan.clock, actor)
                if outcome.moved:
                    self._advance_cache(version, _swapping({name: plan.accepted[name] for name in outcome.moved}))
                return outcome
        raise StoreError("conflict", f"the plan changed while it was being re-planned, {REPLAN_ATTEMPTS} times; "
                         "nothing was written", "run the re-planning again when submissions are quieter")

    # -- reading -----------------------------------------------------------------------------------

    def get(self, name: str) -> Record:
        """The stored reservation of that name; an unknown name is an error suggesting a close one."""
        with self._lock, self._session(write=False) as (connection, _):
            self._state_of(connection, name)
            return self._records(connection, schema.reservations.c.name == name)[0]

    def list(self, user: str | None = None, state: str | None = None, start: datetime | None = None,
             end: datetime | None = None) -> builtins.list[Record]:
        """Stored reservations in decision order; `start`/`end` keep those holding a lease inside [start, end)."""
        if state is not None and state not in STATES:
            hint = did_you_mean(state, STATES)
            raise StoreError("state", f"unknown state `{state}`; choose one of {', '.join(STATES)}", hint)
        with self._lock, self._session(write=False) as (connection, meta):
            table = schema.reservations
            conditions = [c for c in (table.c.user == user if user is not None else None,
                                      table.c.state == state if state is not None else None) if c is not None]
            if start is not None or end is not None:
                conditions.append(self._overlapping(self._cluster_of(connection, meta), start, end))
            return self._records(connection, *conditions)

    def log(self, limit: int | None = None) -> builtins.list[LogEntry]:
        """The decision log, oldest first; with `limit`, only the latest `limit` entries."""
        with self._lock, self._session(write=False) as (connection, _):
            query = sa.select(schema.log).order_by(schema.log.c.id.desc())
            if limit is not None:
                query = query.limit(limit)
            rows = connection.execute(query).all()
        return [LogEntry(**row._mapping) for row in reversed(rows)]

    # -- transactions ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Connection]:
        """One transaction (a write one holds the plan's writer lock); database failures become StoreErrors."""
        try:
            with schema.transaction(self.engine, write) as connection:
                yield connection
        except sa.exc.DBAPIError as exc:
            raise StoreError("database", f"the plan store at {self.where} failed: {exc.orig}",
                             "is it a plan store, and is the database reachable?") from exc

    @contextlib.contextmanager
    def _session(self, write: bool) -> Iterator[tuple[Connection, dict[str, str]]]:
        """A transaction on an initialised store of our schema version, with its meta rows."""
        with self._transaction(write) as connection:
            if not self._ready and not schema.has_tables(connection):
                raise StoreError("uninitialised", f"the plan store at {self.where} holds no plan yet",
                                 f"initialise it with a cluster file first: `{INIT_COMMAND}`")
            meta = schema.read_meta(connection)
            self._check_schema(meta)
            self._ready = True
            yield connection, meta

    def _check_schema(self, meta: dict[str, str]) -> None:
        """Refuse a store of another schema version, naming both and what to do."""
        found = int(meta.get("schema_version", "0"))
        if found == SCHEMA_VERSION:
            return
        hint = (f"use a rayon that reads version {found}" if found > SCHEMA_VERSION else
                "no migration exists yet: keep the rayon that wrote it")
        raise StoreError("schema", f"the plan store at {self.where} has schema version {found}, but this rayon "
                         f"reads version {SCHEMA_VERSION}",
                         f"{hint}, or start a new plan elsewhere (set RAYON_STATE to a new file and initialise it)")

    def _already(self, connection: Connection) -> StoreError:
        """The error for initialising a store that already holds a plan."""
        table = schema.reservations
        count = connection.execute(sa.select(sa.func.count()).where(table.c.state == "accepted")).scalar_one()
        source = connection.execute(sa.select(schema.cluster.c.source)).scalar()
        return StoreError("initialised", f"the plan store at {self.where} already holds a plan (cluster "
                          f"`{source}`, {count} accepted reservations)",
                          "re-initialise with force to discard it, or set RAYON_STATE to another file")

    # -- the cached plan ---------------------------------------------------------------------------------

    def _planner(self, connection: Connection, meta: dict[str, str]) -> Planner:
        """A Planner over the plan as of this transaction: the cached one brought up to date, or a fresh one."""
        version, cached = int(meta["plan_version"]), self._cache
        if cached is None or cached.plan_id != meta["plan_id"] or not \
                int(meta["rebuild_version"]) <= cached.version <= version:
            cached = _Cached(meta["plan_id"], version, self._build(connection, meta))
        elif cached.version < version:
            self._cache = None  # a catch-up that fails halfway leaves no half-updated plan behind
            self._catch_up(connection, cached.planner.plan, cached.version)
            cached.version = version
        self._cache = cached
        return cached.planner

    def _build(self, connection: Connection, meta: dict[str, str]) -> Planner:
        """The plan from scratch: the cluster, then every accepted reservation with its leases."""
        planner = Planner(self._cluster_of(connection, meta), units.parse_instant(meta["now"]))
        self._catch_up(connection, planner.plan, None)
        return planner

    def _catch_up(self, connection: Connection, plan: Plan, since: int | None) -> None:
        """Re-apply every row changed after version `since` (all rows when None); applying twice is harmless."""
        table = schema.reservations
        changed = [table.c.version > since] if since is not None else [table.c.state == "accepted"]
        rows = connection.execute(sa.select(table.c.id, table.c.name, table.c.rdl, table.c.submitted,
                                            table.c.state).where(*changed).order_by(table.c.id)).all()
        held = schema.read_leases(connection, sa.select(table.c.id).where(table.c.state == "accepted", *changed))
        for row in rows:
            if row.name in plan.accepted:
                plan.remove(row.name)
            if row.state == "accepted":
                plan.add(Accepted(parse_stored(row.rdl, row.name), row.submitted, held.get(row.id, [])))

    def _advance_cache(self, version: int, change: AnyType) -> None:
        """Apply a just-committed change to the cached plan if it was current; otherwise a later read catches up."""
        cached = self._cache
        if cached is None or cached.version != version - 1:
            return
        try:
            change(cached.planner.plan)
            cached.version = version
        except Exception:
            self._cache = None
            raise

    def _instants(self, clock: Clock) -> schema.Instants:
        """The memo of formatted instants for this plan's clock."""
        if self._instant_memo is None or self._instant_memo.clock != clock:
            self._instant_memo = schema.Instants(clock)
        return self._instant_memo

    def _cluster_of(self, connection: Connection, meta: dict[str, str]) -> Cluster:
        """The stored cluster, parsed once per plan (and again only when its base is rebuilt)."""
        key = (meta["plan_id"], meta["rebuild_version"])
        if self._cluster is None or self._cluster[0] != key:
            row = connection.execute(sa.select(schema.cluster.c.yaml, schema.cluster.c.source)).one()
            self._cluster = (key, parse_cluster(row.yaml, row.source))
        return self._cluster[1]

    # -- writing -------------------------------------------------------------------------------------------

    @staticmethod
    def _fresh_meta(cluster: Cluster) -> dict[str, str]:
        """Meta rows of a new plan: its own id, version 0, the clock at the cluster's start."""
        return {"schema_version": str(SCHEMA_VERSION), "plan_id": uuid.uuid4().hex, "plan_version": "0",
                "rebuild_version": "0", "now": units.format_instant(cluster.start)}

    @staticmethod
    def _bump(connection: Connection, meta: dict[str, str]) -> int:
        """The next plan version, written to meta (the transaction holds the writer lock)."""
        version = int(meta["plan_version"]) + 1
        schema.write_meta(connection, {"plan_version": str(version)})
        return version

    def _record(self, connection: Connection, meta: dict[str, str], planner: Planner, reservation: Reservation,
                decision: Decision, when: datetime, actor: str | None) -> int:
        """Store a submission's decision (row, leases, log); returns the plan version it leaves."""
        table = schema.reservations
        text = format_reservation(reservation)
        row = connection.execute(schema.FIND_RESERVATION, {"name": reservation.name}).first()
        version = int(meta["plan_version"])
        if row is None or row.state != "accepted":  # an accepted name keeps its row: the clash is only logged
            if row is not None:
                connection.execute(schema.leases.delete().where(schema.leases.c.reservation_id == row.id))
                connection.execute(table.delete().where(table.c.id == row.id))
            if decision.accepted:
                version = self._bump(connection, meta)
            self._insert(connection, reservation, text, decision, when, version)
        reason = decision.reason.to_json() if decision.reason else None
        self._log(connection, "submit", actor, reservation.name, text, decision.accepted, reason,
                  schema.decision_json(decision, self._instants(planner.plan.clock)))
        return version

    @staticmethod
    def _insert(connection: Connection, reservation: Reservation, text: str, decision: Decision,
                when: datetime, version: int) -> None:
        """Insert a decided reservation's row and, if it holds any, its leases."""
        decided = _utcnow()
        reason = decision.reason
        result = connection.execute(schema.reservations.insert(), dict(
            name=reservation.name, rdl=text, user=reservation.user, queue=reservation.queue,
            value=reservation.value, priority=reservation.priority, submitted=when,
            state="accepted" if decision.accepted else "rejected", agent=decision.extra.get("agent"),
            decided=decided, updated=decided, reason_code=reason.code if reason else None,
            reason=reason.to_json() if reason else None, version=version))
        if decision.allocations:
            key = result.inserted_primary_key
            assert key is not None
            schema.insert_leases(connection, key[0], decision.allocations)

    def _record_update(self, connection: Connection, meta: dict[str, str], clock: Clock, old: Accepted,
                       reservation: Reservation, decision: Decision, when: datetime, actor: str | None) -> int:
        """Store an update's outcome: the swap (row and leases) if accepted; the log row either way."""
        text = format_reservation(reservation)
        version = int(meta["plan_version"])
        record = schema.decision_json(decision, self._instants(clock))
        if decision.accepted:
            version = self._bump(connection, meta)
            table = schema.reservations
            decided = _utcnow()
            row_id = self._replace_leases(connection, reservation.name, decision.allocations)
            connection.execute(table.update().where(table.c.id == row_id).values(
                rdl=text, user=reservation.user, queue=reservation.queue, value=reservation.value,
                priority=reservation.priority, submitted=when, agent=decision.extra.get("agent"), decided=decided,
                updated=decided, reason_code=None, reason=None, version=version))
            record["previous_allocations"] = [schema.allocation_json(a, self._instants(clock))
                                              for a in old.allocations]
        reason = decision.reason.to_json() if decision.reason else None
        self._log(connection, "update", actor, reservation.name, text, decision.accepted, reason, record)
        return version

    @staticmethod
    def _replace_leases(connection: Connection, name: str, allocations: Iterable[Allocation]) -> int:
        """Give the named reservation these leases instead of its own; returns its row id."""
        row = connection.execute(schema.FIND_RESERVATION, {"name": name}).one()
        connection.execute(schema.leases.delete().where(schema.leases.c.reservation_id == row.id))
        schema.insert_leases(connection, row.id, allocations)
        return int(row.id)

    def _changed_cluster(self, text: str, source: str, cluster: Cluster, change: CapacityChange) -> tuple[str, Cluster]:
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

    def _write_capacity(self, connection: Connection, meta: dict[str, str], text: str, report: CapacityReport,
                        clock: Clock, actor: str | None) -> int:
        """Store a capacity change: the cluster file, moved leases, dropped reservations, and the log rows."""
        version = self._bump(connection, meta)
        schema.write_meta(connection, {"rebuild_version": str(version)})  # the cluster changed: caches rebuild
        connection.execute(schema.cluster.update().values(yaml=text))
        table, now, instants = schema.reservations, _utcnow(), self._instants(clock)
        moves = report.adaptation
        self._write_moves(connection, "capacity", actor, moves.moved, moves.previous, version, instants)
        for name in moves.dropped:
            reason = report.reasons[name]
            connection.execute(table.update().where(table.c.name == name).values(
                state="dropped", updated=now, reason_code=reason.code, reason=reason.to_json(), version=version))
            self._log(connection, "capacity", actor, name, None, False, reason.to_json(),
                      {"reservation": name, "accepted": False, "dropped": True, "reason": reason.to_json()})
        change = adapt.change_entry(report.at, report.capacity)
        self._log(connection, "capacity", actor, None, change, None, None, report.to_json(clock))
        return version

    def _write_moves(self, connection: Connection, action: str, actor: str | None,
                     moved: Mapping[str, Sequence[Allocation]], previous: Mapping[str, Sequence[Allocation]],
                     version: int, instants: schema.Instants) -> None:
        """New leases for moved reservations, each with a log row saying where they were and are."""
        table, now = schema.reservations, _utcnow()
        for name, allocations in moved.items():
            row_id = self._replace_leases(connection, name, list(allocations))
            connection.execute(table.update().where(table.c.id == row_id).values(updated=now, version=version))
            self._log(connection, action, actor, name, None, True, None,
                      {"reservation": name, "accepted": True, "moved": True,
                       "allocations": [schema.allocation_json(a, instants) for a in allocations],
                       "previous_allocations": [schema.allocation_json(a, instants)
                                                for a in previous.get(name, ())]})

    def _write_replan(self, connection: Connection, meta: dict[str, str], outcome: ReplanOutcome, clock: Clock,
                      actor: str | None) -> int:
        """Store what re-planning moved (nothing, if nothing moved) and its log rows."""
        version = int(meta["plan_version"])
        instants = self._instants(clock)
        if outcome.moved:
            version = self._bump(connection, meta)
            self._write_moves(connection, "replan", actor, outcome.moved, outcome.previous, version, instants)
        summary = outcome.to_json(clock)
        summary["moved"] = list(outcome.moved)
        self._log(connection, "replan", actor, None, None, None, None, summary)
        return version

    @staticmethod
    def _log(connection: Connection, action: str, actor: str | None, name: str | None, request: str | None,
             accepted: bool | None, reason: dict[str, AnyType] | None, decision: dict[str, AnyType] | None) -> None:
        """Append one row to the decision log."""
        connection.execute(schema.log.insert(), dict(
            time=_utcnow(), actor=actor or _actor(), action=action, reservation=name, request=request,
            accepted=accepted, reason_code=reason["code"] if reason else None, reason=reason, decision=decision))

    # -- reading rows ----------------------------------------------------------------------------------------

    def _state_of(self, connection: Connection, name: str) -> str:
        """The state of the named reservation; an unknown name is a StoreError suggesting a close one."""
        table = schema.reservations
        state = connection.execute(sa.select(table.c.state).where(table.c.name == name)).scalar()
        if state is None:
            names = list(connection.execute(sa.select(table.c.name)).scalars())
            raise StoreError("unknown", f"no reservation named `{name}` in the plan store at {self.where}",
                             did_you_mean(name, names))
        return str(state)

    @staticmethod
    def _records(connection: Connection, *conditions: AnyType) -> builtins.list[Record]:
        """The reservations matching the conditions, with their leases, in decision order."""
        table = schema.reservations
        rows = connection.execute(sa.select(table).where(*conditions).order_by(table.c.id)).all()
        held = schema.read_leases(connection, sa.select(table.c.id).where(*conditions))
        return [_record_of(row, held.get(row.id, [])) for row in rows]

    @staticmethod
    def _overlapping(cluster: Cluster, start: datetime | None, end: datetime | None) -> AnyType:
        """Reservations holding a lease that overlaps [start, end)."""
        leases = schema.leases
        inside = [leases.c.reservation_id == schema.reservations.c.id]
        if start is not None:
            inside.append(leases.c.end_step > step_floor(cluster.start, start, cluster.step))
        if end is not None:
            inside.append(leases.c.start_step < step_ceil(cluster.start, end, cluster.step))
        return sa.exists().where(*inside)


def _planner_over(plan: Plan) -> Planner:
    """A Planner over an existing plan (Planner() would lay a fresh one over the cluster)."""
    planner = Planner.__new__(Planner)
    planner.plan = plan
    return planner


def _swapping(moved: dict[str, Accepted]) -> Callable[[Plan], None]:
    """A change to a cached plan: these reservations, with their new leases, instead of their old selves."""

    def swap(plan: Plan) -> None:
        for name, accepted in moved.items():
            plan.remove(name)
            plan.add(accepted)

    return swap


def _aware(value: datetime, what: str) -> None:
    if value.tzinfo is None:
        raise StoreError("input", f"{what} must be a time with a zone, got {value.isoformat()}",
                         "write ISO-8601 with a zone, such as 2026-11-23T06:00:00Z")


def _capacity_vector(cluster: Cluster, capacity: Mapping[str, float | str]) -> dict[str, float]:
    """A capacity change's resources, checked against the cluster; every problem named in one error."""
    names = cluster.resource_names
    if not capacity:
        raise StoreError("input", "the capacity change names no resource",
                         f"give one or more of {', '.join(names)}, such as `{{{names[0]}: ...}}`")
    values: dict[str, float] = {}
    problems: builtins.list[str] = []
    hints: builtins.list[str] = []
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
        if quantity is None or not math.isfinite(quantity) or quantity <= 0:
            problems.append(f"`{name}` must be a positive quantity, got `{value}`")
            if quantity == 0:
                hints.append("the cluster file holds positive capacities only")
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


def _clock(cluster: Cluster) -> Clock:
    """The step grid of a cluster's plan."""
    return Clock(cluster.start, cluster.step, cluster.steps)


def _engine(url: sa.URL) -> Engine:
    """The engine for a URL; a missing driver or unknown database is a StoreError that says what to install."""
    try:
        return schema.create_engine(url)
    except (ImportError, sa.exc.NoSuchModuleError) as exc:
        missing = exc.name if isinstance(exc, ImportError) and exc.name else url.drivername
        raise StoreError("driver", f"the plan store at {url.render_as_string(hide_password=True)} needs the "
                         f"database driver `{missing}`, which is not installed",
                         "for PostgreSQL: pip install 'psycopg[binary]' and use a postgresql+psycopg:// URL") \
            from exc
    except ValueError as exc:
        raise StoreError("target", str(exc), "give a file path or a postgresql+psycopg:// URL") from exc


def _record_of(row: sa.Row[AnyType], allocations: builtins.list[Allocation]) -> Record:
    """A reservations row and its leases as a Record."""
    return Record(row.name, row.rdl, row.user, row.queue, row.value, row.priority, row.submitted, row.state,
                  row.agent, row.decided, row.updated, schema.reason_from_json(row.reason), tuple(allocations))


def _copy_plan(plan: Plan, now: datetime | None) -> Plan:
    """An independent copy of a plan (the cache's own stays untouched), with its clock at `now` if given."""
    fresh = plan.copy()
    fresh.now = now or plan.now
    return fresh


def _utcnow() -> datetime:
    """The wall-clock time of a decision (the plan's own clock is `Store.now`)."""
    return datetime.now(UTC)


@functools.cache
def _actor() -> str:
    """Who is acting, when the caller does not say: the operating-system user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
