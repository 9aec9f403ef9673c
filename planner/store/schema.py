"""The plan store's layout: tables, engines, write transactions, and rows to plan objects and back.

SQLAlchemy Core over SQLite (one file) or PostgreSQL (a URL). Writers are serialised per plan:
SQLite starts every write transaction with `BEGIN IMMEDIATE` (WAL mode and a busy timeout make other
processes wait instead of failing), PostgreSQL takes a transaction-scoped advisory lock. Readers
never block writers.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import URL, Connection, Dialect, Engine

from planner.core.decision import Reason
from planner.core.plan import Allocation
from planner.store import driver
from rdl import units
from rdl.tree import Resources

SCHEMA_VERSION = 3  # 2: the history table, the log's plan clock, the retention setting; 3: queue_log (migrate.py)
PREFIX = "rayon_"
BUSY_TIMEOUT = 60.0  # seconds a SQLite writer waits for another one before giving up
ADVISORY_KEY = 0x7261796F6E  # "rayon": the PostgreSQL advisory lock that serialises the plan's writers
KEEPER_KEY = ADVISORY_KEY + 1  # held, for as long as it lives, by the one server that keeps the plan's clock
WRITE_OPTION = "rayon_write"  # execution option: this transaction writes (BEGIN IMMEDIATE on SQLite)
STATES = ("accepted", "rejected", "cancelled", "expired", "dropped")
ACTIONS = ("submit", "update", "cancel", "replan", "capacity", "advance")


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, on every backend (SQLite keeps naive UTC)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"the plan store keeps aware datetimes only, got naive {value}")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSON = sa.JSON().with_variant(JSONB(), "postgresql")
metadata = sa.MetaData()

# Key/value rows, so that any schema version can read another one's version number.
meta = sa.Table(
    f"{PREFIX}meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

cluster = sa.Table(
    f"{PREFIX}cluster", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("yaml", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("loaded", UTCDateTime, nullable=False),
)

def _record_columns() -> list[sa.Column[AnyType]]:
    """What a stored reservation's row says of it, from its text to why it was decided so: the live table and the
    history hold the same (new Column objects for each table)."""
    return [
        sa.Column("rdl", sa.Text, nullable=False),
        sa.Column("user", sa.String(255)),
        sa.Column("queue", sa.String(255)),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("submitted", UTCDateTime, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(64)),
        sa.Column("decided", UTCDateTime, nullable=False),
        sa.Column("updated", UTCDateTime, nullable=False),
        sa.Column("reason_code", sa.String(16)),
        sa.Column("reason", JSON),
    ]


reservations = sa.Table(
    f"{PREFIX}reservations", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *_record_columns(),
    # The plan_version at which this row last changed: lets a cached plan catch up row by row.
    sa.Column("version", sa.BigInteger, nullable=False, index=True),
    sa.CheckConstraint(f"state IN ({', '.join(repr(s) for s in STATES)})", name="reservation_state"),
)
sa.Index(f"{PREFIX}reservations_user", reservations.c.user)
sa.Index(f"{PREFIX}reservations_state", reservations.c.state)

leases = sa.Table(
    f"{PREFIX}leases", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("reservation_id", sa.Integer, sa.ForeignKey(reservations.c.id, ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("atom", sa.String(255), nullable=False),
    sa.Column("instance", sa.Integer, nullable=False),
    sa.Column("start_step", sa.Integer, nullable=False),
    sa.Column("end_step", sa.Integer, nullable=False),
    sa.Column("bundles", sa.Integer, nullable=False),
    # One bundle's resources as JSON text, {name: quantity}: text rather than a JSON column because a
    # decision writes dozens of leases of a handful of shapes, and each shape is serialised once.
    sa.Column("bundle", sa.Text, nullable=False),
)

log = sa.Table(
    f"{PREFIX}log", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("time", UTCDateTime, nullable=False),
    sa.Column("actor", sa.String(255)),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("reservation", sa.String(255), index=True),
    sa.Column("request", sa.Text),
    sa.Column("accepted", sa.Boolean),
    sa.Column("reason_code", sa.String(16)),
    sa.Column("reason", JSON),
    sa.Column("decision", JSON),
    # The plan's clock when the row was written (the retention setting counts on it; None: written before version 2).
    sa.Column("clock", UTCDateTime, index=True),
    sa.CheckConstraint(f"action IN ({', '.join(repr(a) for a in ACTIONS)})", name="log_action"),
)

# Reservations that ended long enough ago (planner/store/history.py): their row as it was, with their leases as one
# compact JSON text, so that the live tables stay the size of the live plan. `archived`: the plan's clock then.
history = sa.Table(
    f"{PREFIX}history", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(255), nullable=False, index=True),
    *_record_columns(),
    sa.Column("archived", UTCDateTime, nullable=False, index=True),
    sa.Column("leases", sa.Text, nullable=False),
)
sa.Index(f"{PREFIX}reservations_submitted", reservations.c.submitted)
sa.Index(f"{PREFIX}history_user", history.c.user)

# What the queues were over time (planner/store/queuelog.py): the follower's round and a scheduler's allocations,
# one row per queue and run of equal figures (`figures`: compact JSON), kept for a bounded span of plan time.
queue_log = sa.Table(
    f"{PREFIX}queue_log", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("source", sa.String(16), nullable=False),
    sa.Column("queue", sa.String(255), nullable=False),
    sa.Column("kind", sa.String(16)),
    sa.Column("reservation", sa.String(255)),
    sa.Column("user", sa.String(255)),
    sa.Column("start", UTCDateTime, nullable=False),
    sa.Column("end", UTCDateTime, nullable=False, index=True),
    sa.Column("figures", sa.Text, nullable=False),
)
sa.Index(f"{PREFIX}queue_log_run", queue_log.c.source, queue_log.c.queue, queue_log.c.end)

# Statements on the hot path of a submission, built once: SQLAlchemy then reuses their compiled form.
_READ_META = sa.select(meta.c.key, meta.c.value)
_WRITE_META = meta.update().where(meta.c.key == sa.bindparam("meta_key")).values(value=sa.bindparam("meta_value"))
FIND_RESERVATION = sa.select(reservations.c.id, reservations.c.state).where(
    reservations.c.name == sa.bindparam("name"))
_LEASE_KEYS = ("reservation_id", "atom", "instance", "start_step", "end_step", "bundles", "bundle")

# -- engines and transactions -------------------------------------------------------------------------------


def target_url(target: str | Path) -> URL:
    """A database URL for a path (a SQLite file, its parent folders created when it is first connected to) or a URL."""
    if isinstance(target, str) and "://" in target:
        return sa.make_url(target)
    return URL.create("sqlite+pysqlite", database=str(Path(target).expanduser()))


def create_engine(url: URL) -> Engine:
    """An engine whose write transactions are serialised per plan (see the module docstring)."""
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    if url.get_backend_name() == "postgresql":
        return sa.create_engine(url, pool_pre_ping=True)  # imports the driver: the caller reports a missing one
    raise ValueError(f"the plan store runs on SQLite or PostgreSQL, not `{url.get_backend_name()}`")


def _sqlite_engine(url: URL) -> Engine:
    # isolation_level=None stops pysqlite from issuing its own BEGIN, so the `begin` hook below decides.
    engine = sa.create_engine(url, connect_args={"timeout": BUSY_TIMEOUT, "isolation_level": None,
                                                 "check_same_thread": False})
    sa.event.listen(engine, "do_connect", _sqlite_folder)
    sa.event.listen(engine, "connect", _sqlite_connect)
    sa.event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_folder(dialect: Dialect, _record: AnyType, cargs: tuple[AnyType, ...], _params: AnyType) -> None:
    """Before the first connection, the file and its folders: made only when the store is used, never by opening
    it, and private (0700 folders, a 0600 file; SQLite gives its WAL files the file's mode): the plan holds every
    user's reservations and the tokens' hashes."""
    database = str(cargs[0]) if cargs else ""
    if database and database != ":memory:" and not database.startswith("file:"):
        private_file(Path(database))


def private_file(path: Path) -> None:
    """Make the folders missing above `path` (0700) and `path` itself (empty, 0600) if it is missing, whatever the
    umask; what exists is left as it is."""
    missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)  # mkdir's mode passes through the umask
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _sqlite_connect(dbapi_connection: AnyType, _record: AnyType) -> None:
    """Per connection: WAL (readers never wait for the writer), fsync at every commit, foreign keys."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")  # a decision answered is a decision on disk
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    """Writers take the database's write lock at BEGIN, so no two of them ever decide on one plan version."""
    immediate = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextlib.contextmanager
