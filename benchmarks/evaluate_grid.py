"""How long the full `rayon evaluate` grid takes, estimated from the per-run wall times of smaller grids.

    python benchmarks/evaluate_grid.py RESULTS.json [RESULTS.json ...] [--seeds 5] [--workers 2]
        [--milp-time-limit 2] [--assume ricc_week:milp=363]

Reads the `results.json` that `rayon evaluate` writes beside its report (every run with its wall
time), prices each cell of the default grid at the mean wall time measured for its scenario and
agent or policy (any slack, any seed), or at an `--assume`d figure, and prints the cells, the
work in run-seconds and the estimated wall time on `--workers` cores: work ÷ workers, or the
longest run if that is longer. Cells with neither a measurement nor an assumption are listed
as unknown, and the total counts them as zero.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from follower.sim.grid import DEFAULT_SEEDS, MILP, Grid
from follower.sim.gridclock import duration
from follower.sim.planning import MILP_TIME_LIMIT


def measured(paths: list[str], milp_time_limit: float) -> dict[tuple[str, str], list[float]]:
    """Wall times per (scenario, agent or policy) in the given results files (the MILP's at this time limit only)."""
    walls: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        document = json.loads(Path(path).read_text())
        for run in document["runs"]:
            option = run["agent"] if run["study"] == "reservations" else run["policy"]
            if option != MILP or document["milp_time_limit_s"] == milp_time_limit:
                walls[(run["scenario"], option)].append(run["wall_s"])
    return walls


def assumed(texts: list[str]) -> dict[tuple[str, str], float]:
    """`scenario:option=seconds` figures given on the command line."""
    found = {}
    for text in texts:
        key, seconds = text.split("=")
        scenario, option = key.split(":")
        found[(scenario, option)] = float(seconds)
    return found


def main() -> None:
    """Print the estimate."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="results.json files of earlier `rayon evaluate` runs")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--milp-time-limit", type=float, default=MILP_TIME_LIMIT, help="the MILP runs to go by")
    parser.add_argument("--assume", action="append", default=[], help="scenario:agent=seconds for a cell not run")
    args = parser.parse_args()
    walls, given = measured(args.results, args.milp_time_limit), assumed(args.assume)
    work = longest = 0.0
    unknown = []
    print(f"{'scenario':16} {'agent/policy @slack':20} {'runs':>5} {'s/run':>8}  source")
    for run in Grid(seeds=1).runs():
        option = run.option
        key = (run.label, option)
        if key in given:
            price, source = given[key], "assumed"
        elif walls.get(key):
            price, source = statistics.fmean(walls[key]), f"mean of {len(walls[key])} measured"
        else:
            unknown.append(f"{run.label} {option}")
            continue
        slack = "" if run.slack is None else f" @{run.slack:g}"
        print(f"{run.label:16} {option + slack:20} {args.seeds:>5} {price:>8.1f}  {source}")
        work += price * args.seeds
        longest = max(longest, price)
    wall = max(work / args.workers, longest)
    print(f"\nwork: {work:.0f} run-seconds; on {args.workers} cores: about {duration(wall)}")
    if unknown:
        print(f"not measured nor assumed (counted as 0): {', '.join(sorted(set(unknown)))}")


if __name__ == "__main__":
    main()
