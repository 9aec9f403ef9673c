"""`rayon history` and `rayon retention`: reading the store's past, and how long it is kept."""

from __future__ import annotations

import json

import click

from planner.cli.store import clock_line, json_option, opened, record_json, reserved_span, state_option
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
@json_option
def history_command(name: str | None, user: str | None, wanted: str | None, limit: int, offset: int,
                    state_path: str | None, as_json: bool) -> None:
    """Reservations that ended a horizon ago and left the live plan, the latest first (kept for the retention).

    A reservation that expired, was cancelled, rejected or dropped stays in `rayon list` for one horizon;
    then it moves here, with the leases it held, and `rayon show NAME` still finds it. `rayon retention`
    says how long the history and the decision log keep what is behind the clock.
    """
    with opened(state_path) as store:
        found, total = store.history(name=name, user=user, state=wanted, offset=offset, limit=limit)
        clock = store.clock()
        line = clock_line(store)
    if as_json:
        click.echo(json.dumps({"total": total, "reservations": [
            {**record_json(a.record, store, clock), "archived": units.format_instant(a.archived)} for a in found]},
            indent=2))
        return
    rows = [[a.record.name, a.record.state, a.record.user or "-", a.record.queue or "-",
             *reserved_span(a.record, clock), units.format_instant(a.archived),
             a.record.reason.code if a.record.reason else "-"] for a in found]
    click.echo(format_table(["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "ARCHIVED", "REASON"], rows))
    if found:
        click.echo(f"{offset + 1}-{offset + len(found)} of {total} in the history; {line}")
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
