"""Commands over the durable plan: `rayon init`, `submit`, `list`, `show`, `cancel`, `log`, and the plan's
life after submission: `update`, `advance`, `capacity`, `replan`.

Every command takes `--state PATH|URL` (default `$RAYON_STATE`, else
`~/.local/state/rayon/plan.db`) and `--json`. Store errors exit 2 (bad input: unknown
reservation, wrong state, a malformed capacity change, a clock moved back, a store of another
schema version), 1 when the database fails or the plan kept changing under a re-planning.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any as AnyType

import click

from planner.agents.explain import format_span
from planner.agents.milp.agent import DEFAULT_GAP, DEFAULT_TIME_LIMIT
from planner.agents.milp.solvers import BACKENDS, DEFAULT_BACKEND
from planner.agents.registry import AGENTS, DEFAULT_AGENT
from planner.cli.plan import check_rejections, echo_decisions, fail_on_reject_option, load_valid, require_reservations
from planner.core.compile import Clock
from planner.core.decision import Decision, allocation_json
from planner.core.plan import Allocation
from planner.replan.adapt import parse_vector
from planner.store.facade import (
    STATES,
    CapacityReport,
    LogEntry,
    Record,
    ReplanOutcome,
    Store,
    StoreError,
    default_state_path,
)
from planner.store.lifecycle import REPLAN_SOLVE_SHARE
from rdl import units
from rdl.cli import NameParam, RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.errors import Interrupted, RayonError, RDLErrors
from rdl.forms import yarn_conf
from rdl.shape import step_floor
from rdl.source import read_text
from rdl.table import format_table


def state_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--state", "state_path", envvar="RAYON_STATE", show_envvar=True,
                        help=f"Plan store: a SQLite file or a database URL [default: {default_state_path()}].")(command)


def json_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--json", "as_json", is_flag=True, help="One JSON document on standard output.")(command)


@contextmanager
def opened(state_path: str | None, check_version: bool = True, create: bool = False) -> Iterator[Store]:
    """The store, closed when the block ends; only `create` (`rayon init`) may make a new one (see `open_state`)."""
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
        "reservation": record.name, "state": record.state, "user": record.user, "queue": record.queue,
        "value": record.value, "priority": record.priority, "agent": record.agent,
        "submitted": units.format_instant(record.submitted), "decided": units.format_instant(record.decided),
        "allocations": [allocation_json(a, clock) for a in record.allocations],
        "start": None if start == "-" else start, "end": None if end == "-" else end,
    }
    if record.reason is not None:
        data["reason"] = record.reason.to_json()
    return data


@click.command("init", cls=RayonCommand)
@click.option("--cluster", "cluster_path", type=click.Path(exists=True, dir_okay=False),
              help="Cluster file (YAML) the plan is laid over.")
@click.option("--from-yarn", "yarn_path", type=click.Path(exists=True, dir_okay=False),
              help="Instead of --cluster: a YARN capacity-scheduler.xml; its reservable --queue becomes the cluster "
                   "file (printed), with --capacity the whole cluster's.")
@click.option("--queue", help="With --from-yarn: the reservable queue's full path, such as root.dedicated.")
@click.option("--capacity", help="With --from-yarn: the whole cluster's capacity, as {memory: 4TiB, vcores: 2048}.")
@click.option("--step", default="1s", show_default=True, help="With --from-yarn: the plan's step (YARN's is 1s).")
@click.option("--horizon", default="7d", show_default=True, help="With --from-yarn: how far ahead the plan reaches.")
@click.option("--force", is_flag=True, help="Start the store over, forgetting every reservation in it.")
@state_option
def init_command(cluster_path: str | None, yarn_path: str | None, queue: str | None, capacity: str | None, step: str,
                 horizon: str, force: bool, state_path: str | None) -> None:
    """Create the plan store from a cluster file."""
    if (cluster_path is None) == (yarn_path is None):
        raise click.UsageError("give either --cluster FILE or --from-yarn capacity-scheduler.xml")
    if yarn_path is not None:
        text, cluster_path = from_yarn(yarn_path, queue, capacity, step, horizon), f"{yarn_path}:{queue}"
        click.echo(text, nl=False)
    else:
        assert cluster_path is not None
        text = read_text(cluster_path)
    with opened(state_path, check_version=not force, create=True) as store:
        cluster = store.init(text, cluster_path, force=force)
        click.echo(f"initialised {store.where}: {cluster.steps} steps of {units.format_duration(cluster.step)} "
                   f"from {units.format_instant(cluster.start)}")


def from_yarn(path: str, queue: str | None, capacity: str | None, step: str, horizon: str) -> str:
    """The cluster file for a YARN reservable queue (rdl/forms/yarn_conf.py); bad input is a usage error."""
    if queue is None or capacity is None:
        raise click.UsageError("--from-yarn needs --queue (such as root.dedicated) and --capacity (the whole "
                               "cluster's, such as {memory: 4TiB, vcores: 2048})")
    try:
        seconds = units.parse_duration(step), units.parse_duration(horizon)
        properties = yarn_conf.read_properties(read_text(path), path)
        now = datetime.now(UTC).replace(microsecond=0)
        origin = now - timedelta(seconds=now.timestamp() % seconds[0])  # the plan starts at the step now is in
        return yarn_conf.cluster_yaml(properties, queue, parse_vector(capacity, "--capacity"), origin,
                                      seconds[0], seconds[1], path)
    except (yarn_conf.YarnConfError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None


@click.command("submit", cls=RayonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--agent", type=NameParam(AGENTS), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--dry-run", is_flag=True, help="Answer without committing anything.")
@click.option("--now", "when", type=TimeParam(), help=time_help("Submission time (default: the plan's clock)."))
@click.option("--skip-existing", is_flag=True,
              help="Skip reservations whose name the store holds already (to finish a submission that was stopped).")
@fail_on_reject_option
@state_option
@json_option
def submit_command(paths: tuple[str, ...], agent: str, dry_run: bool, when: TimeValue | None, skip_existing: bool,
                   fail_on_reject: bool, state_path: str | None, as_json: bool) -> None:
    """Submit reservation files to the stored plan; each decision is committed before it is shown.

    Exit status: 0 when every reservation was decided (with --fail-on-reject, 3 when any was rejected),
    2 for bad input (nothing submitted; files holding no reservation too), 1 for an internal failure,
    130 when interrupted (Ctrl-C): the decisions made until then are committed and shown, and
    `--skip-existing` submits the rest.
    """
    with opened(state_path) as store:
        cluster = store.cluster()
        now = resolve_time(when, store.now())
        reservations = load_valid(paths, cluster, now or store.now(), "nothing was submitted")
        require_reservations(reservations, paths, "nothing was submitted")
        held = store.existing([r.name for r in reservations])
        skipped = held if skip_existing else set()
        if skipped:
            click.echo(f"skipped {len(skipped)} the store holds already: {', '.join(sorted(skipped)[:10])}"
                       f"{' ...' if len(skipped) > 10 else ''}", err=True)
        wanted = [r for r in reservations if r.name not in skipped]
        decisions: list[Decision] = []
        try:
            for reservation in wanted:
                decisions.append(store.submit(reservation, agent, submitted=now, dry_run=dry_run, validated=True))
        except KeyboardInterrupt:
            echo_submitted(store, decisions, agent, dry_run, as_json)
            # Counted in the store: the decision under way when Ctrl-C came may have been committed too.
            done = len(decisions) if dry_run else len(store.existing([r.name for r in wanted]) - held)
            raise interrupted(done, len(wanted), dry_run) from None
        echo_submitted(store, decisions, agent, dry_run, as_json)
    check_rejections(decisions, fail_on_reject)


def echo_submitted(store: Store, decisions: list[Decision], agent: str, dry_run: bool, as_json: bool) -> None:
    """The decisions made, as JSON or a table and the clock's line."""
    clock = store.clock()
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "decisions": [d.to_json(clock) for d in decisions]}, indent=2))
    else:
        echo_decisions(decisions, clock, agent + (" (dry run: nothing committed)" if dry_run else ""))
        click.echo(clock_line(store))


