"""The UWFQ comparison on the Spark model: every scenario × policy × partitioning, as rows and as Markdown.

Small jobs are those whose estimated work is at most the scenario's `small` quantile of it (the median
unless a scenario says otherwise). UWFQ's reduction is `1 − uwfq / other` on the small-job mean
response, beside the paper's headline ("up to 74 %" lower for small jobs) and, on the all-jobs mean,
beside what the paper's tool measured on Spark (`examples/spark/tool_results.csv`, from its
`results/tables/*_avg.csv`). Independent of `follower.sim.evaluate`.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from follower.sim.spark.engine import simulate
from follower.sim.spark.policies import POLICIES
from follower.sim.spark.scenario import Scenario, SparkScenarioError, load_scenario
from rdl.table import format_table

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "spark"
TOOL_RESULTS = EXAMPLES / "tool_results.csv"
PAPER_REDUCTION = 74.0  # % lower small-job mean response, "up to" (Kažemaks et al., arXiv 2510.15485)
# The paper's baseline is Spark's FAIR mode with no pool file: the tool's DEFAULT_FAIR, whose jobs share
# Spark's FIFO default pool. Its all-jobs figure is set beside ours against both `fair` and `fifo`.
ALL_JOBS_BASELINES = ("fair", "fifo")


@dataclass(frozen=True, slots=True)
class Cell:
    """One scenario × partitioning × policy, averaged over the seeds: small-job and all-job mean responses."""

    scenario: str
    partitioning: bool
    policy: str
    small: float
    overall: float
    small_jobs: int
    jobs: int


def scenario_files(paths: Iterable[str | Path] = ()) -> list[Path]:
    """The scenario files named, folders expanded to their `*.yaml`; the repository's examples when none."""
    given = [Path(p) for p in paths] or [EXAMPLES]
    files: list[Path] = []
    for path in given:
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    if not files:
        raise SparkScenarioError("no Spark scenario files (*.yaml) found; name scenario files or folders, for "
                                 "example the repository's examples/spark/", place=", ".join(map(str, given)))
    return files


def small_limit(estimates: Sequence[float], quantile: float) -> float:
    """The estimated work at the quantile: jobs with at most this much count as small."""
    return float(np.quantile(np.asarray(estimates), quantile, method="lower"))


def measure(scenario: Scenario, policy: str, partitioning: bool, seeds: Sequence[int]) -> Cell:
    """Run the scenario under the policy once per seed and average the mean responses."""
    small, overall, counts = [], [], (0, 0)
    for seed in seeds:
        jobs = scenario.jobs(partitioning, seed)
        result = simulate(jobs, POLICIES.get(policy)(scenario.cluster.slots), scenario.cluster)
        limit = small_limit([job.estimate for job in jobs], scenario.small)
        small.append(statistics.fmean(job.response for job in result.jobs if job.estimate <= limit))
        overall.append(statistics.fmean(job.response for job in result.jobs))
        counts = (sum(job.estimate <= limit for job in jobs), len(jobs))
    return Cell(scenario.name, partitioning, policy, statistics.fmean(small), statistics.fmean(overall), *counts)


def run_grid(files: Sequence[str | Path], policies: Sequence[str] = tuple(POLICIES.names),
             partitionings: Sequence[bool] = (True, False), seeds: Sequence[int] = (1,),
             progress: Callable[[str], None] | None = None) -> list[Cell]:
    """Every scenario file × partitioning × policy (every scenario and policy is checked before the first run)."""
    scenarios = [load_scenario(file) for file in files]
    names = [POLICIES.check(policy) for policy in policies]
    cells = []
    for scenario in scenarios:
        for partitioning in partitionings:
            for policy in names:
                if progress:
                    progress(f"{scenario.name} {'runtime' if partitioning else 'input'} {policy}")
                cells.append(measure(scenario, policy, partitioning, seeds))
    return cells


def reduction(uwfq: float, other: float) -> float:
    """How much lower UWFQ's mean is than the other policy's, in per cent (negative: higher)."""
    return 100.0 * (1.0 - uwfq / other) if other > 0 else 0.0


