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
MILP and writes back those that moved. Each is one write transaction with its log rows.

The plan rolls with its clock: the cached plan covers `horizon` from the clock (from its last whole
`roll_steps`, an hour) and moves on with every `advance`, any distance (planner.core.plan.roll).
Lease rows, records, log rows and every answer count steps from the cluster file's `start` for ever
(`clock()` renders them); only the cached plan counts from its window, and planner/store/axis.py
converts at this class's edge.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as replaced
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from planner.admission import Planner
from planner.agents.deadline import deadline_of
from planner.agents.registry import DEFAULT_AGENT, Agent
from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.core.plan import Accepted, Plan, shifted
from planner.replan import adapt
from planner.store import axis, history, lifecycle, queries, schema, series
from planner.store.cache import PlanCache, plan_key, swapping
from planner.store.driver import named_rows
from planner.store.errors import StoreError
from planner.store.forward import Answered, SharedDecider
from planner.store.group import Batches
from planner.store.history import Archived
from planner.store.records import AdvanceReport, CapacityReport, LogEntry, Owner, Page, Record, ReplanOutcome
from planner.store.session import Database, default_state_path
from planner.store.writes import Rows, Submission, append_log, fresh_meta, utcnow
from rdl import units
from rdl.cluster import Cluster, parse_cluster
from rdl.errors import did_you_mean
from rdl.tree import Reservation

STATES = schema.STATES
ACTIONS = schema.ACTIONS
# A batch is first decided on the plan this Store has cached, with no read (the write checks its version). When
# that finds another writer's change, the next batches read the plan before deciding: a guess on a plan that
# others change would be decided twice.
DISTRUST_BATCHES = 100
DECIDE_ATTEMPTS = 5  # decisions made again when another writer changed the plan under them, before giving up
EXISTING_CHUNK = 500  # names asked about in one statement (SQLite bounds the parameters of one)


