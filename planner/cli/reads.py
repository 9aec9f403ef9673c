"""Commands that read the plan: `rayon list`, `show` and `log`, from a local store or, in client mode, from a
running `rayon serve` (planner/cli/target.py), printing the same for the same plan (planner/cli/render.py)."""

from __future__ import annotations

from typing import Any as AnyType

import click

from planner.cli import client as remote_mode
from planner.cli.options import clock_line, json_option, opened, record_json, state_option
from planner.cli.remote import Client
from planner.cli.render import from_api, log_json, log_table, records_table, show_text
from planner.cli.shaping import (
    coloured,
    emit_document,
    listing_json_option,
    output_options,
    page,
    watch_option,
    watching,
    without_headers,
)
from planner.cli.target import remote_target, server_option
from planner.store.facade import STATES
from rdl import units
from rdl.cli import RayonCommand, TimeParam, TimeValue, resolve_time, time_help

Json = dict[str, AnyType]


@click.command("list", cls=RayonCommand)
@click.option("--user", help="Only this user's reservations.")
@click.option("--status", "wanted", type=click.Choice(STATES),
              help="Only reservations in this state: accepted (holding capacity), rejected (never admitted), "
              "cancelled (by a user), expired (every lease has ended), dropped (removed when capacity shrank).")
@click.option("--from", "start", type=TimeParam(), help=time_help("Only those holding capacity at or after this time."))
@click.option("--to", "end", type=TimeParam(), help=time_help("Only those holding capacity before this time."))
@state_option
@server_option
@listing_json_option
@output_options
@watch_option
def list_command(user: str | None, wanted: str | None, start: TimeValue | None, end: TimeValue | None,
                 state_path: str | None, server: str | None, as_json: bool, output: str, no_headers: bool,
                 interval: str | None) -> None:
    """List stored reservations: who, their queue, and the span each one's leases reserve (START to END, UTC)."""
    def show() -> None:
        records, line = listed(state_path, user, wanted, start, end)
        if emitted(records, as_json, output, "reservation"):
            return
        if no_headers:
            click.echo(without_headers(records_table(records, output == "wide")))
        else:
            click.echo(coloured(records_table(records, output == "wide"), "STATE"))
            click.echo(line)

    watching(interval, show)


def listed(state_path: str | None, user: str | None, wanted: str | None, start: TimeValue | None,
           end: TimeValue | None) -> tuple[list[Json], str]:
    """The reservations a listing shows, as JSON records, and the clock's line."""
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            now = client.now()
            items = client.reservations(user, wanted, resolve_time(start, now), resolve_time(end, now))
            return [from_api(item) for item in items], remote_mode.clock_line(client)
    with opened(state_path) as store:
        now = store.now()
        records = store.list(user=user, state=wanted, start=resolve_time(start, now), end=resolve_time(end, now))
        clock = store.clock()  # read once, not per record
        return [record_json(r, store, clock) for r in records], clock_line(store)


@click.command("show", cls=RayonCommand)
@click.argument("name")
@state_option
@server_option
@json_option
@click.option("-o", "--output", type=click.Choice(("text", "wide", "json", "yaml")), default="text",
              show_default=True, help="text (many leases summed up); wide (every lease); json or yaml.")
def show_command(name: str, state_path: str | None, server: str | None, as_json: bool, output: str) -> None:
    """One reservation: its RDL, state, leases and history."""
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            data = remote_mode.show(client, name)
    else:
        with opened(state_path) as store:
            record = store.get(name)
            data = record_json(record, store)
            data["rdl"] = record.rdl
            data["history"] = [{"time": units.format_instant(e.time), "actor": e.actor, "action": e.action,
                                "accepted": e.accepted, "reason": e.reason, "decision": e.decision}
                               for e in store.log(reservation=name)]
    if as_json or output in ("json", "yaml"):
        emit_document(data, "json" if as_json else output)
    else:
        click.echo(show_text(data, every=output == "wide"))


@click.command("log", cls=RayonCommand)
@click.option("--limit", type=click.IntRange(min=1), help="Only the latest N entries.")
@state_option
@server_option
@listing_json_option
@output_options
def log_command(limit: int | None, state_path: str | None, server: str | None, as_json: bool, output: str,
                no_headers: bool) -> None:
    """The append-only decision log: who asked what, when, and the answer."""
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            entries = [{key: e.get(key) for key in ("id", "time", "actor", "action", "reservation", "accepted",
                                                    "reason", "decision")} for e in client.log(limit)]
    else:
        with opened(state_path) as store:
            entries = [log_json(e.id, e.time, e.actor, e.action, e.reservation, e.accepted, e.reason, e.decision)
                       for e in store.log(limit)]
    if not emitted(entries, as_json, output, "id"):
        table = log_table(entries)
        click.echo(without_headers(table) if no_headers else table)


def emitted(items: list[Json], as_json: bool, output: str, name_key: str) -> bool:
    """Print a whole listing as a document, if asked for one: `--json` (or `-o json|yaml`) in the API's list shape,
    `-o name` each item's `name_key`; False when a table is wanted (the caller's)."""
    if as_json or output in ("json", "yaml"):
        emit_document(page(items), "json" if as_json else output)
    elif output == "name":
        for item in items:
            click.echo(item[name_key])
    else:
        return False
    return True


COMMANDS = [list_command, show_command, log_command]
