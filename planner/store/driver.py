"""Statements of a submission's write handed straight to the database driver: compiled once per dialect by
SQLAlchemy, each parameter converted by its column's own bind processor, as SQLAlchemy would convert it.

Storing a batch of decisions takes a handful of statements (the meta rows, the reservations, their leases, the
log rows). Through Core each one cost its compiled form's lookup and SQLAlchemy's per-row parameter handling,
which was most of what the deciding process spent on a batch beyond deciding it. Errors are still
SQLAlchemy's (`exec_driver_sql` wraps the driver's), so the store reports them as it reports any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any as AnyType

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.dml import Insert, Update
from sqlalchemy.sql.selectable import Select


@dataclass(frozen=True)
class Prepared:
    """A statement in the driver's own SQL and parameter style, and how to turn a row of values into parameters."""

    sql: str
    keys: tuple[str, ...]  # the parameters, in order when the style is positional
    positional: bool
    converters: tuple[Callable[[AnyType], AnyType] | None, ...]  # each parameter's bind processor, if its type has one

    def parameters(self, row: Mapping[str, AnyType]) -> AnyType:
        """One row's parameters as the driver takes them."""
        values = tuple(row[key] if convert is None else convert(row[key])
                       for key, convert in zip(self.keys, self.converters, strict=True))
        return values if self.positional else dict(zip(self.keys, values, strict=True))


class Statements:
    """Prepared statements by name and dialect, each built once by its `build` (a Core statement)."""

    def __init__(self) -> None:
        self._prepared: dict[tuple[str, str, str], Prepared] = {}
        self._guard = threading.Lock()

    def get(self, name: str, dialect: Dialect, build: Callable[[], Insert | Update | Select[AnyType]],
            keys: Sequence[str] | None = None) -> Prepared:
        """The prepared form of the statement `name` for this dialect (`keys`: an INSERT's columns)."""
        key = (name, dialect.name, str(dialect.paramstyle))
        found = self._prepared.get(key)
        if found is None:
            with self._guard:
                found = self._prepared.get(key) or self._prepare(dialect, build(), keys)
                self._prepared[key] = found
        return found

    @staticmethod
    def _prepare(dialect: Dialect, statement: Insert | Update | Select[AnyType], keys: Sequence[str] | None,
                 ) -> Prepared:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys) if keys is not None else None)
        names = tuple(compiled.positiontup or ()) if compiled.positional else tuple(compiled.binds)
        converters = tuple(compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names)
        return Prepared(compiled.string, names, bool(compiled.positional), converters)


STATEMENTS = Statements()


def execute_many(connection: Connection, prepared: Prepared, rows: Sequence[Mapping[str, AnyType]]) -> None:
    """Run the statement once per row, in one call to the driver."""
    if rows:
        connection.exec_driver_sql(prepared.sql, [prepared.parameters(row) for row in rows])


def names_in(table: sa.Table, count: int) -> Callable[[], Select[AnyType]]:
    """A SELECT of the id, name, user and state of `count` named rows of `table` (parameters `n0`, `n1`, ...)."""
    columns = (table.c.id, table.c.name, table.c.user, table.c.state)
    return lambda: sa.select(*columns).where(table.c.name.in_([sa.bindparam(f"n{i}") for i in range(count)]))


def named_rows(connection: Connection, table: sa.Table, names: Sequence[str]) -> Sequence[AnyType]:
    """The rows (id, name, user, state) of `table` holding these names, in one statement."""
    if not names:
        return []
    count = 1 << (len(names) - 1).bit_length()  # a statement per power of two, the last name repeated to fill it
    padded = [*names, *[names[-1]] * (count - len(names))]
    prepared = STATEMENTS.get(f"{table.name} named {count}", connection.dialect, names_in(table, count))
    return connection.exec_driver_sql(prepared.sql, prepared.parameters(
        {f"n{i}": name for i, name in enumerate(padded)})).all()