class Store:
    """The plan store. Thread-safe; open one per process (`Store.open`), close it when done."""

    def __init__(self, database: Database):
        self._db = database
        self._lock = threading.RLock()
        self._cache = PlanCache()
        self._submissions = Batches(self._forward_or_decide)
        self._distrust = 0  # batches still to read the plan before deciding (another writer was seen)
        self._shared: SharedDecider | None = None  # the worker processes this one decides with (share_decisions)
        self._on_batch: Callable[[int], None] | None = None  # told each batch's size (count_batches)

    @property
    def engine(self) -> Engine:
        """The store's SQLAlchemy engine."""
        return self._db.engine

    @property
    def where(self) -> str:
        """The store's file path, or its URL without the password."""
        return self._db.where

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, target: str | Path | None = None, *, check_version: bool = True, create: bool = True) -> Store:
        """Open the store at a path or URL (default: `default_state_path()`); checks its schema version, and migrates
        a store an older rayon wrote (planner/store/migrate.py).

        `create=False` (every reader): a SQLite file that does not exist is a StoreError (`missing`) saying how
        to create it, and no file is made. With `create` (the default) a new file is made when first used.
        """
        store = cls(Database.open(default_state_path() if target is None else target, create=create))
        if check_version:
            store._db.open_checked()  # a store of an older schema version is migrated here
        return store

    def close(self) -> None:
        """Release the store's connections (and the clock, if this process kept it)."""
        if self._shared is not None:
            self._shared.close()
            self._shared = None
        self._db.release()
        self.engine.dispose()

    def keeps_clock(self) -> bool:
        """Whether this process is the one that keeps the plan's clock (advances it, places recurring instances,
        runs the scheduled replans); several servers on one PostgreSQL plan elect one through the database, and
        another takes over once it is gone (planner/store/session.py `keeps`)."""
        return self._db.keeps()

    def time_commits(self, hook: Callable[[float], None] | None) -> None:
        """Tell `hook` how many seconds each write transaction of this Store took to commit (a server's metrics)."""
        self._db.on_commit = hook

    def count_batches(self, hook: Callable[[int], None] | None) -> None:
        """Tell `hook` the size of each batch of submissions committed together (a server's metrics): the batches
        this process writes, other workers' forwarded ones among them (share_decisions), not those it forwards."""
        self._on_batch = hook

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the plan --------------------------------------------------------------------------------

    def init(self, cluster_yaml: str, source_name: str = "<cluster>", force: bool = False) -> Cluster:
        """Start a new plan over the cluster file's text; an existing plan is discarded only with `force`."""
        parsed = parse_cluster(cluster_yaml, source_name)  # bad input fails before anything is written
        with self._lock, self._db.transaction(write=True) as connection:
            exists = schema.has_tables(connection)
            if exists and not force:
                raise self._db.already(connection)
            schema.create(connection, fresh_meta(parsed), replace=exists)
            connection.execute(schema.cluster.insert().values(id=1, yaml=cluster_yaml, source=source_name,
                                                              loaded=utcnow()))
            self._cache.forget()
            self._db.ready = True
        return parsed

    def cluster(self) -> Cluster:
        """The plan's cluster, parsed from the stored cluster file."""
        with self._lock, self._db.session(write=False) as (connection, meta):
            return self._cache.cluster(connection, meta)

    def now(self) -> datetime:
        """The plan's clock: the default submission time (the cluster's start until it is advanced)."""
        with self._lock, self._db.session(write=False) as (_, meta):
            return units.read_instant(meta["now"])

    def clock(self) -> Clock:
        """The store's step axis, on which records, decisions and reports count their steps (the plan's own clock,
        `load_plan().clock`, counts from its rolling window instead)."""
        with self._lock, self._db.session(write=False) as (connection, meta):
            return axis.store_clock(self._cache.cluster(connection, meta))

    def load_plan(self, now: datetime | None = None) -> Plan:
        """The plan as stored: the cluster's capacity and every accepted reservation's leases (a new object)."""
        with self._lock, self._db.session(write=False) as (connection, meta):
            copy = Planner.over(self._cache.planner(connection, meta).plan.copy())  # the cache's own stays untouched
        if now is not None:
            copy.advance(now)
        return copy.plan

    # -- decisions -------------------------------------------------------------------------------

    def submit(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, actor: str | None = None,
               submitted: datetime | None = None, dry_run: bool = False, explain: bool = True,
               validated: bool = False, owner: str | None = None,
               validated_on: tuple[str, str, str] | None = None) -> Decision:
        """Decide one reservation and commit the decision (reservation, leases, log row) before answering.

        Submissions arriving together are decided and committed together (group commit, planner/store/group.py):
        one transaction and one flush to disk for all of them, each decided on the plan the earlier ones left.
        The search runs on a private copy of the plan and holds no lock, so a long one stalls no other writer;
        the batch commits only if the plan is still the version it was decided on, else it is decided again on
        the new plan. After DECIDE_ATTEMPTS - 1 such tries the last one decides holding the writer's lock, as
        every writer waits its turn: a busy plan delays a decision, never refuses it. `validated`: the caller
        has validated it against this store's cluster already (no second pass); `validated_on`: against the plan
        of this `plan_key` (a recent one: `recent_meta`), so it is validated again if the plan it is decided on
        has another. `owner`: refuse (`forbidden`) a name another user's reservation holds, checked inside the
        write (so across servers too).
        """
        ticket = _Ticket(reservation, agent, actor, submitted, explain, validated, owner, validated_on)
        if dry_run:
            _, planner, window, key = self._snapshot()
            return axis.decision_on_store(_decide(planner, ticket, key)[0], window)
        return self._submissions(ticket)

    async def submit_async(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, actor: str | None = None,
                           explain: bool = True, validated: bool = False, owner: str | None = None,
                           validated_on: tuple[str, str, str] | None = None) -> Decision:
        """`submit` (not a dry run) for a coroutine: in the same batches, with no thread blocked while it waits
        (the batches' runner thread decides and commits); a worker that shares decisions hands it to the decider
        straight from its loop (planner/store/forward.py `LoopForwarder`)."""
        ticket = _Ticket(reservation, agent, actor, None, explain, validated, owner, validated_on)
        if self._shared is not None and isinstance(agent, str):  # a worker: straight from the loop to the decider
            answered = await self._shared.forward_async(ticket)
            if answered is not None:
                outcome, meta = answered
                if meta is not None:
                    self._db.last_meta = meta
                if isinstance(outcome, BaseException):
                    raise outcome
                decision: Decision = outcome
                return decision
        return await self._submissions.run_async(ticket)

    def share_decisions(self, folder: Path) -> None:
        """Decide submissions together with the other worker processes of one server, which share `folder`: one
        of them decides every batch, the others forward theirs to it (planner/store/forward.py)."""
        self._shared = SharedDecider(folder, self._decide_for_others)

    def wait_to_decide(self, stop: threading.Event, every: float = 1.0) -> bool:
        """After `share_decisions`: wait until this process decides for the others (trying every `every` seconds)
        or `stop` is set; whether it decides."""
        if self._shared is None:
            raise RuntimeError("wait_to_decide needs share_decisions first")
        return self._shared.stand_by(stop, every)

    def _decide_for_others(self, tickets: builtins.list[_Ticket]) -> Answered:
        """Another worker's batch, decided in this process's next batch: the outcomes, and the meta rows after."""
        outcomes = self._submissions.run_many(tickets)
        return outcomes, dict(self.recent_meta())

    def _forward_or_decide(self, tickets: Sequence[_Ticket]) -> builtins.list[Decision | BaseException]:
        """A batch's outcomes, from the worker that decides for all (share_decisions) or decided here."""
        if self._shared is not None and all(isinstance(ticket.agent, str) for ticket in tickets):
            answered = self._shared.forward(list(tickets))
            if answered is not None:
                outcomes, meta = answered
                if meta is not None:  # the plan as the decider saw it: what the next requests check against
                    self._db.last_meta = meta
                return outcomes
        return self._submit_batch(tickets)

    def _submit_batch(self, tickets: Sequence[_Ticket]) -> builtins.list[Decision | BaseException]:
        """Decide submissions in order, each on the plan the earlier ones left, and commit them in one transaction;
        each one's stored decision, or the error that refused it."""
        refused: dict[int, StoreError] = {}  # tickets whose name another user holds: left out of the decisions
        self._distrust = max(0, self._distrust - 1)
        if self._on_batch is not None:
            self._on_batch(len(tickets))
        for attempt in range(DECIDE_ATTEMPTS):
            last = attempt == DECIDE_ATTEMPTS - 1
            if not last:
                trusted = attempt == 0 and self._distrust == 0
                version, planner, _, key = self._snapshot(trusted)
                decided = [refused.get(i) or _attempt(planner, t, key) for i, t in enumerate(tickets)]
            with self._lock:
                with self._db.session(write=True) as (connection, meta):
                    if last:  # decided holding the writer's lock, on the cache's plan (it learns once committed)
                        planner = Planner.over(self._cache.planner(connection, meta).plan.copy())
                    elif (meta["plan_id"], int(meta["plan_version"])) != version:
                        if trusted:  # others write to this plan: read it before deciding, for a while
                            self._distrust = DISTRUST_BATCHES
                        continue  # another writer changed the plan meanwhile: decide again on the new one
                    stored_rows = queries.named(connection, [ticket.reservation.name for ticket in tickets])
                    found = _others_names(tickets, stored_rows)
                    if any(i not in refused for i in found):
                        refused.update(found)
                        if not last:
                            continue  # decided beside names it may not take: decide again without them
                    if last:
                        key = plan_key(meta)
                        decided = [refused.get(i) or _attempt(planner, t, key) for i, t in enumerate(tickets)]
                    rows, stored = self._commit(connection, meta, planner, tickets, decided, stored_rows)
                self._cache.committed(meta["plan_id"], rows.version, planner, key)
                return stored
        raise AssertionError("the last attempt always commits")

    def _commit(self, connection: Connection, meta: dict[str, str], planner: Planner, tickets: Sequence[_Ticket],
                decided: Sequence[tuple[Decision, datetime] | BaseException], named: dict[str, queries.Named],
                ) -> tuple[Rows, builtins.list[Decision | BaseException]]:
        """Write the submissions decided on `planner`'s plan (`named`: the rows their names have now); the writer,
        and each decision on the store's axis."""
        cluster = self._cache.cluster(connection, meta)
        window, clock = axis.window_start(planner.plan, cluster), axis.store_clock(cluster)
        rows = self._rows(connection, meta)
        stored: builtins.list[Decision | BaseException] = []
        batch = []
        for ticket, outcome in zip(tickets, decided, strict=True):
            if isinstance(outcome, BaseException):
                stored.append(outcome)
                continue
            decision, when = outcome
            on_store = axis.decision_on_store(decision, window)
            batch.append(Submission(ticket.reservation, on_store, when, ticket.actor))
            stored.append(on_store)
        rows.submissions(clock, batch, named)
        return rows, stored

    def _snapshot(self, trusted: bool = False) -> tuple[tuple[str, int], Planner, int, tuple[str, str, str]]:
        """A private copy of the current plan, the version it is of (deciding on it needs no lock), the step
        of the store's axis at which its window begins, and its `plan_key`. `trusted`: of the plan this Store
        has cached, without reading the store, when it has one (the write that follows checks the version)."""
        if trusted:
            with self._lock:
                known = self._cache.known()
                if known is not None:
                    return (known.version, Planner.over(known.planner.plan.copy()),
                            axis.window_start(known.planner.plan, known.cluster), known.key)
        with self._lock, self._db.session(write=False) as (connection, meta):
            planner = self._cache.planner(connection, meta)
            window = axis.window_start(planner.plan, self._cache.cluster(connection, meta))
            return ((meta["plan_id"], int(meta["plan_version"])), Planner.over(planner.plan.copy()), window,
                    plan_key(meta))

    def known_meta(self) -> dict[str, str] | None:
        """The meta rows as this Store last read them, or None if it has read none (`recent_meta` without a read)."""
        return self._db.last_meta

    def recent_meta(self) -> dict[str, str]:
        """The meta rows as this Store last read them (at its latest transaction, so perhaps a moment old when
        other processes write too), or read now if it has read none: what a request may check its input against
        without a read of its own (`submit`'s `validated_on` catches a plan that changed meanwhile)."""
        return self.known_meta() or self.meta()

    def cancel(self, name: str, actor: str | None = None, after: datetime | None = None,
               owner: str | None = None) -> Record:
        """Cancel an accepted reservation, freeing its capacity; returns its record (state `cancelled`).

        `after`: a recurring reservation is cancelled only from its first instance arriving at or after this
        time on: the series ends there (its `until`), the later instances' leases are freed, and the earlier
        ones stay (the record stays accepted, unless no instance is left before that time). `owner`: refuse
        (`forbidden`) unless the reservation is this user's, checked inside the write (so across servers too)."""
        with self._lock:
            with self._db.session(write=True) as (connection, meta):
                state = self._state_of(connection, name, owner)
                if state != "accepted":
                    raise StoreError("state", f"reservation `{name}` is {state}, so there is nothing to cancel",
                                     "only accepted reservations hold capacity")
                rows = self._rows(connection, meta)
                clock = axis.store_clock(self._cache.cluster(connection, meta))
                (record,) = queries.records(connection, schema.reservations.c.name == name)
                index = self._cut_at(record, after)
                rows.bump()
                if index is None:
                    record = rows.cancel(clock, name, actor)
                else:
                    reservation = series.ended_before(record.reservation(), record.submitted, index)
                    record = series.cut(rows, record, reservation, index, self._cache.instants(clock), actor)
            if index is None:
                self._cache.advance(rows.version, lambda planner: planner.plan.remove(name))
            else:
                self._cache.advance(rows.version, _cutting(name, reservation, index))
            return record

    @staticmethod
    def _cut_at(record: Record, after: datetime | None) -> int | None:
        """The instance a cancel `after` a time starts at; None for a whole cancel."""
        if after is None:
            return None
        reservation = record.reservation()
        if reservation.every is None:
            raise StoreError("input", f"reservation `{record.name}` is not recurring, so it cannot be cancelled from "
                             "an instance on", "cancel it whole")
        lifecycle.aware(after, "the time a series is cancelled from")
        index = series.first_from(reservation, record.submitted, after)
        return index if index > 0 and any(a.instance < index for a in record.allocations) else None

    def update(self, name: str, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT,
               actor: str | None = None, dry_run: bool = False, submitted: datetime | None = None,
               explain: bool = True, owner: str | None = None) -> Decision:
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
            self._warm(dry_run)
            with self._db.session(write=not dry_run) as (connection, meta):
                state = self._state_of(connection, name, owner)
                if state != "accepted":
                    raise StoreError("state", f"reservation `{name}` is {state}, so there is nothing to update",
                                     "only accepted reservations can be updated; submit it again instead")
                planner = self._cache.planner(connection, meta)
                old = planner.plan.accepted[name]
                if adapt.started(planner.plan, old):
                    first = min(a.start for a in old.allocations)
                    raise StoreError("state", f"reservation `{name}` is running (since "
                                     f"{units.format_instant(planner.plan.clock.at(first))}), so it cannot be "
                                     "updated", "cancel it and submit what is left as a new reservation")
                trial = Planner.over(planner.plan.copy())
                trial.plan.remove(name)
                when = submitted or planner.plan.now
                decision = trial.submit(reservation, agent, when, dry_run=True, explain=explain)
                swapped = decision.accepted and not dry_run
                decision = replaced(decision, extra={**decision.extra, "previous": "replaced" if swapped else "kept"})
                cluster = self._cache.cluster(connection, meta)
                window = axis.window_start(planner.plan, cluster)
                stored = axis.decision_on_store(decision, window)
                if dry_run:
                    return stored
                rows = self._rows(connection, meta)
                was = replaced(old, allocations=shifted(old.allocations, window))
                rows.update(axis.store_clock(cluster), was, reservation, stored, when, actor)
            if decision.accepted:
                new = Accepted(reservation, when, list(decision.allocations))
                self._cache.advance(rows.version, swapping({name: new}))
            return stored

    # -- the plan's life after submission (planner/store/lifecycle.py) ----------------------------

    def advance(self, to: datetime, actor: str | None = None) -> AdvanceReport:
        """Move the plan's clock forward to `to` (never back); reservations whose every lease has ended expire, and
        what ended a horizon ago moves to the history (planner/store/history.py)."""
        lifecycle.aware(to, "the new clock")
        with self._lock:
            self._warm(dry_run=False)
            with self._db.session(write=True) as (connection, meta):
                rows = self._rows(connection, meta)
                cluster = self._cache.cluster(connection, meta)
                planner = self._cache.planner(connection, meta)
                report = lifecycle.expire(rows, cluster, to, actor)
                trial = Planner.over(planner.plan.copy())  # the cached plan stays as it is until this commits
                lifecycle.moving_clock(report)(trial)
                decided = series.go_on(trial, planner.plan.clock, series.agents_of(connection, series.recurring(trial)))
                series.write(rows, decided, axis.window_start(trial.plan, cluster),
                             self._cache.instants(axis.store_clock(cluster)), actor)
                swept = history.sweep(rows, cluster, to)
                report = replaced(report, placed=tuple((d.reservation, d.instance) for d in decided if d.placed),
                                  missed=tuple((d.reservation, d.instance, d.reason) for d in decided
                                               if d.reason is not None),
                                  archived=swept.archived, pruned=swept.log_deleted + swept.history_deleted)
                rows.log("advance", actor, None, None, None, None, report.to_json())
                written = schema.read_meta(connection)
            self._cache.rebuilt(written, trial, cluster)
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
        lifecycle.aware(at, "the time of a capacity change")
        with self._lock:
            self._warm(dry_run)
            with self._db.session(write=not dry_run) as (connection, meta):
                cluster = self._cache.cluster(connection, meta)
                change = lifecycle.check_capacity(connection, meta, cluster, at, capacity)
                adapted = lifecycle.adapt_to(connection, self._cache.planner(connection, meta), change, agent, dry_run)
                report = axis.capacity_on_store(adapted.report, axis.window_start(adapted.planner.plan, cluster))
                if dry_run:
                    return report
                rows = self._rows(connection, meta)
                rows.capacity(change.text, report, axis.store_clock(cluster), actor)
                written = schema.read_meta(connection)
            # Only now, committed, does the adapted plan replace the cached one.
            self._cache.rebuilt(written, adapted.planner, change.cluster)
            return report

    def replan(self, actor: str | None = None, time_limit: float | None = None, backend: str | None = None,
               gap: float | None = None) -> ReplanOutcome:
        """Re-optimise the accepted reservations (MILP, planner.replan.optimise) and write back the leases that moved.

        Every accepted reservation stays accepted; running ones (a lease began before the clock) stay
        where they are. The solver works on a snapshot without holding the writer lock; what moved is
        written in one transaction, and only if no other writer changed the plan meanwhile (otherwise
        it solves again, up to REPLAN_ATTEMPTS times, in what is left of `time_limit`). If the solver finds nothing
        better, nothing changes.
        """
        started = time.perf_counter()
        for attempt in range(lifecycle.REPLAN_ATTEMPTS):
            left = None if time_limit is None else time_limit - (time.perf_counter() - started)
            if attempt and left is not None and left < lifecycle.REPLAN_LEAST_SECONDS:
                break  # the time limit covers the attempts together
            with self._lock, self._db.session(write=False) as (connection, meta):
                plan = self._cache.planner(connection, meta).plan.copy()
                cluster = self._cache.cluster(connection, meta)
                seen = (meta["plan_id"], meta["plan_version"])
            outcome = axis.replan_on_store(lifecycle.reoptimise(plan, left, backend, gap),
                                           axis.window_start(plan, cluster))
            with self._lock:
                with self._db.session(write=True) as (connection, meta):
                    if (meta["plan_id"], meta["plan_version"]) != seen:
                        continue  # another writer changed the plan while the solver ran: solve again
                    rows = self._rows(connection, meta)
                    rows.replan(outcome, axis.store_clock(cluster), actor)
                if outcome.moved:
                    moved = {name: plan.accepted[name] for name in outcome.moved}
                    self._cache.advance(rows.version, swapping(moved))
                return outcome
        raise StoreError("conflict", f"the plan changed while it was being re-planned, {lifecycle.REPLAN_ATTEMPTS} "
                         "times; nothing was written", "run the re-planning again when submissions are quieter")

    def readmit(self, actor: str | None = None, until: float | None = None,
                skipped: builtins.list[str] | None = None) -> builtins.list[Decision]:
        """Submit again, as they were first submitted, the reservations rejected or dropped for capacity whose
        deadline is still ahead, oldest decision first; keep those that fit now (after a replan, or capacity
        that came back). Only the accepted ones are written (as submissions by `actor`); the answer is theirs.
        None is tried once `time.perf_counter()` reaches `until`: `skipped` (when given) gains those left."""
        table = schema.reservations
        now = self.now()
        with self._lock, self._db.session(write=False) as (connection, _):
            candidates = queries.records(connection, table.c.state.in_(("rejected", "dropped")),
                                         table.c.reason_code == "capacity")
        admitted = []
        for record in sorted(candidates, key=lambda r: r.decided):
            reservation = record.reservation()
            deadline = deadline_of(reservation, reservation.arrival_at(record.submitted))
            if reservation.every is None and deadline is not None and deadline <= now:
                continue  # its window has passed: it could only be rejected again
            if until is not None and time.perf_counter() >= until:
                if skipped is not None:
                    skipped.append(record.name)
                continue
            agent = record.agent or DEFAULT_AGENT
            trial = self.submit(reservation, agent, actor, submitted=record.submitted, dry_run=True, explain=False,
                                validated=True)
            if trial.accepted:
                decision = self.submit(reservation, agent, actor, submitted=record.submitted, explain=False,
                                       validated=True)
                if decision.accepted:
                    admitted.append(decision)
        return admitted

    # -- reading -----------------------------------------------------------------------------------

    def get(self, name: str) -> Record:
        """The stored reservation of that name (from the history when it has moved there); an unknown name is an
        error suggesting a close one."""
        with self._lock, self._db.session(write=False) as (connection, _):
            if queries.state_of(connection, name) is None:
                past = history.latest(connection, name)
                if past is not None:
                    return past.record
            self._state_of(connection, name)
            return queries.records(connection, schema.reservations.c.name == name)[0]

    def existing(self, names: Sequence[str]) -> set[str]:
        """Which of `names` the store holds already, in any state (a submission under one of them is refused)."""
        found: set[str] = set()
        with self._lock, self._db.session(write=False) as (connection, _):
            for first in range(0, len(names), EXISTING_CHUNK):
                found.update(row.name for row in named_rows(connection, schema.reservations,
                                                            names[first:first + EXISTING_CHUNK]))
        return found

    def list(self, user: str | None = None, state: str | None = None, start: datetime | None = None,
             end: datetime | None = None) -> builtins.list[Record]:
        """Stored reservations in decision order; `start`/`end` keep those holding a lease inside [start, end)."""
        _known_state(state)
        with self._lock, self._db.session(write=False) as (connection, meta):
            ranged = start is not None or end is not None
            cluster = self._cache.cluster(connection, meta) if ranged else None
            return queries.records(connection, *queries.conditions(cluster, user, state, start, end))

    def log(self, limit: int | None = None, reservation: str | None = None) -> builtins.list[LogEntry]:
        """The decision log, oldest first; with `limit`, only the latest `limit` entries; with `reservation`, only
        that reservation's."""
        with self._lock, self._db.session(write=False) as (connection, _):
            return queries.log_entries(connection, limit, reservation=reservation)

    # -- a server's reads: one snapshot each, without the store's lock, so readers never wait for writers --------

    def meta(self) -> dict[str, str]:
        """The store's meta rows (plan id, version, clock); an error if it holds no plan."""
        with self._db.reading() as connection:
            if not schema.has_tables(connection):
                raise StoreError("uninitialised", f"the plan store at {self.where} holds no plan yet")
            return schema.read_meta(connection)

    def meta_and_owner(self, name: str | None) -> tuple[dict[str, str], Owner | None]:
        """The meta rows and the named reservation's owner (None: no such reservation, or no name), in one snapshot."""
        with self._db.reading() as connection:
            try:
                values = schema.read_meta(connection)
            except sa.exc.OperationalError as exc:  # the tables went away: the store was emptied under the server
                raise StoreError("uninitialised", f"the plan store at {self.where} holds no plan") from exc
            return values, None if name is None else queries.owner(connection, name)

    def names(self, user: str | None) -> builtins.list[str]:
        """Names of the user's reservations (every reservation's when `user` is None)."""
        with self._db.reading() as connection:
            return queries.names(connection, user)

    def page(self, cluster: Cluster, *, user: str | None = None, state: str | None = None,
             start: datetime | None = None, end: datetime | None = None, names_in: builtins.list[str] | None = None,
             queue: str | None = None, offset: int = 0, limit: int = 100, with_leases: bool = True) -> Page:
        """One page of stored reservations in decision order, with the number matching in all (queries.page)."""
        where = queries.conditions(cluster, user, state, start, end, names_in, queue)
        with self._db.reading() as connection:
            return queries.page(connection, where, offset, limit, with_leases)

    def log_entries(self, *, limit: int = 100, before: int | None = None, reservation: str | None = None,
                    visible_to: str | None = None) -> builtins.list[LogEntry]:
        """The latest `limit` log entries older than id `before`, oldest first; `visible_to` as queries.log_entries."""
        with self._db.reading() as connection:
            return queries.log_entries(connection, limit, before, reservation, visible_to)

    def history(self, *, name: str | None = None, user: str | None = None, state: str | None = None,
                offset: int = 0, limit: int = 100) -> tuple[builtins.list[Archived], int]:
        """One page of the history (reservations that ended a horizon ago), the latest moved first, and how many
        match in all."""
        _known_state(state)
        with self._db.reading() as connection:
            return history.page(connection, history.conditions(name, user, state), offset, limit)

    def retention(self) -> str:
        """How long the log and the history keep what is behind the plan's clock (`forever`: everything)."""
        with self._lock, self._db.session(write=False) as (_, meta):
            return meta.get("retention", history.FOREVER)

    def set_retention(self, text: str) -> str:
        """Set the retention (a duration such as `90d`, or `forever`); it applies from the clock's next move."""
        history.retention_seconds(text)  # a bad one changes nothing
        with self._lock, self._db.session(write=True) as (connection, _):
            schema.write_meta(connection, {"retention": text.strip()})
        return text.strip()

    # -- helpers -------------------------------------------------------------------------------------

    def _warm(self, dry_run: bool) -> None:
        """Read the whole plan before taking the writer lock, not while holding it (a dry run takes none)."""
        if self._cache.empty and not dry_run:
            self.load_plan()

    def _rows(self, connection: Connection, meta: dict[str, str]) -> Rows:
        """The writer of this write transaction; its log rows go through `_log`."""
        return Rows(connection, meta, self._cache.instants, self._log)

    # Every log row goes through here (the last write of a decision), so a failure after a decision's rows can be
    # injected in one place.
    _log = staticmethod(append_log)

    def _state_of(self, connection: Connection, name: str, owner: str | None = None) -> str:
        """The state of the named reservation; an unknown name is a StoreError suggesting a close one, and with
        `owner`, another user's reservation is a `forbidden` one."""
        state = queries.state_of(connection, name)
        if state is None:
            past = history.latest(connection, name)
            if past is not None:
                raise StoreError("state", f"reservation `{name}` is {past.record.state}, and has moved to the history",
                                 f"`rayon history {name}` shows it")
            raise StoreError("unknown", f"no reservation named `{name}` in the plan store at {self.where}",
                             did_you_mean(name, queries.names(connection, None)))
        if owner is not None:
            found = queries.owner(connection, name)
            if found is None or found.user != owner:
                raise StoreError("forbidden", f"reservation `{name}` belongs to another user",
                                 "only its owner or an admin may change it")
        return state


