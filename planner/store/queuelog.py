"""What the queues were over time: the capacities the plan follower wrote at each step, and what a scheduler
reports it actually allocated (our simulator, YuniKorn's REST), kept for a bounded span of plan time.

One row per queue and run of equal figures: a step whose figures equal the queue's previous step (and follow
it without a gap) stretches that row's `end` instead of adding a row, so a queue whose capacity holds for a day
costs one row, and one that changes at every step one row per step. Rows that ended more than `keep` before the
latest step its source recorded are deleted as new ones are written. The table is the store's (schema.queue_log); this
module reaches it through the store's engine and never touches the plan's version: recording is not a decision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from planner.store import schema
from planner.store.errors import StoreError

FOLLOWER = "follower"  # what the follower wrote: {"guaranteed", "max", "planned"}
SOURCES = (FOLLOWER, "simulate", "yunikorn")  # the others report {"allocated"}
DEFAULT_KEEP = timedelta(days=30)
MAX_RUNS = 200_000  # rows one read returns at most: a longer range is refused, asking for a shorter one
table = schema.queue_log


@dataclass(frozen=True)
class QueueFigures:
    """One queue's figures for one step: who it is (its kind, reservation and owner when known) and what it had."""

    queue: str
    figures: Mapping[str, AnyType]
    kind: str | None = None
    reservation: str | None = None
    user: str | None = None


@dataclass(frozen=True)
class Run:
    """A queue's figures over `[start, end)`, as one source recorded them."""

    source: str
    queue: str
    start: datetime
    end: datetime
    figures: dict[str, AnyType]
    kind: str | None = None
    reservation: str | None = None
    user: str | None = None


def _text(figures: Mapping[str, AnyType]) -> str:
    """The figures as compact JSON with sorted keys: equal figures, equal text."""
    return json.dumps(figures, sort_keys=True, separators=(",", ":"))


def _known(source: str) -> None:
    if source not in SOURCES:
        raise StoreError("input", f"`{source}` is not a source of queue figures: give one of {', '.join(SOURCES)}")


class QueueLog:
    """The queue log of one store (its engine), keeping `keep` of plan time behind the latest step recorded."""

    def __init__(self, engine: Engine, keep: timedelta | None = DEFAULT_KEEP):
        self.engine, self.keep = engine, keep

    def record(self, source: str, start: datetime, end: datetime, queues: Sequence[QueueFigures]) -> int:
        """Record each queue's figures over the step `[start, end)`; the rows added (the others stretched or, for a
        step already recorded, left as they are). Rows past the retention are deleted in the same transaction."""
        _known(source)
        if end <= start:
            raise StoreError("input", f"a step ends after it starts: [{start}, {end})")
        names = [q.queue for q in queues]
        with schema.transaction(self.engine, write=True) as connection:
            found = connection.execute(
                sa.select(table.c.id, table.c.queue, table.c.end, table.c.figures, table.c.kind,
                          table.c.reservation, table.c.user)
                .where(table.c.source == source, table.c.queue.in_(names), table.c.end >= start,
                       table.c.start <= start)).all()
            covered = {row.queue for row in found if row.end > start}
            before = {row.queue: row for row in found if row.end == start}
            stretch, fresh = [], []
            for q in queues:
                if q.queue in covered:
                    continue
                row, text = before.get(q.queue), _text(q.figures)
                if row is not None and (row.figures, row.kind, row.reservation, row.user) == \
                        (text, q.kind, q.reservation, q.user):
                    stretch.append(row.id)
                else:
                    fresh.append({"source": source, "queue": q.queue, "kind": q.kind, "reservation": q.reservation,
                                  "user": q.user, "start": start, "end": end, "figures": text})
            if stretch:
                connection.execute(table.update().where(table.c.id.in_(stretch)).values(end=end))
            if fresh:
                connection.execute(table.insert(), fresh)
            self._prune(connection, source, end)
        return len(fresh)

    def load(self, source: str, runs: Sequence[Run]) -> int:
        """Replace what `source` recorded of each queue in `runs` over the span its runs cover with `runs` (a
        simulation loaded again replaces itself; one loaded a piece at a time, each piece a stretch of time or a
        set of queues, adds up); the rows written."""
        _known(source)
        if any(run.source != source or run.end <= run.start for run in runs):
            raise StoreError("input", f"every run loaded as `{source}` must be of that source and end after it starts")
        spans: dict[str, tuple[datetime, datetime]] = {}
        for run in runs:
            first, last = spans.get(run.queue, (run.start, run.end))
            spans[run.queue] = (min(first, run.start), max(last, run.end))
        if not runs:
            return 0
        with schema.transaction(self.engine, write=True) as connection:
            for queue, (first, last) in spans.items():
                connection.execute(table.delete().where(table.c.source == source, table.c.queue == queue,
                                                        table.c.start < last, table.c.end > first))
            connection.execute(table.insert(), [
                {"source": source, "queue": run.queue, "kind": run.kind, "reservation": run.reservation,
                 "user": run.user, "start": run.start, "end": run.end, "figures": _text(run.figures)}
                for run in runs])
            self._prune(connection, source, max(last for _, last in spans.values()))
        return len(runs)

    def read(self, start: datetime, end: datetime, source: str | None = None) -> list[Run]:
        """The runs that overlap `[start, end)` (of one source, or all), by queue and time; a StoreError when there
        are more than MAX_RUNS of them."""
        if source is not None:
            _known(source)
        query = sa.select(table).where(table.c.end > start, table.c.start < end)
        if source is not None:
            query = query.where(table.c.source == source)
        with schema.transaction(self.engine, write=False) as connection:
            rows = connection.execute(query.order_by(table.c.source, table.c.queue, table.c.start)
                                      .limit(MAX_RUNS + 1)).all()
        if len(rows) > MAX_RUNS:
            raise StoreError("input", f"more than {MAX_RUNS} runs of queue figures in that range",
                             "ask for a shorter range")
        return [Run(row.source, row.queue, row.start, row.end, json.loads(row.figures), row.kind, row.reservation,
                    row.user) for row in rows]

    def owners(self) -> dict[str, tuple[str | None, str | None, str | None]]:
        """What the follower last recorded of each queue: (kind, reservation, user); a scheduler's allocations are
        attributed to their queue's owner through it."""
        latest = (sa.select(table.c.queue, sa.func.max(table.c.id).label("id"))
                  .where(table.c.source == FOLLOWER).group_by(table.c.queue).subquery())
        query = sa.select(table.c.queue, table.c.kind, table.c.reservation, table.c.user).join(
            latest, latest.c.id == table.c.id)
        with schema.transaction(self.engine, write=False) as connection:
            return {row.queue: (row.kind, row.reservation, row.user) for row in connection.execute(query)}

    def _prune(self, connection: Connection, source: str, latest: datetime) -> None:
        """Delete `source`'s rows that ended `keep` before `latest` (per source: a simulation loaded for another
        span of time never deletes what the follower wrote)."""
        if self.keep is not None:
            connection.execute(table.delete().where(table.c.source == source, table.c.end < latest - self.keep))
