"""The MILP agent against the greedy agents on seeded random batches, demand about 1.3x capacity.

    python benchmarks/milp.py [--sizes 50x96,200x288] [--backends highs] [--approaches plain,coarse]
                              [--time-limit 60] [--bound-limit 300] [--seed 3] [--days 1]

For each size (N reservations x T steps a day, over --days days) it prints the LP-relaxation bound of
accepted value (or `missing` when its LP is not solved within --bound-limit) and the
volume bound (`planner.agents.milp.bound`; shares are of the tighter of the two), GREE and
GREE-L submitting one by one (with their plans' allocation changes), and per backend and
approach: the greedy start, build and total time, the final plan's allocation changes, the
slot length, model size, solver status, accepted value and its share of the bound, whose
plan was kept, the smoothing status and the allocation changes it removed, and the agent's
own value bound and gap. Approaches:
- `plain`: the model at the plan step, then smoothing (`planner.agents.milp.smooth`) in the time left;
- `coarse`: slots chosen from the model's size and the limit, the greedy repair, smoothing;
- `coarse:K`: slots of K plan steps;
- a `-nosmooth` suffix on any of them skips the smoothing and gives acceptance all the time.
Solver versions and the machine's load average are printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version

from planner.agents.greedy.agent import GreedyAgent
from planner.agents.milp.agent import MilpAgent, batch_items
from planner.agents.milp.bound import lp_bound, volume_bound
from planner.agents.milp.smooth import changes
from planner.core.plan import Accepted, Plan
from rdl import parse_cluster, parse_text
from rdl.tree import Reservation

START = datetime(2026, 11, 23, tzinfo=UTC)
CAPACITY = 100  # vcores; memory 4 GiB per vcore


def cluster_text(steps: int, days: int = 1) -> str:
    """`days` days of `steps` steps each, 100 vcores."""
    step_minutes = 1440 // steps
    return (f"start: 2026-11-23T00:00:00Z\nstep: {step_minutes}m\nhorizon: {days}d\n"
            f"capacity: {{memory: {CAPACITY * 4}GiB, vcores: {CAPACITY}}}\n")


def batch(count: int, steps: int, seed: int, days: int = 1) -> list[Reservation]:
    """`count` reservations over `days` days, about 1.3x the plan's vcore-time in total."""
    rng = random.Random(seed)
    step = 1440 // steps
    minutes = 1440 * days
    budget = 1.3 * CAPACITY * minutes / count  # vcore-minutes per reservation on average
    texts = []
    for index in range(count):
        work = max(step, int(budget * rng.uniform(0.3, 1.7)))
        start = rng.randrange(0, minutes - 120, step)
        length = rng.choice([2, 4, 8, 12]) * 60
        end = min(minutes, start + length)
        arrival = (START + timedelta(minutes=start)).strftime("%Y-%m-%dT%H:%M:%SZ")
        deadline = (START + timedelta(minutes=end)).strftime("%Y-%m-%dT%H:%M:%SZ")
        lease = step * rng.choice([1, 2, 4])
        shape = rng.random()
        if shape < 0.5:
            body = f"atom(b={{memory: 4GiB, vcores: 1}}, h={rng.choice([10, 20, 40])}, l={lease}m, w={work}m)"
        elif shape < 0.8:
            half = max(step, work // 2)
            body = (f"order(atom(b={{memory: 4GiB, vcores: 1}}, h=20, l={lease}m, w={half}m), "
                    f"atom(b={{memory: 8GiB, vcores: 2}}, h=10, l={lease}m, w={max(step, half // 2)}m))")
        else:
            g = rng.choice([5, 10])
            body = (f"any(atom(b={{memory: 4GiB, vcores: 1}}, g={g}, h={g}, l={lease}m, "
                    f"w={max(lease * g, work // g * g)}m), atom(b={{memory: 4GiB, vcores: 1}}, h=40, w={work}m))")
        texts.append(f"reservation r{index} arrival={arrival} deadline={deadline} value={rng.randint(1, 10)} "
                     f"{{ {body} }}")
    return parse_text("\n".join(texts), "milp-batch.rdl")


def greedy_value(plan: Plan, reservations: list[Reservation], flat: bool) -> tuple[float, float, int]:
    """GREE or GREE-L submitting one by one: accepted value, seconds, and the plan's allocation changes."""
    agent = GreedyAgent("gree-l" if flat else "gree", flat=flat)
    started = time.perf_counter()
    value = 0.0
    for reservation in reservations:
        outcome = agent.place(plan, reservation, START)
        if outcome.allocations is not None:
            plan.add(Accepted(reservation, START, list(outcome.allocations)))
            value += reservation.value
    return value, time.perf_counter() - started, sum(changes(a.allocations) for a in plan.accepted.values())


def agent_for(approach: str, backend: str, time_limit: float) -> MilpAgent:
    """`plain`, `coarse` or `coarse:K`, with an optional `-nosmooth` suffix."""
    name, _, smooth = approach.partition("-")
    kind, _, step = name.partition(":")
    if kind not in ("plain", "coarse") or smooth not in ("", "nosmooth"):
        raise SystemExit(f"unknown approach `{approach}`; choose plain, coarse or coarse:K, optionally -nosmooth")
    coarsen = 1 if kind == "plain" else int(step) if step else None
    return MilpAgent(backend=backend, time_limit=time_limit, smooth=not smooth, coarsen=coarsen)


def share(value: float, bound: float | None) -> str:
    return "  n/a " if bound is None else f"{value / bound:6.1%}"


def run(count: int, steps: int, backends: list[str], approaches: list[str], time_limit: float, bound_limit: float,
        seed: int, days: int = 1) -> None:
    cluster = parse_cluster(cluster_text(steps, days), "benchmark-cluster.yaml")
    reservations = batch(count, steps, seed, days)
    total = sum(r.value for r in reservations)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    plan = Plan(cluster)
    items, _ = batch_items(plan, [(r, START) for r in reservations])
    volume = volume_bound(items, plan.free(), bound_limit or 60.0)
    said = f"volume bound {volume.value} (slots of {volume.step}, {volume.seconds:.1f} s)"
    bound, kind = volume.value, "volume"
    if bound_limit > 0:
        exact = lp_bound(items, plan.free(), plan.capacity, bound_limit)
        lp_said = "missing (not solved in time)" if exact.value is None else f"{exact.value:.1f}"
        said = f"LP bound {lp_said} ({exact.seconds:.1f} s), {said}"
        if exact.value is not None and (bound is None or exact.value < bound):
            bound, kind = exact.value, "LP"  # the tighter of the two
    print(f"\n== N={count} T={steps} (step {1440 // steps} min, {days} d): total value {total:g}, {said}; load {load}; "
          f"shares below are of the {kind} bound", flush=True)
    for flat in (False, True):
        value, seconds, moves = greedy_value(Plan(cluster), reservations, flat)
        name = "gree-l" if flat else "gree"
        print(f"  {name:<26} value {value:7.1f}  {share(value, bound)} of bound  {seconds:7.2f} s  changes {moves}",
              flush=True)
    for backend in backends:
        for approach in approaches:
            agent = agent_for(approach, backend, time_limit)
            started = time.perf_counter()
            result = agent.decide(Plan(cluster), [(r, START) for r in reservations])
            seconds = time.perf_counter() - started
            value = sum(r.value for r, d in zip(reservations, result.decisions, strict=True) if d.accepted)
            moves = sum(changes(list(d.allocations)) for d in result.decisions if d.accepted)
            report = result.report
            gap = None if report.gap is None else round(report.gap, 4)
            label = f"{approach} [{backend}]"
            print(f"  {label:<26} value {value:7.1f}  {share(value, bound)} of bound  {seconds:7.2f} s  "
                  f"changes {moves}  (greedy start {report.greedy_value:g} in {report.greedy_seconds:.1f} s; "
                  f"slots of {report.step} steps, {report.left_out} left out; build {report.build_seconds:.1f} s, "
                  f"{report.variables} vars, {report.constraints} rows; status {report.status}, "
                  f"solver value {report.milp_value}, gap {gap}; "
                  f"after repair {report.repaired_value}; plan-step solve {report.plan_step}; "
                  f"smoothing {report.smoothing} (changes {report.changes_before} -> {report.changes_after}); "
                  f"kept {report.chosen}; value bound {report.value_bound} (slots of {report.value_bound_step}), "
                  f"gap to it {report.optimality_gap}; "
                  f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50x96,200x96,50x288,200x288", help="NxT pairs, comma-separated")
    parser.add_argument("--backends", default="highs", help="comma-separated: highs, cbc, cpsat")
    parser.add_argument("--approaches", default="plain,coarse", help="comma-separated: plain, coarse, coarse:K, "
                        "each optionally with -nosmooth")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--bound-limit", type=float, default=300.0, help="seconds for the LP bound (0: skip it)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--days", type=int, default=1, help="the plan's horizon in days (T steps each)")
    args = parser.parse_args()
    print(f"pulp {version('pulp')}, highspy {version('highspy')}, ortools {version('ortools')}; "
          f"time limit {args.time_limit:g} s", flush=True)
    for size in args.sizes.split(","):
        count, steps = (int(x) for x in size.split("x"))
        run(count, steps, args.backends.split(","), args.approaches.split(","), args.time_limit, args.bound_limit,
            args.seed, args.days)


if __name__ == "__main__":
    main()