def transaction(engine: Engine, write: bool) -> Iterator[Connection]:
    """One transaction, committed on success; a write one holds the plan's writer lock throughout."""
    with engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: write})
        if not write and connection.dialect.name == "postgresql":
            connection.execution_options(isolation_level="REPEATABLE READ")  # one snapshot for every read
        with connection.begin():
            if write and connection.dialect.name == "postgresql":
                connection.execute(sa.select(sa.func.pg_advisory_xact_lock(ADVISORY_KEY)))
            yield connection


# -- meta -------------------------------------------------------------------------------------------------------


def has_tables(connection: Connection) -> bool:
    """Whether the store's tables exist (its meta table stands for them all)."""
    return sa.inspect(connection).has_table(meta.name)


def read_meta(connection: Connection) -> dict[str, str]:
    """The meta rows as a dict (read at the start of every transaction: straight from the driver)."""
    prepared = driver.STATEMENTS.get("read meta", connection.dialect, lambda: _READ_META)
    return {key: value for key, value in connection.exec_driver_sql(prepared.sql)}


def write_meta(connection: Connection, values: dict[str, str]) -> None:
    """Set meta keys (the rows exist: `create` writes every key)."""
    driver.execute_many(connection, driver.STATEMENTS.get("write meta", connection.dialect, lambda: _WRITE_META),
                        [{"meta_key": k, "meta_value": v} for k, v in values.items()])


