"""The Store's reads: records, the decision log and the history, and the retention that bounds the last two.

The first reads hold the store's lock (a command's view); the server's read each in one snapshot without it, so
readers never wait for writers.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from planner.store import history, queries, schema
from planner.store.base import StoreBase
from planner.store.driver import named_rows
from planner.store.errors import StoreError
from planner.store.history import Archived
from planner.store.records import LogEntry, Owner, Page, Record
from rdl.cluster import Cluster
from rdl.errors import did_you_mean

EXISTING_CHUNK = 500  # names asked about in one statement (SQLite bounds the parameters of one)


class Reading(StoreBase):
    """Stored reservations, log entries and history, read."""

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


def _known_state(state: str | None) -> None:
    """Refuse an unknown reservation state, suggesting a close one."""
    if state is not None and state not in schema.STATES:
        raise StoreError("state", f"unknown state `{state}`; choose one of {', '.join(schema.STATES)}",
                         did_you_mean(state, schema.STATES))
