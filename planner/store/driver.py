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
    order: tuple[str, ...] | None  # the parameters' order when the style is positional
    processors: Mapping[str, Callable[[AnyType], AnyType]]  # by parameter, where the column's type converts

    def parameters(self, row: Mapping[str, AnyType]) -> AnyType:
        """One row's parameters as the driver takes them."""
        converted = {key: (self.processors[key](value) if key in self.processors else value)
                     for key, value in row.items()}
        return tuple(converted[key] for key in self.order) if self.order is not None else converted


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
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        processors = {}
        for name, bind in compiled.binds.items():
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                processors[name] = processor
        return Prepared(compiled.string, order, processors)


STATEMENTS = Statements()


def execute_many(connection: Connection, prepared: Prepared, rows: Sequence[Mapping[str, AnyType]]) -> None:
    """Run the statement once per row, in one call to the driver."""
    if rows:
        connection.exec_driver_sql(prepared.sql, [prepared.parameters(row) for row in rows])


def insert_returning(connection: Connection, prepared: Prepared, rows: Sequence[Mapping[str, AnyType]],
                     ) -> list[int]:
    """Insert the rows one statement each (so each id is known to belong to its row), returning their ids."""
    return [int(connection.exec_driver_sql(prepared.sql, prepared.parameters(row)).scalar_one()) for row in rows]


def returning_id(table: sa.Table) -> Callable[[], Insert]:
    """An INSERT into `table` that returns the new row's id."""
    return lambda: table.insert().returning(table.c.id)