def tool_results(file: Path = TOOL_RESULTS) -> dict[tuple[str, str, str], float]:
    """The paper's tool's all-jobs mean response on Spark, by (scenario, `runtime`|`input`, its scheduler)."""
    if not file.exists():
        return {}
    with file.open(encoding="utf-8", newline="") as handle:
        return {(row["scenario"], row["partitioning"], row["scheduler"]): float(row["mean_response"])
                for row in csv.DictReader(handle)}


def rows(cells: Sequence[Cell], measured: dict[tuple[str, str, str], float] | None = None
         ) -> tuple[list[str], list[list[str]]]:
    """Headers and rows, per scenario × partitioning: each policy's `small / all` means, UWFQ's reductions."""
    measured = tool_results() if measured is None else measured
    policies = list(dict.fromkeys(cell.policy for cell in cells))
    others = [policy for policy in policies if policy != "uwfq"] if "uwfq" in policies else []
    headers = ["scenario", "tasks cut by", "jobs (small)", *(f"{p} small/all s" for p in policies),
               *(f"uwfq vs {p} small %" for p in others)]
    if "uwfq" in policies:
        headers.append("paper small %")
    headers += [f"uwfq vs {p} all %" for p in ALL_JOBS_BASELINES if "uwfq" in policies and p in policies]
    if "uwfq" in policies:
        headers.append("tool all %")
    groups: dict[tuple[str, bool], dict[str, Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.scenario, cell.partitioning), {})[cell.policy] = cell
    return headers, [_row(scenario, partitioning, by_policy, policies, others, measured)
                     for (scenario, partitioning), by_policy in groups.items()]


def _row(scenario: str, partitioning: bool, by_policy: dict[str, Cell], policies: list[str], others: list[str],
         measured: dict[tuple[str, str, str], float]) -> list[str]:
    cut = "runtime" if partitioning else "input"
    first = next(iter(by_policy.values()))
    row = [scenario, cut, f"{first.jobs} ({first.small_jobs})"]
    row += [f"{by_policy[p].small:.1f} / {by_policy[p].overall:.1f}" for p in policies]
    row += [f"{reduction(by_policy['uwfq'].small, by_policy[p].small):+.0f}" for p in others]
    if "uwfq" in by_policy:
        row.append(f"up to {PAPER_REDUCTION:.0f}")
    if "uwfq" in by_policy:
        row += [f"{reduction(by_policy['uwfq'].overall, by_policy[p].overall):+.0f}"
                for p in ALL_JOBS_BASELINES if p in by_policy]
        tool = [measured.get((scenario, cut, scheduler)) for scheduler in ("CUSTOM_USERCLUSTERFAIR", "DEFAULT_FAIR")]
        row.append(f"{reduction(tool[0], tool[1]):+.0f}" if tool[0] and tool[1] else "-")
    return row


def text_table(cells: Sequence[Cell]) -> str:
    """The comparison as a plain-text table for a terminal."""
    headers, table = rows(cells)
    return format_table(headers, table)


def markdown(cells: Sequence[Cell], command: str = "rayon spark") -> str:
    """The comparison as a Markdown report section, with the command that produced it."""
    headers, table = rows(cells)
    lines = ["## UWFQ on the task-level Spark model", "",
             f"Produced by `{command}`. A policy's cell is the mean response in seconds of the small jobs "
             "(estimated work at most the scenario's median) / of all jobs. `uwfq vs X small` is how much "
             "lower UWFQ's small-job mean is than X's; the paper reports up to 74 % for small jobs. "
             "`uwfq vs fair all` and `uwfq vs fifo all` compare all-jobs means; `tool all` is UWFQ against "
             "`DEFAULT_FAIR` (Spark's FAIR mode with no pool file, so one FIFO default pool) on all jobs, as "
             "the paper's tool measured it on Spark (its `results/tables`).", "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return "\n".join(lines) + "\n"
