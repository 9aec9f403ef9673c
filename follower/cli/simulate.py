"""`rayon simulate SCENARIO.yaml`: run the whole product on a workload and say what it achieved."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from follower.follow.follower import FollowerError
from follower.scheduler.errors import SchedulerError
from follower.sim.checkpoint import PARTIAL
from follower.sim.engine import simulate
from follower.sim.evaluate import Outcome, check_grid, evaluate, grid_checkpoint, plan_peers, pool_size, with_slack
from follower.sim.evaluate import render as evaluate_render
from follower.sim.grid import (
    DEFAULT_SEEDS,
    EXAMPLES,
    FAIRNESS_SCENARIOS,
    GRID_AGENTS,
    LOAD_AGENTS,
    LOAD_SCENARIOS,
    LOADS,
    MANY_SEEDS,
    POLICIES,
    RESERVATION_SCENARIOS,
    SLACKS,
    Grid,
)
from follower.sim.gridclock import GridClock
from follower.sim.metrics import Result
from follower.sim.peers import PEER_AGENTS, DecisionSource, read_decisions
from follower.sim.planning import MILP_TIME_LIMIT
from follower.sim.scenario import Scenario, agent_names, load_factor, load_scenario
from follower.sim.setup import SIMULATION_POLICIES
from follower.sim.workloads.job import Workload
from planner.agents.replay import ReplayAgent
from rdl.cli import Choice, RayonCommand
from rdl.cluster import is_cluster_text
from rdl.errors import RayonError, RDLErrors
from rdl.progress import progress
from rdl.table import format_table


def read_scenario(path: str, trace: str | None = None) -> Scenario:
    """The scenario (reading `trace` instead of its workload's file, when given); every problem is raised as
    `FILE:LINE:COL: message` (or `FILE: message`)."""
    try:
        return load_scenario(path, trace=trace)
    except RDLErrors:
        if cluster_file(path):  # one line saying what the file is, not a list of a cluster file's keys
            raise RayonError("this is a cluster file (it has `capacity` or `nodes` and no `workload`), not a "
                             "simulation scenario", place=path, hint="a scenario holds a `cluster:` section (such "
                             "a file's keys) and a `workload:` (docs/workloads.md); `rayon init --cluster` takes "
                             "this file") from None
        raise
    except (OSError, ValueError) as error:
        raise RayonError(str(error), place=path) from error


def cluster_file(path: str) -> bool:
    """Whether the file at `path` is a cluster file rather than a scenario."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return is_cluster_text(text) and "workload:" not in text


@contextmanager
def progress_bar(total: float, enabled: bool) -> Iterator[Callable[[float], None]]:
    """Progress over simulated seconds, on stderr (so `--json` stays pure); a no-op when disabled."""
    with progress(int(total), "simulating", "simulated seconds", enabled=enabled) as update:
        yield lambda now: update(min(int(now), int(total)))


def _summary_rows(result: Result) -> list[list[Any]]:
    summary = result.summary
    production, best = summary["production"], summary["best_effort"]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.1%}"

    def seconds(value: float | None) -> str:
        return "–" if value is None else f"{value:.0f}"

    replayed = summary.get("replayed")
    replay_rows = [] if replayed is None else [
        [f"  {replayed['agent']} accepted up front", replayed["accepted_by_agent"]],
        ["  no longer fitted when replayed", replayed["diverged"]]]
    return [
        ["production jobs", production["jobs"]],
        *replay_rows,
        ["  accepted", production["accepted"]],
        ["  met deadline", production["met_deadline"]],
        ["  still open at the end", production["open"]],
        ["  SLA attainment" if not production["open"] else  # a share of the jobs decided, not of them all
         f"  SLA attainment, of the {production['jobs'] - production['open']} not still open",
         pct(production["sla_attainment"])],
        [f"  SLA over the {production['feasible']} that could make it", pct(production["sla_feasible"])],
        ["  rejected, by reason", ", ".join(f"{code} {count}" for code, count in production["rejections"].items())
         or "none"],
        ["  start after submission, median (s)", seconds(production["median_start_latency_s"])],
        ["  late, mean lateness (s)", f"{production['late']}, {seconds(production['mean_lateness_s'])}"],
        ["best-effort jobs", best["jobs"]],
        ["  completed", best["completed"]],
        ["  mean response (s)", seconds(best["mean_response_s"])],
        ["  p95 response (s)", seconds(best["p95_response_s"])],
        ["  mean slowdown", "–" if best["mean_slowdown"] is None else f"{best['mean_slowdown']:.2f}"],
        [f"  the {best['short_jobs']} under a minute: mean wait (s)", seconds(best["short_mean_wait_s"])],
        ["utilisation", pct(summary["utilization"])],
        ["preemptions", summary["preemptions"]],
        ["lost work (container-hours)", f"{summary['lost_work_s'] / 3600:.1f}"],
        ["simulated (s)", f"{result.simulated_s:.0f}"],
        ["wall (s)", f"{result.wall_s:.2f}"],
        ["events", result.events],
    ]


