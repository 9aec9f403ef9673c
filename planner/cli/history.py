"""`rayon history` and `rayon retention`: reading the store's past, and how long it is kept."""

from __future__ import annotations

import click

from planner.cli import client as remote_mode
from planner.cli.options import clock_line, opened, record_json, state_option
from planner.cli.remote import Client
from planner.cli.render import from_api
from planner.cli.shaping import coloured, emit_document, listing_json_option, output_options, page, without_headers
from planner.cli.target import remote_target, server_option
from planner.store.facade import STATES
from rdl import units
from rdl.cli import RayonCommand
from rdl.table import format_table


@click.command("history", cls=RayonCommand)
@click.argument("name", required=False)
@click.option("--user", help="Only this user's reservations.")
@click.option("--status", "wanted", type=click.Choice(STATES), help="Only reservations that ended in this state.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="At most N reservations.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Skip the latest N first.")
@state_option
@server_option
@listing_json_option
@output_options
def history_command(name: str | None, user: str | None, wanted: str | None, limit: int, offset: int,
                    state_path: str | None, server: str | None, as_json: bool, output: str,
                    no_headers: bool) -> None:
    """Reservations that ended a horizon ago and left the live plan, the latest first (kept for the retention).

    A reservation that expired, was cancelled, rejected or dropped stays in `rayon list` for one horizon;
    then it moves here, with the leases it held, and `rayon show NAME` still finds it. `rayon retention`
    says how long the history and the decision log keep what is behind the clock.
    """
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            answer = client.history(name, user, wanted, offset, limit)
            records, total = [from_api(item) for item in answer["items"]], answer["total"]
            line = remote_mode.clock_line(client)
    else:
        with opened(state_path) as store:
            found, total = store.history(name=name, user=user, state=wanted, offset=offset, limit=limit)
            clock = store.clock()
            records = [{**record_json(a.record, store, clock), "archived": units.format_instant(a.archived)}
                       for a in found]
            line = clock_line(store)
    if as_json or output in ("json", "yaml"):  # the API's list shape, as every listing's
        following = offset + len(records)  # `next`: what to ask for the next page (the API: its URL)
        emit_document({**page(records, total, offset, limit), "next": None if following >= total
                       else f"--offset {following} --limit {limit}"}, "json" if as_json else output)
        return
    if output == "name":
        for record in records:
            click.echo(record["reservation"])
        return
    rows = [[r["reservation"], r["state"], r["user"] or "-", r["queue"] or "-", r["start"] or "-", r["end"] or "-",
             r["archived"], r["reason"]["code"] if r.get("reason") else "-"] for r in records]
    table = format_table(["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "ARCHIVED", "REASON"], rows)
    if no_headers:
        click.echo(without_headers(table))
        return
    click.echo(coloured(table, "STATE"))
    if records:
        click.echo(f"{offset + 1}-{offset + len(records)} of {total} in the history; {line}")
    else:  # not "none of 0"
        click.echo(f"{'nothing' if total == 0 else f'none of {total} past --offset {offset}'} in the history; {line}")


@click.command("retention", cls=RayonCommand)
@click.argument("duration", required=False)
@state_option
def retention_command(duration: str | None, state_path: str | None) -> None:
    """Say, or set, how long the decision log and the history keep what is behind the plan's clock.

    DURATION is a duration with a unit (`90d`, the default for a new plan; `12w`) or `forever`. Rows older
    than that, counted back from the plan's clock, are deleted whenever the clock moves on.
    """
    with opened(state_path) as store:
        kept = store.set_retention(duration) if duration is not None else store.retention()
    click.echo(f"{kept}: the decision log and the history keep {describe(kept)} behind the plan's clock")


def describe(kept: str) -> str:
    """A retention setting in words."""
    return "everything" if kept == "forever" else f"the last {kept}"


COMMANDS = [history_command, retention_command]
