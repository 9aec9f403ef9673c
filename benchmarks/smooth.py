"""Smoothing the MILP's plans: one model for the whole batch against one reservation at a time.

    python benchmarks/smooth.py [--sizes 50x96,200x288] [--accept-limit 60] [--smooth-limit 30] [--seed 3]

For each size it decides the batch of `benchmarks/milp.py` with the `milp` agent without
smoothing (--accept-limit seconds), then smooths the accepted reservations with the
acceptances fixed, within --smooth-limit seconds each way:
- `whole`: one model of every accepted reservation minimising the total allocation
  changes (what the agent did before), warm-started from the plan;
- `local`: `planner.agents.milp.smooth`, one reservation at a time with the rest fixed.
It prints allocation changes (bundles started or stopped) before and after, the time,
and the solver status or passes, and checks that every plan keeps its value.
"""

from __future__ import annotations

import argparse
import os
import time

import pulp
from milp import START, batch, cluster_text

from planner.agents.milp.agent import DEFAULT_GAP, MilpAgent
from planner.agents.milp.model import build, fixed_item, read_back, smoothness, warm_start
from planner.agents.milp.smooth import changes, smooth
from planner.agents.milp.solvers import get_backend
from planner.core.plan import Accepted, Plan
from rdl import parse_cluster


def whole(plan: Plan, seconds: float) -> tuple[int | None, str, float]:
    """Every accepted reservation in one smoothing model; the changes it reaches, its status and its time."""
    started = time.perf_counter()
    kept = {name: plan.remove(name) for name in list(plan.accepted)}
    items = [fixed_item(plan, accepted) for accepted in kept.values()]
    model = build(items, plan.free(), plan.capacity, 0.0)
    model.problem.setObjective(smoothness(model))
    model.problem.sense = pulp.LpMinimize
    warm_start(model, {name: a.allocations for name, a in kept.items()})
    result = get_backend("highs")(model.problem, max(0.5, seconds - (time.perf_counter() - started)), DEFAULT_GAP,
                                  True)
    placed = read_back(model, set(kept)) if result.has_solution else None
    for name, accepted in kept.items():
        plan.add(Accepted(accepted.reservation, accepted.submitted, placed[name] if placed else accepted.allocations))
    after = sum(changes(allocations) for allocations in placed.values()) if placed else None
    return after, result.status, time.perf_counter() - started


def run(count: int, steps: int, accept_limit: float, smooth_limit: float, seed: int, groups: list[int]) -> None:
    cluster = parse_cluster(cluster_text(steps), "benchmark-cluster.yaml")
    reservations = batch(count, steps, seed)
    plan = Plan(cluster)
    result = MilpAgent(time_limit=accept_limit, smooth=False).decide(plan, [(r, START) for r in reservations])
    value = result.report.value
    before = sum(changes(a.allocations) for a in plan.accepted.values())
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n== N={count} T={steps}: {len(plan.accepted)} accepted, value {value:g}, {before} changes; load {load}",
          flush=True)
    trial = plan.copy()
    after, status, seconds = whole(trial, smooth_limit)
    kept = sum(a.reservation.value for a in trial.accepted.values())
    print(f"  whole  changes {before} -> {after if after is not None else 'no plan'}  {seconds:6.1f} s  "
          f"status {status}; value kept {kept:g}", flush=True)
    for group in groups:
        trial = plan.copy()
        report = smooth(trial, time_limit=smooth_limit, group=group)
        kept = sum(a.reservation.value for a in trial.accepted.values())
        share = 1 - report.changes_after / report.changes_before if report.changes_before else 0.0
        print(f"  local (groups up to {group})  changes {report.changes_before} -> {report.changes_after} "
              f"({share:.1%} fewer)  "
              f"{report.seconds:6.1f} s  {report.passes} passes, {report.solved} models, {len(report.moved)} moved, "
              f"{'converged' if report.finished else 'time up'}; value kept {kept:g}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50x96,200x288", help="NxT pairs, comma-separated")
    parser.add_argument("--accept-limit", type=float, default=60.0)
    parser.add_argument("--smooth-limit", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--groups", default="1,4", help="reservations re-placed together (local), comma-separated")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        count, steps = (int(x) for x in size.split("x"))
        run(count, steps, args.accept_limit, args.smooth_limit, args.seed, [int(g) for g in args.groups.split(",")])


if __name__ == "__main__":
    main()