def interrupted(done: int, total: int, dry_run: bool) -> Interrupted:
    """What a submission stopped by Ctrl-C did, and how to finish it."""
    if dry_run:
        return Interrupted(f"interrupted: {done} of {total} answered (dry run: nothing committed)")
    return Interrupted(f"interrupted: {done} of {total} submitted (each committed with its decision); the rest were "
                       "not", hint="run the same command with --skip-existing to submit the rest")


def clock_line(store: Store) -> str:
    """What the stored plan's clock says, for the end of a table: the time and the horizon it reaches."""
    now, cluster = store.now(), store.cluster()
    reach = cluster.start + timedelta(seconds=(max(0, step_floor(cluster.start, now, cluster.step)) + cluster.steps)
                                      * cluster.step)
    return f"plan clock {units.format_instant(now)}; the plan reaches {units.format_instant(reach)}"


@click.command("list", cls=RayonCommand)
@click.option("--user", help="Only this user's reservations.")
@click.option("--status", "wanted", type=click.Choice(STATES),
              help="Only reservations in this state: accepted (holding capacity), rejected (never admitted), "
              "cancelled (by a user), expired (every lease has ended), dropped (removed when capacity shrank).")
@click.option("--from", "start", type=TimeParam(), help=time_help("Only those holding capacity at or after this time."))
@click.option("--to", "end", type=TimeParam(), help=time_help("Only those holding capacity before this time."))
@state_option
@json_option
def list_command(user: str | None, wanted: str | None, start: TimeValue | None, end: TimeValue | None,
                 state_path: str | None, as_json: bool) -> None:
    """List stored reservations: who, their queue, and the span each one's leases reserve (START to END, UTC)."""
    with opened(state_path) as store:
        now = store.now()
        records = store.list(user=user, state=wanted, start=resolve_time(start, now), end=resolve_time(end, now))
        clock = store.clock()  # read once, not per record
        line = clock_line(store)
    if as_json:
        click.echo(json.dumps([record_json(r, store, clock) for r in records], indent=2))
        return
    rows = [[r.name, r.state, r.user or "-", r.queue or "-", *reserved_span(r, clock), r.agent or "-",
             units.format_instant(r.submitted), str(len(r.allocations)), r.reason.code if r.reason else "-"]
            for r in records]
    click.echo(format_table(["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "AGENT", "SUBMITTED",
                             "ALLOCATIONS", "REASON"], rows))
    click.echo(line)


