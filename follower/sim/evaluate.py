"""`rayon evaluate`: run the comparison grids of the simulator and write the report.

Two studies (issue #8):
- Reservations: `none` (time-agnostic) vs `gree` vs `gree-l` vs `milp`, per scenario and mean
  slack factor — SLA attainment, best-effort response, utilisation, preemptions, acceptance.
- Fairness: `fifo`, `fair`, `userfair` (one queue per user, equal shares) and `uwfq` per
  scenario — mean response, the 0–80/80–95/95–100 % size buckets, slowdown, and DVR/DSR
  against the `userfair` run of the same workload.

Runs are independent, so they go to a process pool (`--workers`); results come back in grid
order whatever the finishing order, so the report is the same for the same grid and seeds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from follower.sim.engine import simulate
from follower.sim.metrics import JobRecord, Result, fairness_against
from follower.sim.report import Cell, write_report
from follower.sim.scenario import Scenario, agent_names, load_scenario
from follower.sim.setup import USER_FAIR
from rdl.errors import RayonError, RDLErrors

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
AGENTS = agent_names()
SLACKS = (1.5, 3.0, 10.0)
POLICIES = ("fifo", "fair", USER_FAIR, "uwfq")
RESERVATION_SCENARIOS = ("synthetic_mix", "ricc_week", "alibaba_2days")  # Alibaba: two days, see its scenario
FAIRNESS_SCENARIOS = ("uwfq_power_small", "uwfq_super_small", "google_homo", "google_hetero")

PUBLISHED = """## Published figures, for comparison

- UWFQ (Kažemaks et al., arXiv 2510.15485, abstract): UWFQ "reduces the average response time of
  small jobs by up to 74%" against Spark's built-in schedulers and state-of-the-art fair
  schedulers, and keeps a "6x lower fairness violation ratio" in multi-user, multi-job runs. Our
  0–80 % bucket is the small jobs; compare its `uwfq` row with `fair` and `userfair`, and our DVR
  with theirs. Their runs are real Spark on a real cluster with runtime partitioning; ours replay
  the same workload shapes in the simulator, without partitioning.
- Rayon (Curino et al., SoCC 2014) reports its gains over YARN's CapacityScheduler on its own
  production-derived workloads; we have not reproduced their numbers here (their traces are not
  public), so compare directions, not values.
"""


@dataclass(frozen=True)
class Run:
    """One simulation of the grid: which scenario file, study, options."""

    study: str
    label: str
    path: str
    agent: str | None = None
    policy: str | None = None
    slack: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class Grid:
    """The runs to make: scenarios × agents × slack factors, and scenarios × policies."""

    reservations: tuple[str, ...] = tuple(str(EXAMPLES / f"{name}.yaml") for name in RESERVATION_SCENARIOS)
    agents: tuple[str, ...] = AGENTS
    slacks: tuple[float, ...] = SLACKS
    fairness: tuple[str, ...] = tuple(str(EXAMPLES / f"{name}.yaml") for name in FAIRNESS_SCENARIOS)
    policies: tuple[str, ...] = POLICIES

    def runs(self) -> list[Run]:
        """Every run, in report order."""
        found = [Run("reservations", _label(path), path, agent=agent, slack=slack)
                 for path in self.reservations for slack in self.slacks for agent in self.agents]
        found += [Run("fairness", _label(path), path, policy=policy)
                  for path in self.fairness for policy in self.policies]
        return found


def _label(path: str) -> str:
    return Path(path).stem


def with_slack(scenario: Scenario, mean: float) -> Scenario:
    """The scenario with its workload's mean deadline slack factor set (workloads with a `slack`)."""
    params = scenario.workload.params
    if not hasattr(params, "slack"):
        raise ValueError(f"{scenario.file}: its workload has no deadline slack to vary")
    slack = replace(params.slack, mean=mean)
    return replace(scenario, workload=replace(scenario.workload, params=replace(params, slack=slack)))


def scenario_problem(path: str, slacks: Sequence[float]) -> str | None:
    """Why the scenario at `path` cannot run in the grid (it does not load, or has no slack to vary), or None."""
    try:
        scenario = load_scenario(path)
    except RDLErrors as errors:
        return errors.render()
    except (RayonError, OSError, ValueError) as error:
        return f"{path}: {error}"
    try:
        if slacks:  # every slack factor is set the same way: trying one tells for all
            with_slack(scenario, slacks[0])
    except ValueError as error:
        return str(error)  # it names the file
    return None


