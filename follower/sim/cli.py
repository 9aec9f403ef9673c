"""`rayon simulate SCENARIO.yaml`: run the whole product on a workload and say what it achieved."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click

from follower.follower import FollowerError
from follower.scenario import Scenario, agent_names, load_scenario
from follower.scheduler.errors import SchedulerError
from follower.sim.engine import Result, simulate
from follower.sim.setup import SIMULATION_POLICIES
from rdl.cli import EXIT_BAD_INPUT
from rdl.errors import RDLErrors
from rdl.table import format_table


def read_scenario(path: str) -> Scenario:
    """The scenario, or exit 2 with every problem as `FILE:LINE:COL: message`."""
    try:
        return load_scenario(path)
    except RDLErrors as errors:
        click.echo(errors.render(), err=True)
    except (OSError, ValueError) as error:
        click.echo(f"{path}: {error}", err=True)
    sys.exit(EXIT_BAD_INPUT)


@contextmanager
def progress_bar(total: float, enabled: bool) -> Iterator[Callable[[float], None]]:
    """A progress bar over simulated time, on stderr (so `--json` stays pure); a no-op when disabled."""
    if not enabled or total <= 0:
        yield lambda _now: None
        return
    with click.progressbar(length=int(total), label="simulating", file=sys.stderr,
                           show_eta=True, show_percent=True) as bar:
        done = 0

        def advance(now: float) -> None:
            nonlocal done
            step = min(int(now), int(total)) - done
            if step > 0:
                bar.update(step)
                done += step

        yield advance


def _summary_rows(result: Result) -> list[list[Any]]:
    summary = result.summary
    production, best = summary["production"], summary["best_effort"]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.1%}"

    def seconds(value: float | None) -> str:
        return "–" if value is None else f"{value:.0f}"

    return [
        ["production jobs", production["jobs"]],
        ["  accepted", production["accepted"]],
        ["  met deadline", production["met_deadline"]],
        ["  SLA attainment", pct(production["sla_attainment"])],
        ["best-effort jobs", best["jobs"]],
        ["  completed", best["completed"]],
        ["  mean response (s)", seconds(best["mean_response_s"])],
        ["  p95 response (s)", seconds(best["p95_response_s"])],
        ["  mean slowdown", "–" if best["mean_slowdown"] is None else f"{best['mean_slowdown']:.2f}"],
        ["utilisation", pct(summary["utilization"])],
        ["preemptions", summary["preemptions"]],
        ["simulated (s)", f"{result.simulated_s:.0f}"],
        ["wall (s)", f"{result.wall_s:.2f}"],
        ["events", result.events],
    ]


@click.command("simulate")
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False))
@click.option("--agent", type=click.Choice(agent_names()), help="Planning agent; `none` plans nothing "
              "(the time-agnostic baseline). Default: the scenario's.")
@click.option("--policy", type=click.Choice(SIMULATION_POLICIES), help="Application sorting in the queues "
              "(`userfair`: one queue per user, equal shares). Default: the scenario's.")
@click.option("--seed", type=click.IntRange(min=0), help="Random seed (default: the scenario's).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON document.")
@click.option("--trace-out", type=click.Path(dir_okay=False, writable=True),
              help="Write one JSON line per event (time, application, event, queue, node, resources).")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: when it is a terminal).")
def simulate_command(scenario: str, agent: str | None, policy: str | None, seed: int | None, as_json: bool,
                     trace_out: str | None, progress: bool | None) -> None:
    """Simulate SCENARIO: jobs arrive, reserve, get queue capacity from the plan, run, and are measured.

    \b
    Examples:
      rayon simulate examples/scenarios/tiny.yaml
      rayon simulate examples/scenarios/synthetic_mix.yaml --agent none --json
      rayon simulate examples/scenarios/ricc_week.yaml --policy drf --trace-out events.jsonl
    """
    chosen = read_scenario(scenario)
    show = sys.stderr.isatty() if progress is None else progress
    try:
        workload = chosen.load_workload()
        total = chosen.duration or max((job.submit for job in workload.jobs), default=0.0)
        with ExitStack() as stack:
            trace = stack.enter_context(Path(trace_out).open("w", encoding="utf-8")) if trace_out else None
            advance = stack.enter_context(progress_bar(total, show))
            result = simulate(chosen, agent=agent, policy=policy, seed=seed, trace=trace, progress=advance,
                              workload=workload)
            advance(total)
    except (SchedulerError, FollowerError, OSError, ValueError) as error:
        click.echo(f"{scenario}: {error}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    click.echo(f"{result.scenario}: agent {result.agent}, policy {result.policy}, seed {result.seed}")
    click.echo(format_table(["measure", "value"], _summary_rows(result)))


COMMANDS = [simulate_command]
