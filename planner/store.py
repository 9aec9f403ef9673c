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
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import getpass
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from planner import store_schema as schema
from planner.agents import DEFAULT_AGENT, Agent
from planner.compile import Clock
from planner.decision import Decision, Reason
from planner.plan import Accepted, Allocation, Plan
from planner.planner import Planner
from rdl import units
from rdl.cluster import Cluster, parse_cluster
from rdl.parser import did_you_mean, parse_text
from rdl.printer import format_reservation
from rdl.shape import step_ceil, step_floor
from rdl.tree import Reservation

STATES = schema.STATES
ACTIONS = schema.ACTIONS
SCHEMA_VERSION = schema.SCHEMA_VERSION
DEFAULT_STATE = Path("~/.local/state/rayon/plan.db")
# How the error for an empty store says to fill it; the command line may point at its own command.
INIT_COMMAND = "rayon init --cluster CLUSTER.yaml"  # what `rayon` calls it (planner/store_cli.py)
ERROR_CODES = ("uninitialised", "initialised", "schema", "unknown", "state", "driver", "target", "database")


class StoreError(Exception):
    """A plan store problem the user can act on: a code, what went wrong and where, and what to do."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        self.code = code
        self.message = message
        self.hint = hint
        super().__init__(message + (f" ({hint})" if hint else ""))


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