def check_grid(grid: Grid) -> None:
    """Loads every scenario of the grid before any simulation; raises one RayonError naming each that does not load.

    In the pool a bad scenario would fail only after the runs before it, and take the pool with it.
    """
    wanted = {path: grid.slacks for path in grid.reservations}
    wanted.update({path: () for path in grid.fairness if path not in wanted})
    problems = [problem for path, slacks in wanted.items() if (problem := scenario_problem(path, slacks))]
    if problems:
        raise RayonError(f"{len(problems)} of {len(wanted)} scenario(s) do not load:\n" + "\n".join(problems)
                         ).then("nothing was simulated")


def run_one(run: Run) -> tuple[Run, dict[str, Any], list[JobRecord], float]:
    """Simulate one grid point; returns it (with the agent and policy the scenario chose filled in), its summary,
    its records (for DVR/DSR) and its wall time."""
    scenario = load_scenario(run.path)
    if run.slack is not None:
        scenario = with_slack(scenario, run.slack)
    result: Result = simulate(scenario, agent=run.agent, policy=run.policy, seed=run.seed)
    return replace(run, agent=result.agent, policy=result.policy), result.summary, result.records, result.wall_s


def run_grid(grid: Grid, workers: int | None = None,
             progress: Callable[[Run, float], None] | None = None) -> list[tuple[Run, dict[str, Any], list[JobRecord]]]:
    """Every run of the grid (in a process pool when `workers` > 1), in grid order."""
    runs = grid.runs()
    count = workers or os.cpu_count() or 1
    done: dict[int, tuple[Run, dict[str, Any], list[JobRecord]]] = {}
    if count <= 1:
        for index, run in enumerate(runs):
            finished, summary, records, wall = run_one(run)
            done[index] = (finished, summary, records)
            if progress is not None:
                progress(finished, wall)
    else:
        with ProcessPoolExecutor(max_workers=count) as pool:
            futures = {pool.submit(run_one, run): index for index, run in enumerate(runs)}
            for future in as_completed(futures):
                finished, summary, records, wall = future.result()
                done[futures[future]] = (finished, summary, records)
                if progress is not None:
                    progress(finished, wall)
    return [done[index] for index in range(len(runs))]


def cells(results: Sequence[tuple[Run, dict[str, Any], list[JobRecord]]]) -> tuple[list[Cell], list[Cell]]:
    """The report's rows: reservation cells, and fairness cells with DVR/DSR against `userfair`."""
    reservations = [Cell(run.study, run.label, run.agent or "", run.policy or "", run.slack, summary)
                    for run, summary, _ in results if run.study == "reservations"]
    baselines = {run.label: records for run, _, records in results
                 if run.study == "fairness" and run.policy == USER_FAIR}
    fairness = [Cell(run.study, run.label, "", run.policy or "", None, summary,
                     fairness_against(records, baselines[run.label]) if run.label in baselines else {})
                for run, summary, records in results if run.study == "fairness"]
    return reservations, fairness


def evaluate(folder: Path, grid: Grid | None = None, workers: int | None = None,
             progress: Callable[[Run, float], None] | None = None) -> Path:
    """Run the grid and write the report into `folder`; returns the report's path."""
    chosen = grid or Grid()
    check_grid(chosen)
    results = run_grid(chosen, workers, progress)
    reservations, fairness = cells(results)
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    preamble = _preamble(chosen, when)
    return write_report(folder, reservations, fairness, preamble, PUBLISHED)


def _preamble(grid: Grid, when: str) -> str:
    scenarios = ", ".join(f"`{_label(p)}`" for p in (*grid.reservations, *grid.fairness))
    return f"""# Evaluation: does reservation planning pay off?

Generated by `rayon evaluate` on {when} (Python {sys.version.split()[0]}); every figure comes from
the simulator (`rayon simulate`) on the scenarios in `examples/scenarios/` ({scenarios}), with
each scenario's own seed. Reproduce one row with, for example,
`rayon simulate examples/scenarios/synthetic_mix.yaml --agent gree-l --json`.

How to read it: *SLA attainment* is the share of production jobs finished by their deadline;
*slack* is the mean deadline slack factor f (deadline = submit + f × declared duration, f drawn
log-normally around the mean); *BE* is best-effort work; *utilisation* averages vcores and
memory. DVR (deadline violation ratio) is the share of jobs finishing later than they do under
the user-fair baseline (`userfair`: one queue per user, equal shares, fair within a user), and
DSR (deadline slack ratio) their mean lateness relative to their baseline response time — our
reading of the UWFQ paper's fairness measures. Definitions: `follower/sim/metrics.py`.
"""
