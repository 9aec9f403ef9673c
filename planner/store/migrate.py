"""Bringing a store written by an older rayon up to this schema version, in one write transaction.

Version 1 to 2: the history table (planner/store/history.py), the log's `clock` column (empty on the rows
written before: the retention never deletes them), the index on submission times, and the `retention`
setting at its default. Version 2 to 3: the queue log (planner/store/queuelog.py).
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from planner.store import schema
from planner.store.writes import DEFAULT_RETENTION

OLDEST = 1  # the oldest schema version this rayon migrates from


def migrate(connection: Connection, found: int) -> None:
    """Migrate the store on `connection` from schema version `found` (OLDEST or later) to schema.SCHEMA_VERSION."""
    if found < 2:
        _one_to_two(connection)
    if found < 3:
        schema.queue_log.create(connection, checkfirst=True)  # a version-1 layout made by hand may hold it
    schema.write_meta(connection, {"schema_version": str(schema.SCHEMA_VERSION)})


def _one_to_two(connection: Connection) -> None:
    clock = schema.log.c.clock
    kind = clock.type.compile(dialect=connection.dialect)
    connection.exec_driver_sql(f"ALTER TABLE {schema.log.name} ADD COLUMN {clock.name} {kind}")
    for index in schema.log.indexes:
        if [c.name for c in index.columns] == [clock.name]:
            index.create(connection)
    for index in schema.reservations.indexes:
        if [c.name for c in index.columns] == ["submitted"]:
            index.create(connection)
    schema.history.create(connection)
    connection.execute(schema.meta.insert(), [{"key": "retention", "value": DEFAULT_RETENTION}])