@click.command("simulate", cls=RayonCommand)
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False))
@click.option("--agent", type=Choice((*agent_names(), *PEER_AGENTS)), help="Planning agent; `none` plans "
              "nothing (the time-agnostic baseline); yarn-* replay YARN's own agents' decisions, made beforehand "
              "(see --decisions). Default: the scenario's.")
@click.option("--decisions", type=click.Path(exists=True, dir_okay=False), help="Replay another system's "
              "decisions on this scenario's production reservations (a decisions file from "
              "benchmarks/peers/yarn_rows.py; docs/yarn.md); each must still fit the plan when its job arrives.")
@click.option("--policy", type=click.Choice(SIMULATION_POLICIES), help="Application sorting in the queues "
              "(`userfair`: one queue per user, equal shares). Default: the scenario's.")
@click.option("--seed", type=click.IntRange(min=0), help="Random seed (default: the scenario's).")
@click.option("--load", type=click.FloatRange(min=0.0, min_open=True), help="Offered load: the same jobs arriving "
              "this many times as fast (default: the scenario's, 1).")
@click.option("--slack", type=click.FloatRange(min=0.0, min_open=True), help="Mean deadline slack factor of the "
              "workload's production jobs (`rayon evaluate --slacks`; default: the scenario's).")
@click.option("--trace", type=click.Path(exists=True, dir_okay=False), help="Trace file to read instead of the "
              "workload's `file` (another copy, or a larger file of the same format).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON document.")
@click.option("--trace-out", type=click.Path(dir_okay=False, writable=True),
              help="Write one JSON line per event (time, application, event, queue, node, resources).")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: when it is a terminal).")
def simulate_command(scenario: str, agent: str | None, decisions: str | None, policy: str | None, seed: int | None,
                     load: float | None, slack: float | None, trace: str | None, as_json: bool,
                     trace_out: str | None, progress: bool | None) -> None:
    """Simulate SCENARIO: jobs arrive, reserve, get queue capacity from the plan, run, and are measured.

    \b
    Examples:
      rayon simulate examples/scenarios/tiny.yaml
      rayon simulate examples/scenarios/synthetic_mix.yaml --agent none --json
      rayon simulate examples/scenarios/synthetic_mix.yaml --agent capacity --load 2
      rayon simulate examples/scenarios/ricc_2days.yaml --agent gree-l --slack 1.5 --seed 2 --json
      rayon simulate examples/scenarios/ricc_week.yaml --policy drf --trace-out events.jsonl
      rayon simulate examples/scenarios/ricc_2days.yaml --trace /data/traces/ricc_2010.swf.gz
      rayon simulate examples/scenarios/tiny.yaml --decisions tiny-yarn-greedy.json

    A trace file named relative to the scenario that is not next to it is looked up in the
    folder $RAYON_TRACES names.
    """
    chosen = read_scenario(scenario, trace)
    if load is not None:
        chosen = replace(chosen, load=load)
    if slack is not None:
        try:
            chosen = with_slack(chosen, slack)
        except ValueError as error:
            raise RayonError(str(error), hint="--slack applies to workloads that draw deadlines") from None
    show = sys.stderr.isatty() if progress is None else progress
    try:
        workload = chosen.load_workload()
        replayed = _replayed(chosen, workload, agent, decisions, seed)
        total = chosen.duration or max((job.submit for job in workload.jobs), default=0.0)
        with ExitStack() as stack:
            events = stack.enter_context(Path(trace_out).open("w", encoding="utf-8")) if trace_out else None
            advance = stack.enter_context(progress_bar(total, show))
            result = simulate(chosen, agent=None if replayed else agent, policy=policy, seed=seed, trace=events,
                              progress=advance, workload=workload, planning_agent=replayed)
            advance(total)
    except (SchedulerError, FollowerError, OSError, ValueError) as error:
        raise RayonError(str(error), place=scenario) from error
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    click.echo(f"{result.scenario}: agent {result.agent}, policy {result.policy}, seed {result.seed}")
    click.echo(format_table(["measure", "value"], _summary_rows(result)))