@click.command("show", cls=RayonCommand)
@click.argument("name")
@state_option
@json_option
def show_command(name: str, state_path: str | None, as_json: bool) -> None:
    """One reservation: its RDL, state, leases and history."""
    with opened(state_path) as store:
        record = store.get(name)
        history = store.log(reservation=name)
        if as_json:
            data = record_json(record, store)
            data["rdl"] = record.rdl
            data["history"] = [{"time": units.format_instant(e.time), "actor": e.actor, "action": e.action,
                                "accepted": e.accepted, "reason": e.reason} for e in history]
            click.echo(json.dumps(data, indent=2))
            return
        click.echo(f"{record.name}: {record.state} (user {record.user or '-'}, agent {record.agent or '-'})")
        if record.reason is not None:
            click.echo(f"  reason: {record.reason.message}")
        click.echo(record.rdl.rstrip())
        clock = store.clock()
        rows = [[a.atom, units.format_instant(clock.at(a.start)), units.format_instant(clock.at(a.end)),
                 str(a.bundles)] for a in record.allocations]
        if rows:
            click.echo(format_table(["ATOM", "START", "END", "BUNDLES"], rows))
        for entry in history:
            click.echo(f"  {units.format_instant(entry.time)}  {entry.actor or '-'}  {entry.action}"
                       f"{'' if entry.accepted is None else ' accepted' if entry.accepted else ' rejected'}")


@click.command("cancel", cls=RayonCommand)
@click.argument("name")
@click.option("--from", "after", type=TimeParam(), help=time_help("A recurring reservation: cancel only the "
              "instances arriving at or after this time (the earlier ones stay)."))