def create(connection: Connection, values: dict[str, str], replace: bool) -> None:
    """Create the tables (dropping ours first when `replace`) and the meta rows."""
    if replace:
        metadata.drop_all(connection)
    metadata.create_all(connection)
    connection.execute(meta.insert(), [{"key": k, "value": v} for k, v in values.items()])


# -- leases ------------------------------------------------------------------------------------------------------


def insert_leases(connection: Connection, held: Iterable[tuple[int, Iterable[Allocation]]]) -> None:
    """Store allocations as lease rows (`held`: each reservation's row id and its allocations), in one
    statement, each bundle shape serialised once."""
    shapes: dict[Resources, str] = {}
    rows = [{"reservation_id": reservation_id, "atom": a.atom, "instance": a.instance, "start_step": a.start,
             "end_step": a.end, "bundles": a.bundles,
             "bundle": shapes.get(a.bundle) or shapes.setdefault(a.bundle, json.dumps(dict(a.bundle.items())))}
            for reservation_id, allocations in held for a in allocations]
    driver.execute_many(connection, driver.STATEMENTS.get("leases", connection.dialect,
                                                          lambda: leases.insert().inline(), _LEASE_KEYS), rows)


def read_leases(connection: Connection, ids: AnyType) -> dict[int, list[Allocation]]:
    """Allocations per reservation id, for the ids a subquery selects, in stored order."""
    rows = connection.execute(sa.select(leases).where(leases.c.reservation_id.in_(ids)).order_by(leases.c.id)).all()
    held: dict[int, list[Allocation]] = {}
    bundles: dict[str, Resources] = {}
    for row in rows:
        bundle = bundles.get(row.bundle) or bundles.setdefault(row.bundle, Resources.of(json.loads(row.bundle)))
        held.setdefault(row.reservation_id, []).append(
            Allocation(row.atom, row.start_step, row.end_step, row.bundles, bundle, row.instance))
    return held


# -- JSON forms ---------------------------------------------------------------------------------------------------


def reason_from_json(data: dict[str, AnyType] | None) -> Reason | None:
    """A Reason read back from its JSON form."""
    if not data:
        return None
    deadline = data.get("earliest_deadline")
    return Reason(data["code"], data["message"], data.get("atom"),
                  units.read_instant(deadline) if deadline else None)
