"""`rayon plan`: one-shot planning of reservation files against a cluster (spec: decisions.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any as AnyType

import click

from planner.admission import Planner
from planner.agents.milp.agent import DEFAULT_GAP, DEFAULT_TIME_LIMIT, MilpAgent
from planner.agents.milp.coarsen import MAX_STEP
from planner.agents.milp.solvers import BACKENDS, DEFAULT_BACKEND
from planner.agents.registry import AGENTS, DEFAULT_AGENT, get_agent
from planner.cli.render import decisions_text
from planner.core.compile import Clock
from planner.core.decision import Decision
from rdl import units
from rdl.cli import (
    NameParam,
    RayonCommand,
    TimeParam,
    TimeValue,
    echo_warnings,
    read_cluster,
    resolve_time,
    time_help,
)
from rdl.cluster import Cluster
from rdl.errors import EXIT_INTERNAL, ErrorSink, RayonError, RDLErrors, Reported, Span
from rdl.load import all_errors, load
from rdl.progress import progress
from rdl.tree import Reservation

EXIT_REJECTED = 3  # planning ran, and with --fail-on-reject a rejection is a failure for scripts


def fail_on_reject_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--fail-on-reject", is_flag=True,
                        help=f"Exit {EXIT_REJECTED} when any reservation was rejected (after showing every "
                        "decision).")(command)


def check_rejections(decisions: Sequence[Decision], fail_on_reject: bool) -> None:
    """With `fail_on_reject`, a Reported failure (exit 3) naming the rejected reservations; the decisions are shown."""
    rejections([d.reservation for d in decisions if not d.accepted], len(decisions), fail_on_reject)


def rejections(rejected: Sequence[str], total: int, fail_on_reject: bool) -> None:
    """`check_rejections` given the names rejected among `total` decisions."""
    if fail_on_reject and rejected:
        raise Reported("rejected", EXIT_REJECTED).then(
            f"error: {len(rejected)} of {total} reservation{'' if total == 1 else 's'} rejected "
            f"({', '.join(rejected)}); exit status {EXIT_REJECTED} (--fail-on-reject)")


def require_reservations(reservations: Sequence[Reservation], paths: Sequence[str], consequence: str) -> None:
    """Refuse inputs that hold no reservation at all: a wrong path or an empty folder is likelier than intent."""
    if not reservations:
        raise RayonError(f"no reservations found in {', '.join(paths)}", code="empty",
                         hint="give .rdl, .json or YARN JSON files, or folders holding them").then(consequence)


def cluster_json(cluster: Cluster) -> dict[str, str]:
    return {"start": units.format_instant(cluster.start), "step": f"{cluster.step}s",
            "horizon": units.format_duration(cluster.horizon)}


def plan_document(cluster: Cluster, agent: str, decisions: Sequence[Decision], clock: Clock) -> dict[str, AnyType]:
    """The one JSON document `rayon plan --json` prints."""
    return {"cluster": cluster_json(cluster), "agent": agent, "decisions": [d.to_json(clock) for d in decisions]}


def echo_decisions(decisions: Sequence[Decision], clock: Clock, agent: str) -> None:
    """The decisions as a table, each rejection's reason, and the count accepted (planner/cli/render.py)."""
    click.echo(decisions_text([d.to_json(clock) for d in decisions], agent))


def load_valid(paths: Sequence[str], cluster: Cluster, now: datetime | None, consequence: str) -> list[Reservation]:
    """Every reservation in the files, validated against the cluster (their warnings shown, as `rayon check` shows
    them); or every error, saying `consequence`."""
    files = [f for f in load(paths, None, cluster, now) if f.cluster is None]
    errors = all_errors(files)
    if errors is not None:
        raise errors.then(consequence)
    echo_warnings(files)
    return [r for f in files for r in f.reservations]


def plan_reservations(cluster: Cluster, reservations: Sequence[Reservation], agent: str, now: datetime | None,
                      milp: MilpAgent | None = None, explain: bool = True) -> tuple[Planner, list[Decision], dict]:
    """Submit each reservation in turn against the plan the earlier ones left (`milp` decides them together).

    `explain`: a rejection for capacity carries the earliest deadline that would fit (about ten more placements).
    """
    planner = Planner(cluster, now)
    if milp is not None:
        submitted = now or cluster.start
        result = milp.decide(planner.plan, [(r, submitted) for r in reservations])
        return planner, result.decisions, {"solver": result.report.to_json()}
    chosen = get_agent(agent)
    decisions = []
    with progress(len(reservations), "planning", "reservations", enabled=len(reservations) > 100) as update:
        for reservation in reservations:
            decisions.append(planner.submit(reservation, chosen, validated=True, explain=explain))
            update(len(decisions))
    return planner, decisions, {}


# The contract (decisions.md, tests/test_cli.py) keeps standard output empty on bad input: no JSON error document.
@click.command("plan", cls=RayonCommand, json_errors=False)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--cluster", "cluster_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Cluster file (YAML): plan origin, step, horizon, capacity.")
@click.option("--agent", type=NameParam(AGENTS), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--now", "when", type=TimeParam(), help=time_help("The plan's clock and every submission time "
              "(default: the cluster's start).", "the cluster's start"))
