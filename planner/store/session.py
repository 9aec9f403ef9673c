"""Where a plan store lives and how it is entered: its engine, transactions, and the checks every session makes."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from planner.store import keeper, migrate, schema
from planner.store.errors import StoreError

DEFAULT_STATE = Path("~/.local/state/rayon/plan.db")
# How the error for an empty store says to fill it; the command line may point at its own command.
INIT_COMMAND = "rayon init --cluster CLUSTER.yaml"  # what `rayon` calls it (planner/cli/store.py)


def default_state_path() -> Path | str:
    """`$RAYON_STATE` (a file path or a database URL) if set, else `~/.local/state/rayon/plan.db`."""
    value = os.environ.get("RAYON_STATE", "").strip()
    if "://" in value:
        return value
    return Path(value or DEFAULT_STATE).expanduser()


class Database:
    """One plan store's engine and where it is, with the transactions and sessions the Store works in."""

    def __init__(self, engine: Engine, where: str):
        self.engine = engine
        self.where = where
        self.ready = False  # the tables are known to exist: sessions stop looking for them
        self.on_commit: Callable[[float], None] | None = None  # told each write's commit time (Store.time_commits)
        self._keeper: Connection | None = None  # PostgreSQL: the session holding the keeper's advisory lock
        self.last_meta: dict[str, str] | None = None  # the meta rows as the latest session of this process read them
        self._file_keeper: keeper.FileKeeper | None = None  # SQLite: the lock file beside the store

    @classmethod
    def open(cls, target: str | Path, create: bool = True) -> Database:
        """The database at a path or URL; nothing is read yet.

        `create=False`: a SQLite file that does not exist is a StoreError (`missing`), and nothing is created."""
        if not create:
            refuse_missing(target)
        refuse_foreign(target)
        url = schema.target_url(target)
        where = (url.database or "") if url.get_backend_name() == "sqlite" else url.render_as_string(hide_password=True)
        return cls(_engine(url), where)

    def keeps(self) -> bool:
        """Whether this process keeps the plan's clock (one process per plan does, chosen by the database).

        PostgreSQL: whoever holds a session-level advisory lock on its own connection; when that process dies its
        connection closes and the lock is free for the next one that asks. SQLite: whoever holds the lock on the
        file beside the store (`keeper.py`), freed the same way when its process dies (`rayon serve --workers`)."""
        if self.engine.dialect.name != "postgresql":
            if self._file_keeper is None:
                self._file_keeper = keeper.FileKeeper.beside(self.engine.url.database)
            return self._file_keeper.holds()
        try:
            if self._keeper is not None:
                self._keeper.execute(sa.text("SELECT 1"))  # still connected: still held
                self._keeper.commit()  # never idle in a transaction between checks: that holds back VACUUM
                return True
            connection = self.engine.connect()
            held = connection.execute(sa.select(sa.func.pg_try_advisory_lock(schema.KEEPER_KEY))).scalar()
            connection.commit()
            if not held:
                connection.close()
                return False
            self._keeper = connection
            return True
        except sa.exc.DBAPIError as exc:
            self.release()
            raise StoreError("database", f"the plan store at {self.where} failed: {exc.orig}") from exc

    def release(self) -> None:
        """Give up keeping the plan's clock (closing the session frees the lock)."""
        held, self._keeper = self._keeper, None
        if held is not None:
            with contextlib.suppress(sa.exc.DBAPIError):
                held.close()
        if self._file_keeper is not None:
            self._file_keeper.release()

    @contextlib.contextmanager
    def transaction(self, write: bool) -> Iterator[Connection]:
        """One transaction (a write one holds the plan's writer lock); database failures become StoreErrors."""
        try:
            with schema.transaction(self.engine, write) as connection:
                yield connection
                committing = time.perf_counter()  # leaving the block commits
        except sa.exc.DBAPIError as exc:
            raise foreign(exc, self.where) or StoreError("database", f"the plan store at {self.where} failed: "
                                                                     f"{exc.orig}", "is it a plan store, and is the "
                                                                     "database reachable?") from exc
        if write and self.on_commit is not None:
            self.on_commit(time.perf_counter() - committing)

    @contextlib.contextmanager
    def session(self, write: bool) -> Iterator[tuple[Connection, dict[str, str]]]:
        """A transaction on an initialised store of our schema version, with its meta rows."""
        with self.transaction(write) as connection:
            if not self.ready and not schema.has_tables(connection):
                raise StoreError("uninitialised", f"the plan store at {self.where} holds no plan yet",
                                 f"initialise it with a cluster file first: `{INIT_COMMAND}`")
            meta = schema.read_meta(connection)
            self.check_schema(meta)
            self.ready = True
            self.last_meta = meta
            yield connection, meta

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """One read-only snapshot without the checks of a session, for the server's reads; failures are StoreErrors."""
        try:
            with schema.transaction(self.engine, write=False) as connection:
                yield connection
        except sa.exc.DBAPIError as exc:
            raise StoreError("database", f"the plan store at {self.where} failed: {exc.orig}",
                             "is the database reachable?") from exc

    def check_schema(self, meta: dict[str, str]) -> None:
        """Refuse a store of another schema version, naming both and what to do."""
        found = int(meta.get("schema_version", "0"))
        if found == schema.SCHEMA_VERSION:
            return
        hint = (f"use a rayon that reads version {found}" if found > schema.SCHEMA_VERSION else
                "no migration from it exists: keep the rayon that wrote it" if found < migrate.OLDEST else
                "open it once with `rayon list`, which migrates it")
        raise StoreError("schema", f"the plan store at {self.where} has schema version {found}, but this rayon "
                         f"reads version {schema.SCHEMA_VERSION}",
                         f"{hint}, or start a new plan elsewhere (set RAYON_STATE to a new file and initialise it)")

    def open_checked(self) -> None:
        """Check the schema version of a store that exists, migrating an older one we know how to migrate."""
        if not self.exists():
            return  # a new file has no version to check; connecting would create it before `init` read its cluster
        with self.transaction(write=False) as connection:
            if not schema.has_tables(connection):
                return
            found = int(schema.read_meta(connection).get("schema_version", "0"))
        if not migrate.OLDEST <= found < schema.SCHEMA_VERSION:
            self.check_schema({"schema_version": str(found)})
            return
        with self.transaction(write=True) as connection:
            found = int(schema.read_meta(connection).get("schema_version", "0"))
            if found < schema.SCHEMA_VERSION:  # another process may have migrated it meanwhile
                migrate.migrate(connection, found)

    def exists(self) -> bool:
        """Whether the store is there already: a SQLite file on disk (a server database always counts)."""
        url = self.engine.url
        return url.get_backend_name() != "sqlite" or not url.database or Path(url.database).exists()

    def already(self, connection: Connection) -> StoreError:
        """The error for initialising a store that already holds a plan."""
        table = schema.reservations
        count = connection.execute(sa.select(sa.func.count()).where(table.c.state == "accepted")).scalar_one()
        source = connection.execute(sa.select(schema.cluster.c.source)).scalar()
        return StoreError("initialised", f"the plan store at {self.where} already holds a plan (cluster "
                          f"`{source}`, {count} accepted reservations)",
                          "re-initialise with `rayon init --force` to discard it, or set RAYON_STATE to another file")