@dataclass(frozen=True)
class _Ticket:
    """One submission waiting for its batch."""

    reservation: Reservation
    agent: str | Agent
    actor: str | None
    submitted: datetime | None
    explain: bool
    validated: bool
    owner: str | None = None  # refuse the name if another user's reservation holds it
    validated_on: tuple[str, str, str] | None = None  # the plan_key it was validated against


def _others_names(tickets: Sequence[_Ticket], named: dict[str, queries.Named]) -> dict[int, StoreError]:
    """The tickets (by index) whose name another user's stored reservation holds (`named`: the stored rows of
    their names), with the error for each."""
    refused = {}
    for index, ticket in enumerate(tickets):
        found = named.get(ticket.reservation.name)
        if ticket.owner is not None and found is not None and found.user != ticket.owner:
            refused[index] = StoreError("forbidden", f"the name `{ticket.reservation.name}` belongs to another "
                                        "user's reservation", "choose another name")
    return refused


def _decide(planner: Planner, ticket: _Ticket, key: tuple[str, str, str]) -> tuple[Decision, datetime]:
    """A submission decided on `planner`'s plan (whose `plan_key` is `key`) without changing it, and the time it
    is submitted at."""
    when = ticket.submitted or planner.plan.now
    validated = ticket.validated and ticket.validated_on in (None, key)
    return planner.submit(ticket.reservation, ticket.agent, when, dry_run=True, explain=ticket.explain,
                          validated=validated), when


def _attempt(planner: Planner, ticket: _Ticket, key: tuple[str, str, str]) -> tuple[Decision, datetime] | Exception:
    """A submission decided on `planner`'s plan, which keeps it if accepted (for the next one in its batch), or the
    error that refused it (that submission's alone: the batch goes on)."""
    try:
        decision, when = _decide(planner, ticket, key)
    except Exception as error:  # handed back to that submission's caller
        return error
    if decision.accepted:
        planner.plan.add(Accepted(ticket.reservation, when, list(decision.allocations)))
    return decision, when


def _cutting(name: str, reservation: Reservation, index: int) -> Callable[[Planner], None]:
    """A change to a cached planner: the series ended before instance `index`, its later leases gone."""

    def cut(planner: Planner) -> None:
        old = planner.plan.remove(name)
        kept = [a for a in old.allocations if a.instance < index]
        planner.plan.add(Accepted(reservation, old.submitted, kept))

    return cut


def _known_state(state: str | None) -> None:
    """Refuse an unknown reservation state, suggesting a close one."""
    if state is not None and state not in STATES:
        raise StoreError("state", f"unknown state `{state}`; choose one of {', '.join(STATES)}",
                         did_you_mean(state, STATES))