@state_option
@json_option
def cancel_command(name: str, after: TimeValue | None, state_path: str | None, as_json: bool) -> None:
    """Cancel a reservation, returning its capacity to the plan."""
    with opened(state_path) as store:
        record = store.cancel(name, after=resolve_time(after, store.now()))
        if as_json:
            click.echo(json.dumps(record_json(record, store), indent=2))
        else:
            click.echo(f"{record.name}: {record.state}")


@click.command("log", cls=RayonCommand)
@click.option("--limit", type=click.IntRange(min=1), help="Only the latest N entries.")
@state_option
@json_option
def log_command(limit: int | None, state_path: str | None, as_json: bool) -> None:
    """The append-only decision log: who asked what, when, and the answer."""
    with opened(state_path) as store:
        entries = store.log(limit)
        if as_json:
            click.echo(json.dumps([{"id": e.id, "time": units.format_instant(e.time), "actor": e.actor,
                                    "action": e.action, "reservation": e.reservation, "accepted": e.accepted,
                                    "reason": e.reason, "decision": e.decision} for e in entries], indent=2))
            return
        rows = [[str(e.id), units.format_instant(e.time), e.actor or "-", e.action, e.reservation or "-",
                 log_answer(e)] for e in entries]
        click.echo(format_table(["ID", "TIME", "ACTOR", "ACTION", "RESERVATION", "ANSWER"], rows))


def log_answer(entry: LogEntry) -> str:
    """What a log row answered, in a word or two."""
    decision = entry.decision or {}
    if decision.get("dropped"):
        return f"dropped ({entry.reason_code})"
    if decision.get("moved"):
        return "moved"
    if decision.get("state") == "expired":
        return "expired"
    if entry.reservation is None and entry.action == "advance" and "to" in decision:
        return f"clock to {decision['to']}, {len(decision.get('expired', []))} expired"
    if entry.reservation is None and entry.action == "capacity" and "change" in decision:
        return (f"capacity change: {len(decision.get('moved', []))} moved, "
                f"{len(decision.get('dropped', []))} dropped")
    if entry.reservation is None and entry.action == "replan" and "status" in decision:
        return f"{decision['status']}: {len(decision.get('moved', []))} moved"
    if entry.accepted is None:
        return "-"
    if entry.action == "update":
        return "updated" if entry.accepted else f"rejected ({entry.reason_code}); kept the old version"
    return "accepted" if entry.accepted else f"rejected ({entry.reason_code})"


def holds(allocations: tuple[Allocation, ...] | list[Allocation], clock: Clock) -> str:
    """`[00:05, 00:20)`: the span a reservation's leases cover, or `-`."""
    if not allocations:
        return "-"
    return format_span(min(a.start for a in allocations), max(a.end for a in allocations), clock)


