"""`rayon follow`: the queue capacities a stored plan asks for, round by round over a time range.

A table by default (one row per queue per round), `--json` for machines, and `--format yunikorn`
for one Apache YuniKorn `queues.yaml` per change point, to drive a real YuniKorn deployment from
the plan. Bad input (a time outside the horizon, an empty range, a bad setting) exits 2 and prints
nothing on standard output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any as AnyType

import click

from follower.follow import configmap, yunikorn
from follower.follow.follower import (
    DEFAULT_MAX_POLICY,
    DEFAULT_QUEUE,
    MAX_POLICIES,
    PLAN_QUEUE,
    Follower,
    FollowerError,
    PlanView,
)
from follower.follow.rounds import QueueTarget, Round
from follower.follow.text import format_vector
from planner.cli.options import json_option, opened, state_option
from planner.cli.render import column_quantities
from rdl import units
from rdl.cli import NameParam, ParsedParam, RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.shape import step_floor
from rdl.source import read_text
from rdl.table import format_table

FORMATS = ("table", "json", "yunikorn")


# Bad input prints nothing on standard output (docs/follower.md, the tests): no JSON error document either.
@click.command("follow", cls=RayonCommand, json_errors=False)
@click.option("--from", "when_from", type=TimeParam(), help=time_help("Time of the first round (default: the plan's "
              "clock)."))
@click.option("--to", "when_to", type=TimeParam(),
              help=time_help("Rounds start before this time (default: the end of the last reservation window still "
                             "open after --from, within the horizon)."))
@click.option("--every", type=click.IntRange(min=1), default=1, show_default=True, help="Plan steps between rounds.")
@click.option("--changes", is_flag=True, help="Only the rounds whose queues differ from the round before.")
@click.option("--plan-queue", default=PLAN_QUEUE, show_default=True, help="The plan's (reservable) queue.")
@click.option("--default-queue", default=DEFAULT_QUEUE, show_default=True,
              help="The plan's default queue, below the plan queue.")
@click.option("--max-policy", type=NameParam(MAX_POLICIES), default=DEFAULT_MAX_POLICY, show_default=True,
              help="The max of the plan's queues: strict (= guaranteed), plan (the plan's capacity) or unlimited.")
@click.option("--format", "output", type=click.Choice(FORMATS), help="Output format [default: table].")
@click.option("--sort-policy", type=click.Choice(yunikorn.SORT_POLICIES), default=yunikorn.DEFAULT_SORT_POLICY,
              show_default=True, help="YuniKorn: application.sort.policy of the plan's leaf queues.")
@click.option("--partition", default=yunikorn.DEFAULT_PARTITION, show_default=True, help="YuniKorn: the partition.")
@click.option("--yunikorn-version", "version", default=yunikorn.DEFAULT_VERSION, show_default=True,
              help="YuniKorn: the release the documents are for (1.x); with stateaware, 1.6 and later get fifo.")
@click.option("--base", "base_path", type=click.Path(exists=True, dir_okay=False),
              help="YuniKorn: a queues.yaml to put the plan queue into; its other queues are kept.")
@click.option("--resource-name", "renames", multiple=True, metavar="PLAN=YUNIKORN",
              help="YuniKorn: the name of a plan resource there, e.g. gpu=nvidia.com/gpu (vcores is vcore).")
@click.option("--apply", "apply_to", type=ParsedParam("ConfigMap", configmap.ConfigMapRef.target,
                                                     configmap.ConfigMapRef),
              metavar="yunikorn-configmap[:NS/NAME]",
              help="Write the round at --from into YuniKorn's ConfigMap (key queues.yaml; default "
              "yunikorn/yunikorn-configs) through the Kubernetes API, if it differs; its other keys are kept.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --apply: the kubeconfig [default: $KUBECONFIG, else ~/.kube/config, else the pod's "
              "service account].")
@click.option("--context", "kube_context", metavar="NAME", help="With --apply: the kubeconfig's context to use "
              "[default: its current one].")
@click.option("--dry-run", is_flag=True, help="With --apply: say what would be written, and write nothing.")
@state_option
@json_option
def follow_command(when_from: TimeValue | None, when_to: TimeValue | None, every: int, changes: bool, plan_queue: str,
                   default_queue: str, max_policy: str, output: str | None, sort_policy: str, partition: str,
                   version: str, base_path: str | None, renames: tuple[str, ...], apply_to: configmap.ConfigMapRef
                   | None, kubeconfig: str | None, kube_context: str | None, dry_run: bool, state_path: str | None,
                   as_json: bool) -> None:
    """Print the queue capacities the stored plan asks for, per round over a time range.

    Per round: the plan queue (guaranteed the plan's capacity), its default queue (what the
    reservations do not hold) and one queue per reservation whose window is open (what the plan
    allocates it then, from zero at its window's start). `--format yunikorn` prints one YuniKorn
    queues.yaml per change point instead; `--apply yunikorn-configmap` writes the one for --from (by
    default the plan's clock) into YuniKorn's ConfigMap.
    """
    chosen = "yunikorn" if apply_to is not None else _output(output, as_json)
    _check_apply(apply_to, output, as_json, when_to, changes, kubeconfig, kube_context, dry_run)
    sort_policy, warning = yunikorn.sort_policy_for(sort_policy, version)
    if warning is not None and chosen == "yunikorn":
        click.echo(f"warning: {warning}", err=True)
    follower = Follower(plan_queue, default_queue, round_steps=every, max_policy=max_policy)
    names = dict(_rename(r) for r in renames)
    base = yunikorn.load_base(read_text(base_path), base_path) if base_path else None
    applier = None if apply_to is None else configmap.connect(apply_to, kubeconfig, kube_context)
    with opened(state_path) as store:
        view = PlanView(store.load_plan())
        now = store.now()
    start = resolve_time(when_from, now) or now
    if applier is not None:
        (round,) = follower.rounds(view, start, view.plan.clock.at(view.step_of(start) + 1))
        applied = applier.apply(lambda theirs: yunikorn.document(round, base or theirs, partition, sort_policy,
                                                                 names), dry_run)
        click.echo(f"{applied}: {round.plan.path} at {units.format_instant(round.time)}")
        if dry_run and applied.outcome != "unchanged":
            click.echo(applied.text, nl=False)
        return
    end = resolve_time(when_to, now)
    horizon_end = view.plan.clock.at(view.plan.clock.steps)
    view.step_of(start)
    end = min(end or default_end(view, start, every), horizon_end)
    if end <= start:
        raise FollowerError(f"--to {units.format_instant(end)} is not after --from {units.format_instant(start)}: "
                            "no round")
    rounds = follower.rounds(view, start, end)
    if chosen == "yunikorn":
        click.echo(yunikorn.render(rounds, end, base, partition, sort_policy, names), nl=False)
        return
    shown = changed(rounds) if changes else rounds
    if chosen == "json":
        click.echo(json.dumps(document(follower, start, end, shown), indent=2))
    else:
        click.echo(table(shown, view.plan.resources, max_policy))


def default_end(view: PlanView, start: datetime, every: int) -> datetime:
    """The end of the last reservation window still open after `start` (at least one round), within the horizon."""
    clock = view.plan.clock
    first = max(0, step_floor(clock.origin, start, clock.step))
    last = max([hi for r in view.reservations for _, hi in r.windows if hi > first], default=first + every)
    return clock.at(min(clock.steps, max(last, first + every)))


def changed(rounds: Sequence[Round]) -> list[Round]:
    """The first round, and every round whose queue settings differ from the one before or that retires one."""
    kept = []
    for index, round in enumerate(rounds):
        if index == 0 or round.ended or round.settings() != rounds[index - 1].settings():
            kept.append(round)
    return kept


def document(follower: Follower, start: datetime, end: datetime, rounds: Sequence[Round]) -> dict[str, AnyType]:
    """The one JSON document `rayon follow --json` prints (memory in MiB, as in the plan)."""
    return {"plan_queue": follower.plan_queue, "default_queue": follower.default_path,
            "max_policy": follower.max_policy, "every": follower.round_steps,
            "from": units.format_instant(start), "to": units.format_instant(end),
            "rounds": [r.to_json() for r in rounds]}


def table(rounds: Sequence[Round], names: Sequence[str], max_policy: str) -> str:
    """One row per queue per round, then a row per reservation whose window ended."""
    rows: list[list[str]] = []
    amounts: list[list[float | None]] = []  # per row, each resource's amount: shown in one unit per column
    for round in rounds:
        time = units.format_instant(round.time)
        for queue in round.queues:
            rows.append([time, queue.path, *("" for _ in names), _maximum(queue, max_policy), _note(round, queue)])
            amounts.append([queue.guaranteed[n] for n in names])
        for name in round.ended:
            rows.append([time, f"{round.plan.path}.{name}", *("-" for _ in names), "-", "window ended"])
            amounts.append([None for _ in names])
    for column, name in enumerate(names):
        given = [(row, values[column]) for row, values in zip(rows, amounts, strict=True) if values[column] is not None]
        for (row, _), shown in zip(given, column_quantities(name, [v for _, v in given if v is not None]),
                                   strict=True):
            row[2 + column] = shown
    return format_table(["TIME", "QUEUE", *(n.upper() for n in names), "MAX", "NOTE"], rows)


def _note(round: Round, queue: QueueTarget) -> str:
    if queue.kind == "plan" and round.capacity != round.plan_capacity:
        return "the cluster has " + format_vector(round.capacity)
    if queue.kind == "reservation" and round.overcommitted:
        return f"over-committed: scaled by {round.scale:.4g} from {format_vector(queue.planned)}"
    return ""


def _maximum(queue: QueueTarget, max_policy: str) -> str:
    if queue.maximum is None:
        return "-"
    if max_policy == "strict" and queue.maximum == queue.guaranteed:
        return "= guaranteed"
    return format_vector(queue.maximum)


def _output(output: str | None, as_json: bool) -> str:
    if as_json and output not in (None, "json"):
        raise FollowerError(f"--json and --format {output} ask for two outputs; give one")
    return "json" if as_json else output or "table"


def _check_apply(apply_to: configmap.ConfigMapRef | None, output: str | None, as_json: bool,
                 when_to: TimeValue | None, changes: bool, kubeconfig: str | None, kube_context: str | None,
                 dry_run: bool) -> None:
    """--apply writes one document, the round at --from: the options that print many, or another form, are refused
    with it, and its own options without it."""
    if apply_to is None:
        given = [flag for flag, value in (("--kubeconfig", kubeconfig), ("--context", kube_context),
                                          ("--dry-run", dry_run)) if value]
        if given:
            raise FollowerError(f"{given[0]} goes with --apply", f"add --apply {configmap.TARGET}")
        return
    clash = [flag for flag, value in (("--json", as_json), ("--to", when_to is not None), ("--changes", changes),
                                      (f"--format {output}", output not in (None, "yunikorn"))) if value]
    if clash:
        raise FollowerError(f"--apply writes one queues.yaml, the round at --from; {clash[0]} is for printing rounds",
                            "drop one of them")


def _rename(text: str) -> tuple[str, str]:
    plan, sep, theirs = text.partition("=")
    if not sep or not plan.strip() or not theirs.strip():
        raise FollowerError(f"--resource-name `{text}` is not PLAN=YUNIKORN", "e.g. gpu=nvidia.com/gpu")
    return plan.strip(), theirs.strip()



COMMANDS = [follow_command]
