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

The Store is built of parts, one concept each, on a shared base (planner/store/base.py: the database, the lock,
the cached plan): decisions (deciding.py), the changes after them (changing.py) and the reads (reading.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from planner.store import schema
from planner.store.cache import plan_key
from planner.store.changing import Changing
from planner.store.deciding import DECIDE_ATTEMPTS, DISTRUST_BATCHES, _Ticket
from planner.store.errors import StoreError
from planner.store.reading import EXISTING_CHUNK, Reading
from planner.store.records import AdvanceReport, CapacityReport, LogEntry, Owner, Page, Record, ReplanOutcome
from planner.store.session import Database, default_state_path
from planner.store.writes import fresh_meta, utcnow
from rdl.cluster import Cluster, parse_cluster

__all__ = ["ACTIONS", "DECIDE_ATTEMPTS", "DISTRUST_BATCHES", "EXISTING_CHUNK", "STATES", "AdvanceReport",
           "CapacityReport", "LogEntry", "Owner", "Page", "Record", "ReplanOutcome", "Store", "StoreError",
           "_Ticket", "default_state_path", "plan_key"]

STATES = schema.STATES
ACTIONS = schema.ACTIONS


class Store(Changing, Reading):
    """The plan store. Thread-safe; open one per process (`Store.open`), close it when done."""

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

