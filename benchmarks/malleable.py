"""GREE against GREE-L on malleable production jobs: preemptions, acceptance, SLA attainment, over several seeds.

    python benchmarks/malleable.py [--scenario examples/scenarios/synthetic_malleable.yaml] [--seeds 42 1 2 ...]
                                   [--max-policy plan|strict|unlimited] [--jobs N] [--rate R] [--production P]

For each seed and agent it prints the headline figures of the run, and two figures that say when
the agent put the guarantees: the mean delay from a production job's submission to its first lease,
and how many accepted jobs had finished before their first lease began (running on idle capacity
lent to their queue), so that their reservation never claimed anything back. `--max-policy` runs
the scenario with another follower max policy (`strict`: a reservation runs inside its leases only);
`--jobs`, `--rate` and `--production` override those keys of a synthetic workload (a busier cluster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from follower.sim.engine import Simulation  # noqa: E402
from follower.sim.metrics import Result  # noqa: E402
from follower.sim.scenario import Scenario, Section, load_scenario  # noqa: E402  (the project root is put first)

AGENTS = ("gree", "gree-l")
COLUMNS = ("seed", "agent", "accepted", "SLA", "preempted", "BE resp (s)", "to lease (s)", "done before lease")


def run(scenario: Scenario) -> tuple[Result, float, int]:
    """The run's result, the mean delay to accepted jobs' first lease, and how many ended before it."""
    simulation = Simulation(scenario)
    result = simulation.run()
    plan = simulation.planner.plan
    step = plan.clock.step.total_seconds() if hasattr(plan.clock.step, "total_seconds") else float(plan.clock.step)
    offset = (plan.clock.origin - scenario.start).total_seconds()
    delays, done_before = [], 0
    for record in result.records:
        accepted = plan.accepted.get(record.job_id)
        if accepted is None or not accepted.allocations:
            continue
        first = offset + min(allocation.start for allocation in accepted.allocations) * step
        delays.append(first - record.submit)
        done_before += record.finish is not None and record.finish <= first
    return result, statistics.fmean(delays) if delays else 0.0, done_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default=str(ROOT / "examples" / "scenarios" / "synthetic_malleable.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2, 3, 4, 5, 6, 7])
    parser.add_argument("--max-policy", default=None, help="the follower's max policy (default: the scenario's)")
    parser.add_argument("--jobs", type=int, default=None, help="synthetic workloads: how many jobs")
    parser.add_argument("--rate", type=float, default=None, help="synthetic workloads: arrivals per hour")
    parser.add_argument("--production", type=float, default=None, help="synthetic workloads: production share")
    args = parser.parse_args()
    base = load_scenario(args.scenario)
    overrides = {key: getattr(args, key) for key in ("jobs", "rate", "production") if getattr(args, key) is not None}
    if overrides:
        base = replace(base, workload=replace(base.workload, params=replace(base.workload.params, **overrides)))
    if args.max_policy:
        follower = {**base.follower.data, "max_policy": args.max_policy}
        base = replace(base, follower=Section(follower, None, base.follower.file))
    print(" | ".join(COLUMNS))
    totals: dict[str, list[tuple[int, int, float]]] = {agent: [] for agent in AGENTS}
    for seed in args.seeds:
        for agent in AGENTS:
            result, delay, done_before = run(base.with_options(agent=agent, seed=seed))
            summary = result.summary
            production, best_effort = summary["production"], summary["best_effort"]
            totals[agent].append((summary["preemptions"], production["accepted"], production["sla_attainment"]))
            print(f"{seed} | {agent} | {production['accepted']}/{production['jobs']} | "
                  f"{production['sla_attainment']:.1%} | {summary['preemptions']} | "
                  f"{best_effort['mean_response_s']:.0f} | {delay:.0f} | {done_before}")
    for agent, rows in totals.items():
        preempted, accepted, sla = zip(*rows, strict=True)
        print(f"{agent}: preemptions {sum(preempted)} in all, accepted {sum(accepted)} in all, "
              f"mean SLA attainment {statistics.fmean(sla):.1%}")
    fewer = sum(g[0] > gl[0] for g, gl in zip(totals["gree"], totals["gree-l"], strict=True))
    print(f"seeds where gree-l preempted less than gree: {fewer} of {len(args.seeds)}")


if __name__ == "__main__":
    main()