def _replayed(scenario: Scenario, workload: Workload, agent: str | None, decisions: str | None,
              seed: int | None) -> ReplayAgent | None:
    """The agent replaying --decisions (checked to answer this run's stream), or None; a yarn-* agent without
    decisions is an error saying how to make them."""
    if decisions is None:
        if agent in PEER_AGENTS:
            raise RayonError(f"`{agent}` is YARN's own agent: its decisions are made beforehand, by YARN in a JVM, "
                             "not by rayon", place=scenario.file,
                             hint=f"python benchmarks/peers/yarn_rows.py {scenario.file} --agents {agent} --out "
                             f"{agent}.json, then add --decisions {agent}.json")
        return None
    if seed is not None and seed != scenario.seed:
        scenario, workload = replace(scenario, seed=seed), replace(scenario, seed=seed).load_workload()
    replayed = read_decisions(Path(decisions), scenario, workload)
    if agent is not None and agent != replayed.name:
        raise RayonError(f"--agent {agent}, but {decisions} holds {replayed.name}'s decisions", place=scenario.file,
                         hint="leave out --agent: the decisions file names its agent")
    return replayed


def _names(text: str, what: str, known: tuple[str, ...] | None = None) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if known is not None and name not in known]
    if unknown:
        raise click.BadParameter(f"unknown {what} `{unknown[0]}`; choose from {', '.join(known or ())}")
    return names


def _seed_count(text: str) -> tuple[str, int]:
    """`NAME=N` of --seeds-for."""
    name, _, count = text.partition("=")
    if not name or not count.isdigit() or int(count) < 1:
        raise ValueError(f"--seeds-for takes NAME=N with N a whole number of 1 or more, got `{text}`")
    return name, int(count)


def scenarios_folder(given: str | None) -> Path | None:
    """Where scenario names are looked up: `--scenarios`, else the repository's examples/scenarios when it is there."""
    if given is not None:
        return Path(given)
    return EXAMPLES if EXAMPLES.is_dir() else None


def _scenario_paths(text: str, folder: Path | None) -> tuple[str, ...]:
    """A path for each name in `text`: a `.yaml` file as given (checked when the grid loads), else FOLDER/NAME.yaml."""
    names = _names(text, "scenario")
    named = [name for name in names if not name.endswith((".yaml", ".yml"))]
    if not named:
        return names
    if folder is None:
        # An installed rayon has no examples next to its sources: say so, rather than "no scenario `x`".
        raise click.BadParameter(f"no scenarios folder: {EXAMPLES} does not exist (the examples ship with the "
                                 "repository, not the package); point at one with --scenarios DIR, or give "
                                 "scenario files by path", param_hint="--scenarios")
    missing = [name for name in named if not (folder / f"{name}.yaml").is_file()]
    if missing:
        raise click.BadParameter(f"no scenario {', '.join(f'`{name}`' for name in missing)} in {folder} "
                                 "(a name stands for NAME.yaml there; or give a path)")
    return tuple(str(folder / f"{name}.yaml") if name in named else name for name in names)


def refuse_to_overwrite(out: Path, force: bool) -> None:
    """Raises when `out` already holds a report and `--force` was not given (docs/evaluation/report.md is committed)."""
    if (out / "report.md").exists() and not force:
        raise RayonError(f"{out / 'report.md'} exists", hint="pass --force to overwrite it, or choose another --out")


# The quick grid: the reservation study on one synthetic and one real scenario at one slack factor, without the
# MILP (minutes per run on the traces), and the fairness study on one small scenario; three seeds per cell, the
# fewest that give an interval of some use (t = 4.30, against 12.7 with two).
QUICK = {"reservations": "synthetic_mix,alibaba_2days", "agents": "none,priority,capacity,gree,gree-l", "slacks": "3",
         "fairness": "uwfq_power_small", "seeds": "3", "seeds_for": "", "load_scenarios": "synthetic_mix",
         "loads": "1,2"}


QUICK_FLAGS = ", ".join(f"--{name.replace('_', '-')} {value or repr('')}" for name, value in QUICK.items())


