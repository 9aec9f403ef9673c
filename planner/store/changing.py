"""The Store's changes after a decision: cancel and update a reservation, move the clock, change capacity, re-plan.

Each is one write transaction with its log rows; the cached plan learns the change only once it is committed.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Mapping
from dataclasses import replace as replaced
from datetime import datetime

from planner.admission import Planner
from planner.agents.deadline import deadline_of
from planner.agents.registry import DEFAULT_AGENT, Agent
from planner.core.decision import Decision
from planner.core.plan import Accepted, shifted
from planner.replan import adapt
from planner.store import axis, history, lifecycle, queries, schema, series
from planner.store.cache import swapping
from planner.store.deciding import Deciding
from planner.store.errors import StoreError
from planner.store.records import AdvanceReport, CapacityReport, Record, ReplanOutcome
from rdl import units
from rdl.tree import Reservation


class Changing(Deciding):
    """The changes to the plan after its decisions (planner/store/lifecycle.py holds their parts)."""

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
                window = axis.window_start(trial.plan, cluster)
                series.write(rows, decided, window, self._cache.instants(axis.store_clock(cluster)), actor)
                swept = history.sweep(rows, cluster, to, series.recurring(trial), window)
                for name, instances in swept.instances.items():  # behind the window: in the history now
                    _without(name, instances)(trial)
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
        attempts = 0
        for attempt in range(lifecycle.REPLAN_ATTEMPTS):
            left = None if time_limit is None else time_limit - (time.perf_counter() - started)
            if attempt and left is not None and left < lifecycle.REPLAN_LEAST_SECONDS:
                break  # the time limit covers the attempts together
            attempts += 1
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
        short = " (the time limit left too little for another)" if attempts < lifecycle.REPLAN_ATTEMPTS else ""
        raise StoreError("conflict", f"the plan changed while it was being re-planned, {attempts} "
                         f"time{'s' if attempts > 1 else ''}{short}; nothing was written",
                         "run the re-planning again when submissions are quieter")

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


def _cutting(name: str, reservation: Reservation, index: int) -> Callable[[Planner], None]:
    """A change to a cached planner: the series ended before instance `index`, its later leases gone."""

    def cut(planner: Planner) -> None:
        old = planner.plan.remove(name)
        kept = [a for a in old.allocations if a.instance < index]
        planner.plan.add(Accepted(reservation, old.submitted, kept))

    return cut


def _without(name: str, instances: frozenset[int]) -> Callable[[Planner], None]:
    """A change to a cached planner: the series' past instances gone (to the history)."""

    def drop(planner: Planner) -> None:
        old = planner.plan.remove(name)
        planner.plan.add(Accepted(old.reservation, old.submitted, [a for a in old.allocations
                                                                   if a.instance not in instances]))

    return drop
