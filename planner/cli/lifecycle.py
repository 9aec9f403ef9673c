"""Commands over the plan's life after submission: `rayon advance`, `capacity` and `replan`.

Each needs the store itself (planner/cli/options.py), but `replan`, which client mode runs as the server's
replan job (`POST /v1/admin/replan`, an admin's), waiting for its end.
"""

from __future__ import annotations

import json
import time
from typing import Any as AnyType

import click

from planner.agents.milp.agent import DEFAULT_GAP, DEFAULT_TIME_LIMIT
from planner.agents.milp.solvers import BACKENDS, DEFAULT_BACKEND
from planner.cli.options import json_option, opened, state_option
from planner.cli.remote import Client
from planner.cli.render import holds_text, span_text
from planner.cli.target import remote_target, server_option
from planner.core.compile import Clock
from planner.core.plan import Allocation
from planner.replan.adapt import parse_vector
from planner.store.facade import CapacityReport
from planner.store.lifecycle import REPLAN_SOLVE_SHARE
from rdl import units
from rdl.cli import NameParam, RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.errors import EXIT_INTERNAL, RayonError, RDLErrors
from rdl.table import format_table


def holds(allocations: tuple[Allocation, ...] | list[Allocation], clock: Clock) -> str:
    """`[2026-11-23 00:05, 00:20)`: the span a reservation's leases cover, with its date, or `-`."""
    if not allocations:
        return "-"
    return span_text(units.format_instant(clock.at(min(a.start for a in allocations))),
                     units.format_instant(clock.at(max(a.end for a in allocations))))


@click.command("advance", cls=RayonCommand)
@click.option("--to", "to", type=TimeParam(), required=True, help=time_help("The plan's new clock (never earlier "
              "than now)."))
@state_option
@json_option
def advance_command(to: TimeValue, state_path: str | None, as_json: bool) -> None:
    """Move the plan's clock forward, any distance; reservations whose every lease has ended expire.

    The horizon moves with the clock (it always reaches `horizon` ahead of it), and every instance of a
    recurring reservation that comes into it is placed, or logged as missed with the reason. `rayon serve`
    moves the clock with the wall clock by itself; this command is for plans kept by hand.
    """
    with opened(state_path) as store:
        kept = not store.keeps_clock()  # a `rayon serve` keeps it (and follows its own clock from where this leaves it)
        report = store.advance(resolve_time(to, store.now()))
        if kept:
            click.echo("warning: another process keeps this plan's clock (a `rayon serve`); it goes on from "
                       f"{units.format_instant(report.now)}, and one on the wall clock waits until the wall clock "
                       "reaches it (its /metrics show the lag)", err=True)
        if as_json:
            click.echo(json.dumps(report.to_json(), indent=2))
            return
        click.echo(f"clock: {units.format_instant(report.previous)} -> {units.format_instant(report.now)}")
        click.echo(f"expired: {', '.join(report.expired)}" if report.expired else "nothing expired")
        for name, index in report.placed:
            click.echo(f"placed: `{name}` instance {index}")
        for name, index, reason in report.missed:
            click.echo(f"missed: `{name}` instance {index}: {reason.message}")


@click.command("capacity", cls=RayonCommand)
@click.option("--at", "at", type=TimeParam(), required=True, help=time_help("When the change takes effect (at or "
              "after the clock; beyond the horizon it applies once the plan rolls to it)."))
@click.option("--set", "vector", required=True, metavar="VECTOR",
              help="The new capacity, an RDL resource vector such as '{vcores: 512, memory: 1TiB}'; resources "
                   "left out keep what they have; 0 is an outage (a later change brings it back).")
@click.option("--dry-run", is_flag=True, help="Show how the plan would adapt, without committing anything.")
@state_option
@json_option
def capacity_command(at: TimeValue, vector: str, dry_run: bool, state_path: str | None, as_json: bool) -> None:
    """Change the cluster's capacity from a time on, and adapt the plan to it.

    Reservations over the new capacity stay where they are if they fit, move within their windows
    if they can, and only then are dropped: lowest priority first, the most recently accepted first
    among equals, and no more than needed. The change is added to the stored cluster file.
    """
    try:
        capacity = parse_vector(vector, "--set")
    except RDLErrors as errors:
        raise errors.then("nothing was changed") from None
    with opened(state_path) as store:
        report = store.set_capacity(resolve_time(at, store.now()), capacity, dry_run=dry_run)
        clock = store.clock()
        if as_json:
            click.echo(json.dumps(report.to_json(clock), indent=2))
            return
        echo_capacity(report, clock)