@dataclass(frozen=True)
class PeerRows:
    """Other systems' agents for `rayon evaluate`'s reservation study, given by a caller that can decide for them
    (benchmarks/peers/evaluate.py passes it as the command's `obj`): the agents, their decision source, and why
    any were left out."""

    agents: tuple[str, ...] = ()
    source: DecisionSource | None = None
    note: str = ""


@click.command("evaluate", cls=RayonCommand)
@click.option("--out", type=click.Path(file_okay=False), default="evaluation", show_default=True,
              help="Folder for report.md and its figures.")
@click.option("--force", is_flag=True, help="Overwrite a report already in --out.")
@click.option("--scenarios", "scenarios_dir", type=click.Path(exists=True, file_okay=False),
              help="Folder in which scenario names are looked up (default: the repository's examples/scenarios).")
@click.option("--reservations", default=",".join(RESERVATION_SCENARIOS), show_default=True,
              help="Scenarios of the reservation study (names in --scenarios, or paths; empty: skip).")
@click.option("--agents", default=",".join(GRID_AGENTS), show_default=True,
              help="Agents compared (the MILP only when named: one arrival at a time it decides as greedy does).")
@click.option("--slacks", default=",".join(f"{s:g}" for s in SLACKS), show_default=True,
              help="Mean deadline slack factors.")
@click.option("--fairness", default=",".join(FAIRNESS_SCENARIOS), show_default=True,
              help="Scenarios of the fairness study (empty: skip).")
@click.option("--policies", default=",".join(POLICIES), show_default=True, help="Policies compared.")
@click.option("--load-scenarios", default=",".join(LOAD_SCENARIOS), show_default=True,
              help="Scenarios of the load study: the same jobs arriving faster (empty: skip).")
@click.option("--loads", default=",".join(f"{load:g}" for load in LOADS), show_default=True,
              help="Load factors of the load study (arrivals that many times as fast).")
@click.option("--load-agents", default=",".join(LOAD_AGENTS), show_default=True,
              help="Baselines and agents of the load study.")
@click.option("--seeds", type=click.IntRange(min=1), default=DEFAULT_SEEDS, show_default=True,
              help="Runs per cell, at the scenario's seed s, s+1, ...; the report gives mean ± 95 % interval.")
@click.option("--seeds-for", default=",".join(f"{name}={count}" for name, count in MANY_SEEDS), show_default=True,
              help="NAME=N,...: scenarios that run N seeds instead of --seeds (those whose runs take a second).")
@click.option("--milp-time-limit", type=click.FloatRange(min=0.1), default=MILP_TIME_LIMIT, show_default=True,
              help="Seconds the `milp` agent may search for one arrival's decision (the same default as `rayon "
                   "simulate`). It cuts the solver's search, not the building of its model: on the traces a smaller "
                   "limit does not make the MILP's runs much shorter.")
@click.option("--workers", type=click.IntRange(min=1), help="Simulations at once (default: the CPU count); more than "
              "one runs them on a local Dask cluster of that many processes.")
@click.option("--scheduler", metavar="ADDRESS", help="Run the grid on your Dask cluster, whose scheduler is at "
              "ADDRESS (tcp://HOST:8786); the same progress, partial/ folder and figures as a run here.")
@click.option("--spark/--no-spark", default=True, show_default=True,
              help="The UWFQ section on the task-level Spark model (`rayon spark`, as many seeds; a few minutes).")
@click.option("--render", is_flag=True, help="Write the report in --out again from its results.json, simulating "
              "nothing: the Spark section's runs are kept there too (a results.json written before they were has "
              "them simulated again, about 100 s on two cores; --no-spark leaves the section out): for a change in "
              "how the report is written.")
@click.option("--quick", is_flag=True, help="A small grid, about 4 minutes on two busy cores (options still win): "
              f"{QUICK_FLAGS}.")
