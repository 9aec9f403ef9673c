"""How fast the cluster simulator runs a real trace: events per second, wall time and peak memory.

    python benchmarks/simulate.py [--scenario examples/scenarios/ricc_week.yaml] [--agent A] [--policy P]
                                  [--profile N]

Default: one week of the RICC trace on its 1,024 nodes with the scenario's agent and policy
(target: under 120 s of wall time). Prints the scenario's size (jobs, containers, nodes), the
simulated and wall durations, the events handled per second, the peak resident memory, and the
headline figures of the run. `--profile N` prints the N most expensive functions (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from follower.sim.engine import simulate  # noqa: E402
from follower.sim.scenario import load_scenario  # noqa: E402  (the project root is put on the path first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default=str(ROOT / "examples" / "scenarios" / "ricc_week.yaml"))
    parser.add_argument("--agent", default=None)
    parser.add_argument("--policy", default=None)
    parser.add_argument("--profile", type=int, default=0, help="print the N most expensive functions")
    args = parser.parse_args()

    began = time.perf_counter()
    scenario = load_scenario(args.scenario)
    workload = scenario.load_workload()
    loaded = time.perf_counter() - began
    nodes = sum(group.count for group in scenario.node_groups(workload))
    containers = sum(job.containers for job in workload.jobs)
    print(f"scenario {scenario.name}: {len(workload.jobs)} jobs ({len(workload.production)} production), "
          f"{containers} containers, {nodes} nodes; loaded in {loaded:.1f} s")

    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    result = simulate(scenario, agent=args.agent, policy=args.policy, workload=workload)
    if profiler is not None:
        profiler.disable()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = result.summary
    print(f"agent {result.agent}, policy {result.policy}, seed {result.seed}")
    print(f"simulated {result.simulated_s / 86400:.2f} days in {result.wall_s:.1f} s wall "
          f"({result.events} events, {result.events / result.wall_s:,.0f} events/s); peak memory {peak_mib:,.0f} MiB")
    production, best = summary["production"], summary["best_effort"]
    sla = production["sla_attainment"]
    print(f"production: {production['jobs']} jobs, {production['accepted']} accepted, "
          f"SLA attainment {'–' if sla is None else f'{sla:.1%}'}; best effort: {best['completed']}/{best['jobs']} "
          f"done, mean response {best['mean_response_s'] or 0:.0f} s; utilisation {summary['utilization']:.1%}; "
          f"{summary['preemptions']} preemptions")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
