"""`rayon evaluate`: run the comparison grids of the simulator and write the report.

Three studies (issues #8 and #19):
- Reservations: the baselines (`none`, `priority`, `capacity`, and the oracles `static`, `static-half`:
  follower/sim/baselines.py), `gree`, `gree-l` and `milp`, and YARN's own agents where a decision source is
  given (`peers`, replayed: follower/sim/peers.py), per scenario and mean slack factor — SLA attainment,
  best-effort response, utilisation, preemptions, lost work, acceptance.
- Fairness: `fifo`, `fair`, `userfair` (one queue per user, equal shares) and `uwfq` per
  scenario — mean response, the 0–80/80–95/95–100 % size buckets, slowdown, and DVR/DSR
  against the `userfair` run of the same workload.
- UWFQ on the task-level Spark model (follower/sim/spark), against the paper's figures.

Runs are independent, so they go to Dask's `distributed` (`--workers` processes of a local cluster, or a
user's cluster with `--scheduler`: follower/sim/gridrun.py); results come back in grid order whatever the
finishing order, so the report is the same for the same grid and seeds.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from follower.sim.baselines import is_baseline
from follower.sim.cell import Cell
from follower.sim.checkpoint import PARTIAL, Checkpoint
from follower.sim.engine import Simulation, simulate
from follower.sim.grid import EXAMPLES, MILP, REFERENCE_AGENT, REPOSITORY, RESULTS, Grid, Run, label, shown
from follower.sim.gridrun import grid_client, run_each
from follower.sim.metrics import JobRecord, Result, fairness_against
from follower.sim.peers import PEER, PEER_AGENTS, DecisionSource, peer_refusal, replay_agent
from follower.sim.planning import MILP_TIME_LIMIT, simulation_agent
from follower.sim.preamble import PUBLISHED, Timing, preamble
from follower.sim.report import PlanShapes, write_report
from follower.sim.scenario import Scenario, load_scenario
from follower.sim.setup import SIMULATION_POLICIES, USER_FAIR
from follower.sim.spark import table as spark_table
from rdl.errors import RayonError, RDLErrors


@dataclass(frozen=True)
class Outcome:
    """One finished run: the run (agent, policy and seed filled in), its figures, its job records, its wall time."""

    run: Run
    summary: dict[str, Any]
    records: list[JobRecord]
    wall_s: float


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
    wanted.update({path: () for path in (*grid.fairness, *grid.load_scenarios) if path not in wanted})
    problems = [problem for path, slacks in wanted.items() if (problem := scenario_problem(path, slacks))]
    if problems:
        raise RayonError(f"{len(problems)} of {len(wanted)} scenario(s) do not load:\n" + "\n".join(problems)
                         ).then("nothing was simulated")


def plan_peers(grid: Grid) -> Grid:
    """The grid with each peer agent left out of the reservation scenarios whose cluster it cannot plan at all
    (YARN's rows on a cluster with GPUs, say), and why: those runs would fail, and the report says so instead."""
    left_out = []
    for path in grid.reservations if grid.peers else ():
        scenario = load_scenario(path)
        cluster = scenario.plan_cluster(scenario.load_workload())
        left_out += [(label(path), agent, why) for agent in grid.peers if (why := peer_refusal(agent, cluster))]
    return replace(grid, peers_left_out=tuple(left_out))


def run_one(run: Run, milp_time_limit: float = MILP_TIME_LIMIT, source: DecisionSource | None = None) -> Outcome:
    """Simulate one grid point at its seed, the MILP (if it is the agent) within `milp_time_limit` per decision,
    another system's agent (PEER_AGENTS) by replaying what `source` decides for the run's stream."""
    scenario = load_scenario(run.path)
    if run.slack is not None:
        scenario = with_slack(scenario, run.slack)
    peer = run.agent in PEER_AGENTS
    chosen = scenario.with_options(agent=None if peer else run.agent, policy=run.policy,
                                   seed=scenario.seed + run.replicate, policies=SIMULATION_POLICIES, load=run.load)
    if peer:
        if source is None:
            raise RayonError(f"`{run.agent}` is another system's agent: its decisions need a source", code=PEER,
                             hint="python benchmarks/peers/evaluate.py runs the grid with YARN's agents")
        began = time.perf_counter()
        workload = chosen.load_workload()
        replayed = replay_agent(source, str(run.agent), chosen, workload)
        deciding = time.perf_counter() - began  # the other system's share of the run's time
        result: Result = simulate(chosen, workload=workload, planning_agent=replayed)
        return Outcome(replace(run, policy=result.policy, seed=result.seed), result.summary, result.records,
                       result.wall_s + deciding)
    planning = not is_baseline(chosen.agent)
    agent = simulation_agent(chosen.agent, milp_time_limit) if planning else None
    result = Simulation(chosen, agent=agent).run()
    return Outcome(replace(run, agent=result.agent, policy=result.policy, seed=result.seed), result.summary,
                   result.records, result.wall_s)


def pool_size(workers: int | None) -> int:
    """Simulations at once: `workers`, or the CPU count."""
    return workers or os.cpu_count() or 1


def run_order(runs: Sequence[Run]) -> list[int]:
    """Indices of `runs` in the order to start them: the MILP's first, so that no long run is left to run alone at
    the end (the longest-processing-time-first rule); and the first seed of every cell before the second, so that
    the progress learns early what each kind of run costs."""
    return sorted(range(len(runs)), key=lambda index: (runs[index].agent != MILP, runs[index].replicate, index))


def run_grid(grid: Grid, workers: int | None = None, progress: Callable[[Outcome], None] | None = None,
             source: DecisionSource | None = None, checkpoint: Checkpoint | None = None,
             scheduler: str | None = None) -> list[Outcome]:
    """Every run of the grid, in grid order: here when `workers` is 1, otherwise on Dask (a local cluster of
    `workers` processes, or the cluster whose scheduler is at `scheduler`; follower.sim.gridrun). `source` decides
    the peers' runs (it must pickle). With a `checkpoint`, the runs it keeps are taken from it, not run again (nor
    told to `progress`), and each run is kept there as it finishes."""
    runs = grid.runs()
    count = pool_size(workers)
    done: dict[int, Outcome] = checkpoint.done(runs) if checkpoint is not None else {}
    missing = [index for index in run_order(runs) if index not in done]

    def finished(index: int, outcome: Outcome) -> None:
        if index in done:
            return  # taken once, whatever a lost worker did with it
        done[index] = outcome
        if checkpoint is not None:
            checkpoint.save(runs[index], outcome)
        if progress is not None:
            progress(outcome)

    if count <= 1 and scheduler is None:
        for index in missing:
            finished(index, run_one(runs[index], grid.milp_time_limit, source))
    else:
        with grid_client(scheduler, count) as client:
            run_each(client, run_one, [runs[index] for index in missing], (grid.milp_time_limit, source),
                     lambda position, outcome: finished(missing[position], outcome))
    return [done[index] for index in range(len(runs))]


def fairness_by_run(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """DVR/DSR of each fairness run against the `userfair` run of the same scenario and seed ({} where none)."""
    baselines = {(o.run.label, o.run.replicate): o.records for o in outcomes
                 if o.run.study == "fairness" and o.run.policy == USER_FAIR}
    found = []
    for outcome in outcomes:
        baseline = baselines.get((outcome.run.label, outcome.run.replicate))
        fair = outcome.run.study == "fairness" and baseline is not None
        found.append(fairness_against(outcome.records, baseline) if fair and baseline is not None else {})
    return found


def run_records(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Every run as `results.json` keeps it: what ran, at which seed, how long, its figures and its DVR/DSR."""
    return [{"study": o.run.study, "scenario": o.run.label, "path": shown(o.run.path), "agent": o.run.agent,
             "policy": o.run.policy,
             "slack": o.run.slack, "load": o.run.load, "seed": o.run.seed, "wall_s": o.wall_s, "summary": o.summary,
             "fairness": fairness}
            for o, fairness in zip(outcomes, fairness_by_run(outcomes), strict=True)]


def cells(outcomes: Sequence[Outcome]) -> tuple[list[Cell], list[Cell]]:
    """The report's rows, one per cell with every seed's figures: reservation cells, and fairness cells with
    DVR/DSR against `userfair`."""
    return cells_of(run_records(outcomes))


def cells_of(runs: Sequence[dict[str, Any]]) -> tuple[list[Cell], list[Cell]]:
    """The cells of runs as `run_records` gives them (a KeyError for a record without them): reservation cells,
    and fairness cells, each with its runs' seeds in grid order."""
    made = _grouped(runs)
    return [c for c in made if c.study == "reservations"], [c for c in made if c.study == "fairness"]


def load_cells_of(runs: Sequence[dict[str, Any]]) -> list[Cell]:
    """The load study's cells (one per scenario, agent and load), each with its runs' seeds in grid order."""
    return [c for c in _grouped(runs) if c.study == "load"]


def _grouped(runs: Sequence[dict[str, Any]]) -> list[Cell]:
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for run in runs:
        grouped.setdefault((run["study"], run["scenario"], run["agent"] or "", run["policy"] or "", run["slack"],
                            run.get("load")), []).append(run)
    return [Cell(study, scenario, agent, policy, slack, tuple(r["seed"] or 0 for r in members),
                 tuple(r["summary"] for r in members), tuple(r.get("fairness") or {} for r in members), load)
            for (study, scenario, agent, policy, slack, load), members in grouped.items()]


def results_document(grid: Grid, outcomes: Sequence[Outcome], timing: Timing, spark: SparkRuns | None = None,
                     shapes: PlanShapes | None = None) -> dict[str, Any]:
    """The machine-readable results (`results.json`): the grid, how long it took, every run at every seed, and what
    the report simulates besides (the UWFQ section's task-level runs, the plan-shape figure's two runs), so that
    `render` simulates nothing."""
    return {
        "seeds": grid.seeds, "seeds_for": dict(grid.seeds_for), "milp_time_limit_s": grid.milp_time_limit,
        **asdict(timing),
        "peers_left_out": [{"scenario": label, "agent": agent, "why": why}
                           for label, agent, why in grid.peers_left_out],
        "runs": run_records(outcomes),
        **({} if spark is None else {"spark": spark.to_json()}),
        "plan_shapes": None if shapes is None else {"planned": [[agent, [list(lease) for lease in leases]]
                                                                for agent, leases in shapes.planned],
                                                    "title": shapes.title, "command": shapes.command},
    }


def shapes_of(data: dict[str, Any]) -> PlanShapes:
    """The plan-shape figure's runs as `results_document` wrote them."""
    return PlanShapes(tuple((str(agent), [(float(a), float(b), float(c)) for a, b, c in leases])
                            for agent, leases in data["planned"]), str(data["title"]), str(data["command"]))


@dataclass(frozen=True)
class SparkRuns:
    """The UWFQ section's runs on the task-level Spark model: its scenario files, seeds, cells and wall time."""

    files: tuple[str, ...]
    seeds: int
    cells: tuple[spark_table.Cell, ...]
    wall_s: float = 0.0

    @classmethod
    def run(cls, files: Sequence[str], seeds: int) -> SparkRuns:
        """Every scenario × policy × partitioning at seeds 1..`seeds`."""
        began = time.perf_counter()
        cells = spark_table.run_grid(files, seeds=tuple(range(1, seeds + 1)))
        return cls(tuple(files), seeds, tuple(cells), time.perf_counter() - began)

    @classmethod
    def of(cls, data: dict[str, Any]) -> SparkRuns:
        """The runs as `to_json` wrote them."""
        return cls(tuple(str(f) for f in data["files"]), int(data["seeds"]),
                   tuple(spark_table.Cell(**cell) for cell in data["cells"]), float(data.get("wall_s", 0.0)))

    def to_json(self) -> dict[str, Any]:
        return {"files": list(self.files), "seeds": self.seeds, "wall_s": round(self.wall_s, 3),
                "cells": [asdict(cell) for cell in self.cells]}

    def section(self) -> str:
        """The report's UWFQ section, and the command that gives its table."""
        chosen = "" if self.files == Grid.spark else " " + " ".join(self.files)
        return spark_table.markdown(list(self.cells), f"rayon spark{chosen} --seeds {self.seeds} --markdown")


def evaluate(folder: Path, grid: Grid | None = None, workers: int | None = None,
             progress: Callable[[Outcome], None] | None = None, source: DecisionSource | None = None,
             peers_note: str = "", scheduler: str | None = None) -> Path:
    """Run the grid and write `results.json` (every seed's figures) and the report from it (`render`) into
    `folder`; returns the report's path. `source` decides the grid's peer agents; `peers_note` says why some were
    left out. Each run is kept in `folder`/partial as it finishes: run again after a stop, the grid simulates
    only the runs missing (`follower.sim.checkpoint`)."""
    chosen = grid or Grid()
    check_grid(chosen)
    chosen = plan_peers(chosen)
    checkpoint = grid_checkpoint(folder, chosen)
    kept = checkpoint.kept(chosen.runs())
    began = time.perf_counter()
    outcomes = run_grid(chosen, workers, progress, source, checkpoint, scheduler)
    # The wall time counts the runs kept from an earlier attempt at what they took then, shared among the workers.
    earlier = sum(outcome.wall_s for index, outcome in enumerate(outcomes) if index in kept)
    wall = time.perf_counter() - began + earlier / pool_size(workers)
    timing = Timing(wall, pool_size(workers), os.cpu_count() or 1, os.getloadavg()[0])
    spark = SparkRuns.run(chosen.spark, chosen.seeds) if chosen.spark else None
    shapes = plan_shapes(chosen.reservations, chosen.slacks)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULTS).write_text(json.dumps(results_document(chosen, outcomes, timing, spark, shapes), indent=1)
                                  + "\n")
    checkpoint.clear()
    return render(folder, chosen.spark, peers_note)


def grid_checkpoint(folder: Path, grid: Grid) -> Checkpoint:
    """Where the grid's finished runs are kept until its results are written (`folder`/partial)."""
    return Checkpoint(folder / PARTIAL, grid.milp_time_limit)


def render(folder: Path, spark: Sequence[str] = Grid.spark, peers_note: str = "") -> Path:
    """Write the report in `folder` from its `results.json` (every run's figures, as `evaluate` left them, the UWFQ
    section's task-level runs and the plan-shape figure's too), simulating nothing; returns the report's path.
    `spark` empty leaves the UWFQ section out; a results.json written before those runs were kept has them
    simulated again (`spark`: the scenarios). `evaluate` ends here; `rayon evaluate --render` starts here, for a
    change in how the report is written without the hours of its grid."""
    try:
        document = json.loads((folder / RESULTS).read_text())
        reservations, fairness = cells_of(document["runs"])
        loaded = load_cells_of(document["runs"])
        left_out = tuple((str(left["scenario"]), str(left["agent"]), str(left["why"]))
                         for left in document.get("peers_left_out", ()))
        agents = tuple(dict.fromkeys([*(c.agent for c in reservations), *(agent for _, agent, _ in left_out)]))
        paths = {run["scenario"]: str(REPOSITORY / run["path"]) if not Path(run["path"]).is_absolute() else run["path"]
                 for run in document["runs"] if run.get("path")}
        grid = Grid(reservations=tuple(dict.fromkeys(paths.get(c.scenario, c.scenario) for c in reservations)),
                    agents=tuple(a for a in agents if a not in PEER_AGENTS),
                    slacks=tuple(dict.fromkeys(c.slack for c in reservations if c.slack is not None)),
                    fairness=tuple(dict.fromkeys(c.scenario for c in fairness)),
                    policies=tuple(dict.fromkeys(c.policy for c in fairness)), seeds=int(document["seeds"]),
                    seeds_for=tuple((str(name), int(count)) for name, count in document.get("seeds_for", {}).items()),
                    milp_time_limit=float(document["milp_time_limit_s"]),
                    peers=tuple(a for a in agents if a in PEER_AGENTS), spark=tuple(spark), peers_left_out=left_out,
                    load_scenarios=tuple(dict.fromkeys(c.scenario for c in loaded)),
                    loads=tuple(sorted({c.load for c in loaded if c.load is not None})),
                    load_agents=tuple(dict.fromkeys(c.agent for c in loaded)))
        timing = Timing(float(document["wall_s"]), int(document["workers"]), int(document["cores"]),
                        float(document["load"]))
        kept = SparkRuns.of(document["spark"]) if document.get("spark") else None
        shown_shapes = shapes_of(document["plan_shapes"]) if document.get("plan_shapes") else None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RayonError(f"cannot read the results of a grid: {error}", place=str(folder / RESULTS),
                         hint="render a folder `rayon evaluate` wrote (its results.json)") from error
    spark_section = "" if not grid.spark else (kept or SparkRuns.run(grid.spark, grid.seeds)).section()
    shapes = shown_shapes if "plan_shapes" in document else plan_shapes(grid.reservations, grid.slacks)
    when = datetime.fromtimestamp((folder / RESULTS).stat().st_mtime, UTC).strftime("%Y-%m-%d")
    intro = preamble(grid, when, timing, [*reservations, *fairness], peers_note)
    return write_report(folder, reservations, fairness, intro, "\n".join(filter(None, [spark_section, PUBLISHED])),
                        loaded, shapes)


def plan_shapes(reservations: Sequence[str], slacks: Sequence[float]) -> PlanShapes | None:
    """The leases GREE and GREE-L plan on one run of the grid's first reservation scenario with malleable jobs
    (where the two can differ; else the first), at the first slack and the scenario's own seed: two short
    simulations, for the plan-shape figure; None when no reservation scenario of the grid loads."""
    chosen: tuple[str, Scenario] | None = None
    for name in reservations:
        path = name if Path(name).exists() else str(EXAMPLES / f"{name}.yaml")
        try:
            scenario = with_slack(load_scenario(path), slacks[0]) if slacks else load_scenario(path)
            malleable = any(job.malleable for job in scenario.load_workload().jobs)
        except (RDLErrors, RayonError, OSError, ValueError):
            continue
        if chosen is None or malleable:
            chosen = (path, scenario)
        if malleable:
            break
    if chosen is None:
        return None
    path, scenario = chosen
    planned = []
    for agent in ("gree", REFERENCE_AGENT):
        result = Simulation(scenario.with_options(agent=agent)).run()
        planned.append((agent, [lease for record in result.records for lease in record.planned]))
    slack = f", mean slack factor {slacks[0]:g}" if slacks else ""
    return PlanShapes(tuple(planned), f"{label(path)}, seed {scenario.seed}",
                      f"`{label(path)}` at seed {scenario.seed}{slack}, agents gree and {REFERENCE_AGENT}")