@click.pass_context
def evaluate_command(ctx: click.Context, out: str, force: bool, scenarios_dir: str | None, reservations: str,
                     agents: str, slacks: str, fairness: str, policies: str, load_scenarios: str, loads: str,
                     load_agents: str, seeds: int, seeds_for: str, milp_time_limit: float,
                     workers: int | None, scheduler: str | None, spark: bool, render: bool, quick: bool) -> None:
    """Run the comparison grids and write a Markdown report with tables and figures.

    Every scenario is loaded before the first simulation; any that does not load is named and
    nothing runs (exit 2). A report already in --out is kept unless --force is given.
    Progress goes to standard error: run i of N, its wall time, the time elapsed and an estimate
    of the time left. Each run is kept in OUT/partial as it finishes: after a stop (a crash, a
    reboot), the same command simulates only the runs missing (delete OUT/partial after changing
    the simulator's code). Every seed's figures are written
    to results.json beside the report. YARN's
    own agents join the reservation study through `python benchmarks/peers/evaluate.py` (the same
    options), which decides their runs with YARN's classes.

    \b
    Examples:
      rayon evaluate                                   # the default grid, into evaluation/
      rayon evaluate --out docs/evaluation --force     # regenerate the committed report (about 15 min)
      rayon evaluate --quick --out /tmp/report         # about 4 minutes: the point, not the whole grid
      rayon evaluate --scheduler tcp://10.0.0.5:8786   # on your Dask cluster
      rayon evaluate --seeds 1 --milp-time-limit 1     # one seed per cell, a faster MILP: no intervals
      rayon evaluate --reservations synthetic_mix --slacks 3 --fairness '' --out /tmp/report
      rayon evaluate --scenarios ~/rayon/examples/scenarios   # an installed rayon, the repository's scenarios
    """
    if render:
        click.echo(str(evaluate_render(Path(out), Grid.spark if spark else ())))
        return
    if quick:  # the quick grid's values, for every grid option left at its default
        given = {name: value for name, value in QUICK.items()
                 if ctx.get_parameter_source(name) == click.core.ParameterSource.DEFAULT}
        reservations = given.get("reservations", reservations)
        agents, slacks = given.get("agents", agents), given.get("slacks", slacks)
        fairness = given.get("fairness", fairness)
        load_scenarios, loads = given.get("load_scenarios", load_scenarios), given.get("loads", loads)
        seeds, seeds_for = int(given.get("seeds", seeds)), given.get("seeds_for", seeds_for)
    folder = scenarios_folder(scenarios_dir)
    peers = ctx.obj if isinstance(ctx.obj, PeerRows) else PeerRows()
    try:
        grid = Grid(reservations=_scenario_paths(reservations, folder), agents=_names(agents, "agent", agent_names()),
                    slacks=tuple(float(value) for value in _names(slacks, "slack factor")),
                    fairness=_scenario_paths(fairness, folder),
                    policies=_names(policies, "policy", SIMULATION_POLICIES), seeds=seeds,
                    seeds_for=tuple(_seed_count(pair) for pair in _names(seeds_for, "seed count")),
                    milp_time_limit=milp_time_limit, peers=peers.agents, spark=Grid.spark if spark else (),
                    load_scenarios=_scenario_paths(load_scenarios, folder),
                    loads=tuple(load_factor(value) for value in _names(loads, "load factor")),
                    load_agents=_names(load_agents, "agent", agent_names()))
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    refuse_to_overwrite(Path(out), force)
    check_grid(grid)
    grid = plan_peers(grid)
    runs = grid.runs()
    kept = grid_checkpoint(Path(out), grid).kept(runs)
    clock = GridClock([run for index, run in enumerate(runs) if index not in kept], pool_size(workers))
    if scheduler is not None:
        click.echo(f"on the Dask cluster at {scheduler}", err=True)
    cells = len({run.cell for run in runs})
    per_cell = f"{grid.seeds} seeds" if len(runs) == cells * grid.seeds else "seeds per --seeds and --seeds-for"
    click.echo(f"{len(runs)} simulations ({cells} cells × {per_cell}), {clock.workers} at a time", err=True)
    if kept:
        click.echo(f"{len(kept)} of them kept in {Path(out) / PARTIAL} from an earlier attempt that stopped: "
                   f"{clock.total} to run", err=True)

    def progress(outcome: Outcome) -> None:
        clock.finished(outcome.run, outcome.wall_s)
        click.echo(clock.line(outcome.run, outcome.wall_s, outcome.run.seed), err=True)

    try:
        report = evaluate(Path(out), grid, workers, progress, peers.source, peers.note, scheduler)
    except (SchedulerError, FollowerError, OSError, ValueError) as error:
        raise RayonError(str(error), place="evaluate") from error
    click.echo(str(report))


COMMANDS = [simulate_command, evaluate_command]