@click.command("update", cls=RayonCommand)
@click.argument("name")
@click.argument("path", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@click.option("--agent", type=NameParam(AGENTS), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--dry-run", is_flag=True, help="Answer without committing anything.")
@click.option("--now", "when", type=TimeParam(), help=time_help("Submission time of the new version (default: the "
              "plan's clock)."))
@state_option
@json_option
def update_command(name: str, path: str, agent: str, dry_run: bool, when: TimeValue | None, state_path: str | None,
                   as_json: bool) -> None:
    """Replace accepted reservation NAME by the version in FILE, if the new one fits.

    The new version is tried on the plan without the old one; if it fits it takes the old one's
    place, else the old one stays exactly as it was and the answer is the rejection.
    """
    with opened(state_path) as store:
        cluster = store.cluster()
        now = resolve_time(when, store.now())
        found = load_valid([path], cluster, now or store.now(), "nothing was updated")
        chosen = [r for r in found if r.name == name]
        if len(chosen) != 1:
            names = ", ".join(f"`{r.name}`" for r in found) or "no reservation"
            raise RayonError(f"{path} holds {names}, so no one new version of `{name}` (an update keeps the "
                             "reservation's name)").then("nothing was updated")
        decision = store.update(name, chosen[0], agent, dry_run=dry_run, submitted=now)
        clock = store.clock()
        if as_json:
            click.echo(json.dumps({"dry_run": dry_run, "decisions": [decision.to_json(clock)]}, indent=2))
            return
        echo_decisions([decision], clock, agent + (" (dry run: nothing committed)" if dry_run else ""))
        if decision.extra.get("previous") == "replaced":
            click.echo(f"`{name}`: the new version replaces the old one")
        elif dry_run and decision.accepted:
            click.echo(f"`{name}`: the new version would replace the old one")
        else:
            click.echo(f"`{name}` keeps its previous version, unchanged")


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
                   "left out keep what they have.")
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
        elif name in moves.dropped:
            rows.append([name, "dropped", priority, holds(moves.previous[name], clock)])
        else:
            rows.append([name, "kept", priority, "unchanged"])
    click.echo(format_table(["RESERVATION", "OUTCOME", "PRIORITY", "HOLDS"], rows))
    for name in moves.dropped:
        click.echo(f"{name}: {report.reasons[name].message}")
    click.echo(f"{len(moves.affected)} over the new capacity: {len(moves.kept)} kept, {len(moves.moved)} moved, "
               f"{len(moves.dropped)} dropped")


@click.command("replan", cls=RayonCommand)
@click.option("--time-limit", type=click.FloatRange(min=0.5), default=DEFAULT_TIME_LIMIT, show_default=True,
              help="Seconds the whole command may take (the solver gets most of them; what is left re-admits).")
@click.option("--solver", type=NameParam(BACKENDS), default=DEFAULT_BACKEND, show_default=True,
              help="MILP backend.")
@click.option("--gap", type=click.FloatRange(min=0.0), default=DEFAULT_GAP, show_default=True,
              help="Relative optimality gap at which the solver stops.")
@state_option
@json_option
def replan_command(time_limit: float, solver: str, gap: float, state_path: str | None, as_json: bool) -> None:
    """Re-optimise the stored plan: accepted reservations stay accepted and move within their windows to fewer
    allocation changes (each re-placed by a MILP of its own, then with its neighbours; planner.agents.milp.smooth).

    Reservations already running stay where they are. What moved is written back in one transaction; if
    nothing gets smoother in the time given, nothing changes. Then reservations rejected (or dropped) for
    capacity whose deadline is still ahead are submitted again, and those that fit now are admitted.
    """
    started = time.perf_counter()
    with opened(state_path) as store:
        if not as_json:
            click.echo(f"re-planning with {solver} (up to {time_limit:g}s)...", err=True)
        outcome = store.replan(time_limit=time_limit * REPLAN_SOLVE_SHARE, backend=solver, gap=gap)
        skipped: list[str] = []
        admitted = [decision.reservation for decision in store.readmit(until=started + time_limit, skipped=skipped)]
        clock = store.clock()
        if as_json:
            click.echo(json.dumps({**outcome.to_json(clock), "admitted": admitted, "not_retried": skipped}, indent=2))
            return
        echo_replan(outcome, clock)
        if admitted:
            click.echo(f"admitted, as they fit now: {', '.join(admitted)}")
        if skipped:
            click.echo(f"{len(skipped)} rejected for capacity not tried again: the time limit was up "
                       f"(the next replan tries them)")


def echo_replan(outcome: ReplanOutcome, clock: Clock) -> None:
    click.echo(f"solver {outcome.backend}: {outcome.status} in {outcome.seconds:.2f}s; allocation changes "
               f"{outcome.changes_before} -> {outcome.changes_after}")
    if not outcome.moved:
        click.echo("nothing moved: the plan is unchanged")
        return
    rows = [[name, holds(outcome.previous.get(name, ()), clock), holds(allocations, clock)]
            for name, allocations in outcome.moved.items()]
    click.echo(format_table(["RESERVATION", "HELD", "NOW HOLDS"], rows))
    click.echo(f"{len(outcome.moved)} moved")


COMMANDS = [init_command, submit_command, list_command, show_command, cancel_command, log_command, update_command,
            advance_command, capacity_command, replan_command]