@click.option("--json", "as_json", is_flag=True, help="One JSON document of decisions on standard output.")
@fail_on_reject_option
@click.option("--solver", type=NameParam(BACKENDS), default=DEFAULT_BACKEND, show_default=True,
              help="MILP backend (with --agent milp).")
@click.option("--time-limit", type=click.FloatRange(min=0.5), default=DEFAULT_TIME_LIMIT, show_default=True,
              help="Seconds the MILP agent may take in all, greedy start included.")
@click.option("--gap", type=click.FloatRange(min=0.0), default=DEFAULT_GAP, show_default=True,
              help="Relative optimality gap at which the MILP stops.")
@click.option("--coarsen", type=click.IntRange(min=1, max=MAX_STEP), default=None,
              help="Solve the MILP on slots of this many plan steps, then repair at the plan step (default: chosen "
              "from the batch's size and the time limit; 1 = at the plan step).")
@click.option("--smooth/--no-smooth", default=True, show_default=True,
              help="Spend the MILP's time left on fewer allocation changes (the accepted set stays).")
@click.option("--dump-model", type=click.Path(dir_okay=False, writable=True), callback=lambda _c, _p, v: _writable(v),
              help="Write the MILP (.mps for MPS, else LP format) for debugging.")
@click.option("--explain/--no-explain", default=True, show_default=True,
              help="Give each rejection for capacity the earliest deadline that would fit (greedy agents; most of the "
              "time of a large batch that fills the plan goes into it).")
def plan_command(paths: tuple[str, ...], cluster_path: str, agent: str, when: TimeValue | None, as_json: bool,
                 fail_on_reject: bool, solver: str, time_limit: float, gap: float, coarsen: int | None, smooth: bool,
                 dump_model: str | None, explain: bool) -> None:
    """Plan reservation files against a cluster, in order, each against the plan the earlier ones left.

    PATHS are .rdl, .json or YARN JSON files, or folders of them. Exit status: 0 when
    planning ran (whatever was accepted; with --fail-on-reject, 3 when any was rejected),
    2 for bad input (nothing planned; inputs holding no reservation too), 1 for an internal failure.
    """
    cluster = read_cluster(cluster_path)
    assert cluster is not None
    now = resolve_time(when, cluster.start)
    if now is not None and not cluster.start <= now < cluster.end:
        raise RayonError(f"--now {units.format_instant(now)} is outside the plan "
                         f"[{units.format_instant(cluster.start)}, {units.format_instant(cluster.end)}); "
                         "nothing was planned")
    reservations = load_valid(paths, cluster, now, "nothing was planned")
    require_reservations(reservations, paths, "nothing was planned")
    _unique_across_files(reservations)
    chosen = get_agent(agent)
    milp = replace(chosen, backend=solver, time_limit=time_limit, gap=gap, dump_model=dump_model, coarsen=coarsen,
                   smooth=smooth) if isinstance(chosen, MilpAgent) else None
    try:
        planner, decisions, extra = plan_reservations(cluster, reservations, agent, now, milp, explain)
    except Exception as exc:  # an internal failure: report it, exit 1, never a half-printed document
        raise RayonError(f"{type(exc).__name__}: {exc}", code="internal", place="internal error while planning",
                         exit_code=EXIT_INTERNAL) from exc
    if as_json:
        click.echo(json.dumps({**plan_document(cluster, agent, decisions, planner.plan.clock), **extra}, indent=2))
    else:
        echo_decisions(decisions, planner.plan.clock, agent)
        if extra:
            report = extra["solver"]
            solver_gap = "n/a" if report["gap"] is None else f"{report['gap']:.2g}"
            click.echo(f"solver {report['backend']}: {report['status']}, gap {solver_gap}, kept the "
                       f"{report['chosen']} plan (greedy start: {report['greedy']}, value {report['greedy_value']:g})")
            if report["changes_before"] is not None:
                click.echo(f"smoothing ({report['smoothing']}): allocation changes {report['changes_before']} -> "
                           f"{report['changes_after']}")
            if report["value_bound"] is not None:
                click.echo(f"accepted value {report['value']:g} of at most {report['value_bound']:.6g} "
                           f"(at most {report['optimality_gap']:.2%} below the optimum)")
    check_rejections(decisions, fail_on_reject)


COMMANDS = [plan_command]


def _writable(path: str | None) -> str | None:
    """`--dump-model`'s file, refused before any planning when its folder does not exist (not an internal error after
    the solve)."""
    if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise click.BadParameter(f"the folder of `{path}` does not exist", param_hint="'--dump-model'")
    return path


def _unique_across_files(reservations: Sequence[Reservation]) -> None:
    """Each name once across the files (a file's own repeats are reported when it is read): an error at every later
    one, naming where the first is."""
    first: dict[str, Span] = {}
    sink = ErrorSink()
    for reservation in reservations:
        if reservation.name in first:
            sink.add(reservation.span, f"reservation `{reservation.name}` is defined again (first at "
                     f"{first[reservation.name]})", hint="reservation names are unique across the files of one plan")
        first.setdefault(reservation.name, reservation.span)
    if sink.errors:
        raise RDLErrors(sink.errors).then("nothing was planned")