def sqlite_path(target: str | Path) -> Path | None:
    """The file of a SQLite target (a path); None for a database URL."""
    if isinstance(target, str) and "://" in target:
        return None
    return Path(target).expanduser()


def refuse_missing(target: str | Path) -> None:
    """A StoreError (`missing`) when the target is a SQLite file that does not exist: say how to create it."""
    path = sqlite_path(target)
    if path is not None and not path.exists():
        raise StoreError("missing", f"no plan store at {path}; create one with `{INIT_COMMAND} --state {path}`")


def refuse_foreign(target: str | Path) -> None:
    """A StoreError (`input`, exit 2) when a SQLite target is a folder. (A file that is no database is found by
    SQLite itself, `foreign`: opening and closing the file here would drop this process's SQLite locks on it.)"""
    path = sqlite_path(target)
    if path is not None and path.is_dir():
        raise StoreError("input", f"{path} is a folder, not a plan store",
                         f"give the path of a store file, such as {path / 'plan.db'}")


def foreign(exc: sa.exc.DBAPIError, where: str) -> StoreError | None:
    """The StoreError (`input`, exit 2) for a SQLite file that is no database, else None."""
    if "file is not a database" not in str(exc.orig):
        return None
    return StoreError("input", f"{where} is not a plan store (it is no SQLite database)",
                      "give the path of a store made by `rayon init`, or of a file to create")


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
