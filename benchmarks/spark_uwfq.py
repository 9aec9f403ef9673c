"""The UWFQ comparison on the task-level Spark model, every scenario × policy × partitioning, with timings.

    python benchmarks/spark_uwfq.py [--seeds N] [--markdown] [SCENARIO ...]

Prints the table `rayon spark` prints (small-job and all-job mean responses per policy, UWFQ's
reductions beside the paper's "up to 74 %" and the tool's measured figures), then, per scenario,
the tasks one run schedules, the scheduling rounds, and the wall time of one run per policy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from follower.sim.spark.engine import simulate  # noqa: E402  (the project root is put on the path first)
from follower.sim.spark.policies import POLICIES  # noqa: E402
from follower.sim.spark.scenario import load_scenario  # noqa: E402
from follower.sim.spark.table import markdown, run_grid, scenario_files, text_table  # noqa: E402
from rdl.table import format_table  # noqa: E402


def timings(files: list[Path]) -> str:
    """Per scenario and partitioning: tasks, rounds and wall seconds of one run of each policy."""
    rows = []
    for file in files:
        scenario = load_scenario(file)
        for partitioning in (True, False):
            jobs = scenario.jobs(partitioning, 1)
            cells = [scenario.name, "runtime" if partitioning else "input", sum(len(s.tasks) for j in jobs
                                                                                 for s in j.stages)]
            for name in POLICIES.names:
                start = time.perf_counter()
                result = simulate(jobs, POLICIES.get(name)(scenario.cluster.slots), scenario.cluster)
                cells.append(f"{time.perf_counter() - start:.2f} s ({result.rounds} rounds)")
            rows.append(cells)
    return format_table(["scenario", "tasks cut by", "tasks", *POLICIES.names], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", help="scenario files or folders (default: examples/spark)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per cell, seeds 1..N (default 3)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    files = scenario_files(args.scenarios)
    start = time.perf_counter()
    cells = run_grid(files, seeds=tuple(range(1, args.seeds + 1)))
    print(markdown(cells, f"python benchmarks/spark_uwfq.py --seeds {args.seeds}") if args.markdown
          else text_table(cells))
    print(f"\n{len(cells)} cells × {args.seeds} seeds in {time.perf_counter() - start:.1f} s\n")
    print(timings(files))


if __name__ == "__main__":
    main()
