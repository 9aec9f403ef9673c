"""The MILP agent against the greedy agents on seeded random batches, demand about 1.3x capacity.

    python benchmarks/milp.py [--sizes 50x96,200x288] [--backends highs] [--time-limit 60] [--seed 3]

For each size (N reservations x T steps of one day) it prints, per approach: build and
solve time, solver status, accepted value, the LP-relaxation bound of accepted value,
and value as a share of that bound, next to GREE and GREE-L submitting one by one.
Approaches: `milp` (acceptance, then smoothing with the acceptances fixed) and
`milp-nosmooth` (acceptance only). Solver versions are printed with the figures.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version

from planner.agents import GreedyAgent
from planner.milp import MilpAgent, lp_bound
from planner.plan import Accepted, Plan
from rdl import parse_cluster, parse_text
from rdl.tree import Reservation

START = datetime(2026, 11, 23, tzinfo=UTC)
CAPACITY = 100  # vcores; memory 4 GiB per vcore


def cluster_text(steps: int) -> str:
    step_minutes = 1440 // steps
    return (f"start: 2026-11-23T00:00:00Z\nstep: {step_minutes}m\nhorizon: 1d\n"
            f"capacity: {{memory: {CAPACITY * 4}GiB, vcores: {CAPACITY}}}\n")


def batch(count: int, steps: int, seed: int) -> list[Reservation]:
    """`count` reservations over one day, about 1.3x the day's vcore-time in total."""
    rng = random.Random(seed)
    step = 1440 // steps
    budget = 1.3 * CAPACITY * 1440 / count  # vcore-minutes per reservation on average
    texts = []
    for index in range(count):
        work = max(step, int(budget * rng.uniform(0.3, 1.7)))
        start = rng.randrange(0, 1440 - 120, step)
        length = rng.choice([2, 4, 8, 12]) * 60
        end = min(1440, start + length)
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


def greedy_value(plan: Plan, reservations: list[Reservation], flat: bool) -> tuple[float, float]:
    agent = GreedyAgent("gree-l" if flat else "gree", flat=flat)
    started = time.perf_counter()
    value = 0.0
    for reservation in reservations:
        outcome = agent.place(plan, reservation, START)
        if outcome.allocations is not None:
            plan.add(Accepted(reservation, START, list(outcome.allocations)))
            value += reservation.value
    return value, time.perf_counter() - started


def run(count: int, steps: int, backends: list[str], time_limit: float, seed: int) -> None:
    cluster = parse_cluster(cluster_text(steps), "benchmark-cluster.yaml")
    reservations = batch(count, steps, seed)
    total = sum(r.value for r in reservations)
    bound, bound_seconds = lp_bound(Plan(cluster), [(r, START) for r in reservations])
    print(f"\n== N={count} T={steps} (step {1440 // steps} min): total value {total:g}, "
          f"LP bound {bound:.1f} ({bound_seconds:.1f} s)")
    for flat in (False, True):
        value, seconds = greedy_value(Plan(cluster), reservations, flat)
        name = "gree-l" if flat else "gree"
        print(f"  {name:<22} value {value:7.1f}  {value / bound:6.1%} of bound  {seconds:7.2f} s")
    for backend in backends:
        for smooth in (False, True):
            agent = MilpAgent(backend=backend, time_limit=time_limit, smooth=smooth)
            started = time.perf_counter()
            result = agent.decide(Plan(cluster), [(r, START) for r in reservations])
            seconds = time.perf_counter() - started
            value = sum(r.value for r, d in zip(reservations, result.decisions, strict=True) if d.accepted)
            report = result.report
            label = f"milp{'' if smooth else '-nosmooth'} [{backend}]"
            print(f"  {label:<22} value {value:7.1f}  {value / bound:6.1%} of bound  {seconds:7.2f} s  "
                  f"(build {report.build_seconds:.1f} s, {report.variables} vars, status {report.status}, "
                  f"gap {report.gap if report.gap is None else round(report.gap, 4)}, smoothing {report.smoothing}, "
                  f"kept {report.chosen}; greedy start {report.greedy} {report.greedy_value:g})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50x96,200x96,50x288,200x288", help="NxT pairs, comma-separated")
    parser.add_argument("--backends", default="highs", help="comma-separated: highs, cbc, cpsat")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    print(f"pulp {version('pulp')}, highspy {version('highspy')}, ortools {version('ortools')}")
    for size in args.sizes.split(","):
        count, steps = (int(x) for x in size.split("x"))
        run(count, steps, args.backends.split(","), args.time_limit, args.seed)


if __name__ == "__main__":
    main()
