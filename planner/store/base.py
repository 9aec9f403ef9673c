"""What every part of the Store shares: its database, its lock, the plan it keeps cached, and the plan's plain reads.

The Store (planner/store/facade.py) is this base with the decisions (deciding.py), the changes after them
(changing.py) and the reads of records, log and history (reading.py) on it; each part uses only what is here.
"""

from __future__ import annotations

import threading
from datetime import datetime

from sqlalchemy.engine import Connection, Engine

from planner.admission import Planner
from planner.core.compile import Clock
from planner.core.plan import Plan
from planner.store import axis, history, queries, schema
from planner.store.cache import PlanCache
from planner.store.errors import StoreError
from planner.store.session import Database
from planner.store.writes import Rows, append_log
from rdl import units
from rdl.cluster import Cluster
from rdl.errors import did_you_mean


class StoreBase:
    """The Store's shared state and the reads of the plan itself (its cluster, clock and leases)."""

    def __init__(self, database: Database):
        self._db = database
        self._lock = threading.RLock()
        self._cache = PlanCache()


    @property
    def engine(self) -> Engine:
        """The store's SQLAlchemy engine."""
        return self._db.engine

    @property
    def where(self) -> str:
        """The store's file path, or its URL without the password."""
        return self._db.where

    # -- the plan --------------------------------------------------------------------------------

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

    def known_meta(self) -> dict[str, str] | None:
        """The meta rows as this Store last read them, or None if it has read none (`recent_meta` without a read)."""
        return self._db.last_meta

    def recent_meta(self) -> dict[str, str]:
        """The meta rows as this Store last read them (at its latest transaction, so perhaps a moment old when
        other processes write too), or read now if it has read none: what a request may check its input against
        without a read of its own (`submit`'s `validated_on` catches a plan that changed meanwhile)."""
        return self.known_meta() or self.meta()

    def meta(self) -> dict[str, str]:
        """The store's meta rows (plan id, version, clock); an error if it holds no plan."""
        with self._db.reading() as connection:
            if not schema.has_tables(connection):
                raise StoreError("uninitialised", f"the plan store at {self.where} holds no plan yet")
            return schema.read_meta(connection)

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