def echo_capacity(report: CapacityReport, clock: Clock) -> None:
    moves = report.adaptation
    vector = ", ".join(f"{k}: {units.format_quantity(k, v)}" for k, v in report.capacity.items())
    prefix = "(dry run: nothing committed) " if report.dry_run else ""
    click.echo(f"{prefix}capacity from {units.format_instant(report.at)}: {{{vector}}}")
    if not moves.affected:
        click.echo("every reservation still fits: nothing moved, nothing dropped")
        return
    rows = []
    for name in moves.affected:
        priority = str(report.priorities.get(name, "-"))
        if name in moves.moved:
            rows.append([name, "moved", priority, f"{holds(moves.previous[name], clock)} -> "
                         f"{holds(moves.moved[name], clock)}"])
            for index in moves.missed.get(name, ()):
                lost = [a for a in moves.previous[name] if a.instance == index]
                rows.append([f"{name}#{index}", "dropped", priority, holds(lost, clock) if lost else "-"])
        elif name in moves.dropped:
            rows.append([name, "dropped", priority, holds(moves.previous[name], clock)])
        else:
            rows.append([name, "kept", priority, "unchanged"])
    click.echo(format_table(["RESERVATION", "OUTCOME", "PRIORITY", "HOLDS"], rows))
    for name in moves.dropped:
        click.echo(f"{name}: {report.reasons[name].message}")
    for (name, index), reason in report.missed.items():
        click.echo(f"{name}#{index}: {reason.message}")
    alone = f", and {len(report.missed)} instance{'' if len(report.missed) == 1 else 's'} of series dropped " \
        "alone" if report.missed else ""
    click.echo(f"{len(moves.affected)} over the new capacity: {len(moves.kept)} kept, {len(moves.moved)} moved, "
               f"{len(moves.dropped)} dropped{alone}")


@click.command("replan", cls=RayonCommand)
@click.option("--time-limit", type=click.FloatRange(min=0.5), default=DEFAULT_TIME_LIMIT, show_default=True,
              help="Seconds the whole command may take (the solver gets most of them; what is left re-admits).")
@click.option("--solver", type=NameParam(BACKENDS), default=DEFAULT_BACKEND, show_default=True,
              help="MILP backend.")
@click.option("--gap", type=click.FloatRange(min=0.0), default=DEFAULT_GAP, show_default=True,
              help="Relative optimality gap at which the solver stops.")
@state_option
@server_option
@json_option
def replan_command(time_limit: float, solver: str, gap: float, state_path: str | None, server: str | None,
                   as_json: bool) -> None:
    """Re-optimise the stored plan: accepted reservations stay accepted and move within their windows to fewer
    allocation changes (each re-placed by a MILP of its own, then with its neighbours; planner.agents.milp.smooth).

    Reservations already running stay where they are. What moved is written back in one transaction; if
    nothing gets smoother in the time given, nothing changes. Then reservations rejected (or dropped) for
    capacity whose deadline is still ahead are submitted again, and those that fit now are admitted.
    In client mode the server runs it as a job (an admin's token), and this command waits for its end.
    """
    if not as_json:
        click.echo(f"re-planning with {solver} (up to {time_limit:g}s)...", err=True)
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            job = client.replan(time_limit, solver, gap)
        if "error" in job:
            error = job["error"]
            raise RayonError(f"the replan job {job['id']} failed: {error['message']}", code=error.get("code", "job"),
                             hint=error.get("hint"), exit_code=EXIT_INTERNAL)
        result = job["result"]
    else:
        started = time.perf_counter()
        with opened(state_path) as store:
            outcome = store.replan(time_limit=time_limit * REPLAN_SOLVE_SHARE, backend=solver, gap=gap)
            skipped: list[str] = []
            admitted = [d.reservation for d in store.readmit(until=started + time_limit, skipped=skipped)]
            result = {**outcome.to_json(store.clock()), "admitted": admitted, "not_retried": skipped}
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    echo_replan(result)


def echo_replan(result: dict[str, AnyType]) -> None:
    """What a replan did, from its JSON: the solver's word, who moved where, who was admitted."""
    click.echo(f"solver {result['solver']}: {result['status']} in {result['seconds']:.2f}s; allocation changes "
               f"{result['changes_before']} -> {result['changes_after']}")
    if not result["moved"]:
        click.echo("nothing moved: the plan is unchanged")
    else:
        rows = [[m["reservation"], holds_text(m["previous"]), holds_text(m["allocations"])] for m in result["moved"]]
        click.echo(format_table(["RESERVATION", "HELD", "NOW HOLDS"], rows))
        click.echo(f"{len(result['moved'])} moved")
    if result["admitted"]:
        click.echo(f"admitted, as they fit now: {', '.join(result['admitted'])}")
    if result["not_retried"]:
        click.echo(f"{len(result['not_retried'])} rejected for capacity not tried again: the time limit was up "
                   f"(the next replan tries them)")


COMMANDS = [advance_command, capacity_command, replan_command]
