"""What the store commands share: `--state`, `--json`, `-o`, opening the store (or saying that client mode cannot),
and a stored reservation as JSON.

Every store command takes `--state PATH|URL` (default `$RAYON_STATE`, else `~/.local/state/rayon/plan.db`)
and `--json`. Store errors exit 2 (bad input: unknown reservation, wrong state, a malformed capacity
change, a clock moved back, a store of another schema version), 1 when the database fails or the plan kept
changing under a re-planning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any as AnyType

import click

from planner.cli.target import local_only, remote_target
from planner.core.compile import Clock
from planner.core.decision import allocation_json
from planner.store.facade import STATES, Record, Store, StoreError, default_state_path
from rdl import units
from rdl.shape import step_floor


def state_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--state", "state_path", envvar="RAYON_STATE", show_envvar=True,
                        help=f"Plan store: a SQLite file or a database URL [default: {default_state_path()}].")(command)


def json_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--json", "as_json", is_flag=True, help="One JSON document on standard output.")(command)


@contextmanager
def opened(state_path: str | None, check_version: bool = True, create: bool = False) -> Iterator[Store]:
    """The store, closed when the block ends; only `create` (`rayon init`) may make a new one (see `open_state`).

    In client mode (a server chosen by `--server`, `$RAYON_SERVER` or a context) this is an error naming the
    command: it needs the store itself, which the HTTP API does not lend.
    """
    remote = remote_target(state_path)
    if remote is not None:
        ctx = click.get_current_context(silent=True)
        raise local_only(ctx.info_name if ctx is not None and ctx.info_name else "this command", remote)
    with open_state(state_path, check_version=check_version, create=create) as store:
        yield store


def open_state(state_path: str | None, check_version: bool = True, create: bool = False) -> Store:
    """The store named by `--state`; a missing SQLite file is an error that creates nothing, unless `create`.

    A `--state` naming a reservation state (`--state accepted`) and no file is taken for a mistyped `--status`:
    refused even by `init`, so that no store is made under that name by accident.
    """
    status_like = state_path in STATES and not Path(state_path).exists()
    if status_like and create:
        raise StoreError("missing", f"`--state {state_path}` names a reservation state, not a plan store file",
                         f"did you mean `--status`? To make a store by that name, give a path: ./{state_path}")
    try:
        return Store.open(state_path, check_version=check_version, create=create)
    except StoreError as error:
        if status_like and error.code == "missing":
            error.hint = "did you mean `--status`?"
        raise


def reserved_span(record: Record, clock: Clock) -> tuple[str, str]:
    """The ISO start of a reservation's first lease and end of its last; `-` for both when it holds none."""
    if not record.allocations:
        return "-", "-"
    return (units.format_instant(clock.at(min(a.start for a in record.allocations))),
            units.format_instant(clock.at(max(a.end for a in record.allocations))))


def record_json(record: Record, store: Store, clock: Clock | None = None) -> dict[str, AnyType]:
    """A stored reservation as JSON; `start`/`end` (None without leases) are the span its leases reserve."""
    clock = clock or store.clock()
    start, end = reserved_span(record, clock)
    data: dict[str, AnyType] = {
        "reservation": record.name, "accepted": record.state == "accepted", "state": record.state,
        "user": record.user, "queue": record.queue,
        "value": record.value, "priority": record.priority, "agent": record.agent,
        "submitted": units.format_instant(record.submitted), "decided": units.format_instant(record.decided),
        "allocations": [allocation_json(a, clock) for a in record.allocations],
        "start": None if start == "-" else start, "end": None if end == "-" else end,
    }
    if record.reason is not None:
        data["reason"] = record.reason.to_json()
    data["updated"] = units.format_instant(record.updated)
    return data


def clock_line(store: Store) -> str:
    """What the stored plan's clock says, for the end of a table: the time and the horizon it reaches."""
    now, cluster = store.now(), store.cluster()
    reach = cluster.start + timedelta(seconds=(max(0, step_floor(cluster.start, now, cluster.step)) + cluster.steps)
                                      * cluster.step)
    return f"plan clock {units.format_instant(now)}; the plan reaches {units.format_instant(reach)}"
