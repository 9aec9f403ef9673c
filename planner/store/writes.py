"""The rows one write transaction writes: reservations, leases, meta, log rows, and the plan version it leaves."""

from __future__ import annotations

import functools
import getpass
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any as AnyType

from sqlalchemy.engine import Connection

from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.core.plan import Accepted, Allocation
from planner.replan import adapt
from planner.store import driver, queries, schema
from planner.store.records import CapacityReport, Record, ReplanOutcome
from planner.store.rendering import Instants, allocation_json, decision_json
from rdl import units
from rdl.cluster import Cluster
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation

LogRows = Callable[[Connection, Sequence[dict[str, AnyType]]], None]
"""(connection, rows): appends rows (`log_row`'s) to the decision log."""


DEFAULT_RETENTION = "90d"  # how long the log and the history keep what is behind the plan's clock


def fresh_meta(cluster: Cluster) -> dict[str, str]:
    """Meta rows of a new plan: its own id, version 0, the clock at the cluster's start."""
    return {"schema_version": str(schema.SCHEMA_VERSION), "plan_id": uuid.uuid4().hex, "plan_version": "0",
            "rebuild_version": "0", "now": units.format_instant(cluster.start), "retention": DEFAULT_RETENTION}


def log_row(action: str, actor: str | None, name: str | None, request: str | None, accepted: bool | None,
            reason: dict[str, AnyType] | None, decision: dict[str, AnyType] | None,
            clock: datetime | None) -> dict[str, AnyType]:
    """One decision log row's columns (`clock`: the plan's clock as the row is written)."""
    return dict(time=utcnow(), actor=actor or _actor(), action=action, reservation=name, request=request,
                accepted=accepted, reason_code=reason["code"] if reason else None, reason=reason, decision=decision,
                clock=clock)


LOG_KEYS = ("time", "actor", "action", "reservation", "request", "accepted", "reason_code", "reason", "decision",
            "clock")  # log_row's
RESERVATION_KEYS = ("name", "rdl", "user", "queue", "value", "priority", "submitted", "state", "agent", "decided",
                    "updated", "reason_code", "reason", "version")  # a decided reservation's row (`Rows._insert`)


def append_log(connection: Connection, rows: Sequence[dict[str, AnyType]]) -> None:
    """Append rows to the decision log, in one statement however many."""
    driver.execute_many(connection, driver.STATEMENTS.get("log", connection.dialect, lambda: schema.log.insert(),
                                                          LOG_KEYS), rows)


@dataclass(frozen=True)
class Submission:
    """A decided submission to store: the reservation, its decision (on the store's axis), when it was submitted
    and by whom."""

    reservation: Reservation
    decision: Decision
    when: datetime
    actor: str | None


class Rows:
    """The writes of one write transaction (which holds the writer lock); `version` is the plan version it leaves."""

    def __init__(self, connection: Connection, meta: dict[str, str], instants: Callable[[Clock], Instants],
                 log: LogRows):
        self.connection = connection
        self.meta = meta
        self.version = int(meta["plan_version"])
        self.clock = units.read_instant(meta["now"])  # the plan's clock, as the log rows record it
        self._instants = instants
        self._log = log

    def bump(self) -> int:
        """The next plan version, written to meta."""
        self.version += 1
        schema.write_meta(self.connection, {"plan_version": str(self.version)})
        return self.version

    def log(self, action: str, actor: str | None, name: str | None, request: str | None, accepted: bool | None,
            reason: dict[str, AnyType] | None, decision: dict[str, AnyType] | None) -> None:
        """Append one row to the decision log."""
        self._log(self.connection, [log_row(action, actor, name, request, accepted, reason, decision, self.clock)])

    def submissions(self, clock: Clock, batch: Sequence[Submission], stored: Mapping[str, queries.Named]) -> None:
        """Store decided submissions, in order, as if one by one: each one's row, leases and log row (an accepted
        name's clash is only logged). `stored`: the rows their names have now (`queries.named`).

        A statement per table for the whole batch, not per submission: a statement's own cost (SQLAlchemy's
        and the driver's) was most of what storing a decision took."""
        names = [item.reservation.name for item in batch]
        if len(set(names)) < len(names):  # a name twice: the later one must see the row the earlier one leaves
            for item in batch:
                self.submissions(clock, [item], queries.named(self.connection, [item.reservation.name]))
            return
        before, replaced = self.version, []
        inserted: list[tuple[Submission, str, int]] = []
        logs = []
        instants = self._instants(clock)
        for item in batch:
            text = format_reservation(item.reservation)
            row = stored.get(item.reservation.name)
            if row is None or row.state != "accepted":  # an accepted name keeps its row: the clash is only logged
                if row is not None:
                    replaced.append(row.id)
                if item.decision.accepted:
                    self.version += 1
                inserted.append((item, text, self.version))
            reason = item.decision.reason.to_json() if item.decision.reason else None
            logs.append(log_row("submit", item.actor, item.reservation.name, text, item.decision.accepted, reason,
                                decision_json(item.decision, instants), self.clock))
        if replaced:
            self.connection.execute(schema.leases.delete().where(schema.leases.c.reservation_id.in_(replaced)))
            self.connection.execute(schema.reservations.delete().where(schema.reservations.c.id.in_(replaced)))
        if self.version != before:
            schema.write_meta(self.connection, {"plan_version": str(self.version)})
        self._insert(inserted)
        self._log(self.connection, logs)

    def cancel(self, clock: Clock, name: str, actor: str | None) -> Record:
        """Mark an accepted reservation cancelled (its leases stay, for the record), log what it freed; its record."""
        table = schema.reservations
        self.connection.execute(table.update().where(table.c.name == name)
                                .values(state="cancelled", updated=utcnow(), version=self.version))
        (record,) = queries.records(self.connection, table.c.name == name)
        freed = [allocation_json(a, self._instants(clock)) for a in record.allocations]
        self.log("cancel", actor, name, None, True, None,
                 {"reservation": name, "cancelled": True, "allocations": freed})
        return record

    def update(self, clock: Clock, old: Accepted, reservation: Reservation, decision: Decision, when: datetime,
               actor: str | None) -> None:
        """Store an update's outcome: the swap (row and leases) if accepted; the log row either way."""
        text = format_reservation(reservation)
        record = decision_json(decision, self._instants(clock))
        if decision.accepted:
            self.bump()
            table = schema.reservations
            decided = utcnow()
            row_id = self._replace_leases(reservation.name, decision.allocations)
            self.connection.execute(table.update().where(table.c.id == row_id).values(
                rdl=text, user=reservation.user, queue=reservation.queue, value=reservation.value,
                priority=reservation.priority, submitted=when, agent=decision.extra.get("agent"), decided=decided,
                updated=decided, reason_code=None, reason=None, version=self.version))
            record["previous_allocations"] = [allocation_json(a, self._instants(clock)) for a in old.allocations]
        reason = decision.reason.to_json() if decision.reason else None
        self.log("update", actor, reservation.name, text, decision.accepted, reason, record)

    def capacity(self, text: str, report: CapacityReport, clock: Clock, actor: str | None) -> None:
        """Store a capacity change: the cluster file, moved leases, dropped reservations, and the log rows."""
        version = self.bump()
        schema.write_meta(self.connection, {"rebuild_version": str(version)})  # the cluster changed: caches rebuild
        self.connection.execute(schema.cluster.update().values(yaml=text))
        table, now = schema.reservations, utcnow()
        moves = report.adaptation
        self._moves("capacity", actor, moves.moved, moves.previous, self._instants(clock))
        for name in moves.dropped:
            reason = report.reasons[name]
            self.connection.execute(table.update().where(table.c.name == name).values(
                state="dropped", updated=now, reason_code=reason.code, reason=reason.to_json(), version=version))
            self.log("capacity", actor, name, None, False, reason.to_json(),
                     {"reservation": name, "accepted": False, "dropped": True, "reason": reason.to_json()})
        for (name, index), reason in report.missed.items():  # the series goes on: each instance its own decision
            self.log("capacity", actor, name, None, False, reason.to_json(),
                     {"reservation": name, "instance": index, "accepted": False, "dropped": True,
                      "reason": reason.to_json()})
        change = adapt.change_entry(report.at, report.capacity)
        self.log("capacity", actor, None, change, None, None, report.to_json(clock))

    def replan(self, outcome: ReplanOutcome, clock: Clock, actor: str | None) -> None:
        """Store what re-planning moved (nothing, if nothing moved) and its log rows."""
        if outcome.moved:
            self.bump()
            self._moves("replan", actor, outcome.moved, outcome.previous, self._instants(clock))
        summary = outcome.to_json(clock)
        summary["moved"] = list(outcome.moved)
        self.log("replan", actor, None, None, None, None, summary)

    def _insert(self, inserted: Sequence[tuple[Submission, str, int]]) -> None:
        """Insert decided reservations' rows (each with its RDL text and the plan version it leaves), and the
        leases of those that hold any."""
        if not inserted:
            return
        decided = utcnow()
        rows = []
        for item, text, version in inserted:
            reservation, decision = item.reservation, item.decision
            reason = decision.reason
            rows.append(dict(
                name=reservation.name, rdl=text, user=reservation.user, queue=reservation.queue,
                value=reservation.value, priority=reservation.priority, submitted=item.when,
                state="accepted" if decision.accepted else "rejected", agent=decision.extra.get("agent"),
                decided=decided, updated=decided, reason_code=reason.code if reason else None,
                reason=reason.to_json() if reason else None, version=version))
        table = schema.reservations
        driver.execute_many(self.connection, driver.STATEMENTS.get(
            "reservations", self.connection.dialect, lambda: table.insert().inline(), RESERVATION_KEYS), rows)
        stored = queries.named(self.connection, [item.reservation.name for item, _, _ in inserted])
        schema.insert_leases(self.connection, [(stored[item.reservation.name].id, item.decision.allocations)
                                               for item, _, _ in inserted])

    def _replace_leases(self, name: str, allocations: Iterable[Allocation]) -> int:
        """Give the named reservation these leases instead of its own; returns its row id."""
        row = self.connection.execute(schema.FIND_RESERVATION, {"name": name}).one()
        self.connection.execute(schema.leases.delete().where(schema.leases.c.reservation_id == row.id))
        schema.insert_leases(self.connection, [(row.id, allocations)])
        return int(row.id)

    def _moves(self, action: str, actor: str | None, moved: Mapping[str, Sequence[Allocation]],
               previous: Mapping[str, Sequence[Allocation]], instants: Instants) -> None:
        """New leases for moved reservations, each with a log row saying where they were and are."""
        table, now = schema.reservations, utcnow()
        for name, allocations in moved.items():
            row_id = self._replace_leases(name, list(allocations))
            self.connection.execute(table.update().where(table.c.id == row_id).values(updated=now,
                                                                                       version=self.version))
            self.log(action, actor, name, None, True, None,
                     {"reservation": name, "accepted": True, "moved": True,
                      "allocations": [allocation_json(a, instants) for a in allocations],
                      "previous_allocations": [allocation_json(a, instants) for a in previous.get(name, ())]})


def utcnow() -> datetime:
    """The wall-clock time of a decision (the plan's own clock is `Store.now`)."""
    return datetime.now(UTC)


@functools.cache
def _actor() -> str:
    """Who is acting, when the caller does not say: the operating-system user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
