"""Periodic production work, where the offline MILP can differ from greedy: recurring reservations (`every=`)
re-planned in batches, the MILP against GREE-L (and GREE) on accepted value and plan changes.

    python benchmarks/periodic.py [--series 40] [--batches 4] [--seed 5] [--time-limit 30] [--backend highs]

A week's plan at 10-minute steps on 100 vcores. Each series is a recurring reservation (a daily, 12-hourly or
6-hourly job with a window of 1-4 hours, some of them gangs, each with a value of 1-10), and the series arrive in
`--batches` batches: the greedy agents submit each batch's series one by one as they come, the MILP decides each
batch together on the plan the earlier batches left (what a nightly re-planning job does). Offered work is about
1.3x the plan's capacity, so somebody must be refused. Printed per agent: accepted value (and its share of the
total offered), series accepted, the plan's allocation changes (what a follower must move), and the seconds it
took; for the MILP also its solver status, gap and which plan it kept. Solver versions and the load average are
printed with the figures: the MILP's result depends on its time limit, so compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.agents.greedy.agent import GreedyAgent  # noqa: E402
from planner.agents.milp.agent import MilpAgent  # noqa: E402
from planner.agents.milp.smooth import changes  # noqa: E402
from planner.core.plan import Accepted, Plan  # noqa: E402
from rdl import parse_cluster, parse_text  # noqa: E402
from rdl.tree import Reservation  # noqa: E402

START = datetime(2026, 11, 23, tzinfo=UTC)
CLUSTER = ("start: 2026-11-23T00:00:00Z\nstep: 10m\nhorizon: 7d\n"
           "capacity: {memory: 400GiB, vcores: 100}\n")
PERIODS = {"1d": 1440, "12h": 720, "6h": 360}
OFFERED = 1.3  # the offered vcore-time the generator aims at, as a share of the plan's


def series(count: int, seed: int) -> list[Reservation]:
    """`count` recurring reservations, offering about 1.3x the plan's vcore-time over a week where their windows
    allow it (each instance's work fits 80% of its window at its most parallel)."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        every = rng.choice(list(PERIODS))
        window = rng.choice([60, 120, 240])
        instances = 7 * 1440 // PERIODS[every]
        budget = OFFERED * 100 * 7 * 1440 / count / instances  # vcore-minutes per instance on average
        offset = rng.randrange(0, PERIODS[every] - window + 1, 10)
        arrival = (START + timedelta(minutes=offset)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if rng.random() < 0.3:
            gang = rng.choice([8, 16, 32])
            lease = max(10, min(int(0.8 * window), int(budget * rng.uniform(0.4, 1.6) / gang)) // 10 * 10)
            body = f"atom(b={{memory: 4GiB, vcores: 1}}, g={gang}, h={gang}, l={lease}m, w={lease * gang}m)"
        else:
            height = rng.choice([20, 40, 80])
            work = max(10, min(int(0.8 * window * height), int(budget * rng.uniform(0.4, 1.6))) // 10 * 10)
            body = f"atom(b={{memory: 4GiB, vcores: 1}}, h={height}, l=10m, w={work}m)"
        texts.append(f"reservation p{index} arrival={arrival} deadline=+{window}m every={every} "
                     f"value={rng.randint(1, 10)} {{ {body} }}")
    return parse_text("\n".join(texts), "periodic.rdl")


def offered(reservations: list[Reservation]) -> float:
    """The series' vcore-time over the week, as a share of the plan's."""
    total = 0.0
    for reservation in reservations:
        every = reservation.every
        instances = 7 * 86400 // every if every else 1
        total += float(reservation.body.work) * float(reservation.body.bundle.get("vcores", 0.0)) * instances
    return total / (100 * 7 * 86400)


def batches(reservations: list[Reservation], count: int) -> list[list[Reservation]]:
    """The series in `count` batches of about equal size, in the order they were drawn."""
    size = -(-len(reservations) // count)
    return [reservations[index:index + size] for index in range(0, len(reservations), size)]


def greedy(cluster_text: str, arriving: list[list[Reservation]], flat: bool) -> tuple[float, int, int, float]:
    """GREE or GREE-L submitting every series one by one: value, series accepted, plan changes, seconds."""
    plan = Plan(parse_cluster(cluster_text, "periodic-cluster.yaml"))
    agent = GreedyAgent("gree-l" if flat else "gree", flat=flat)
    started = time.perf_counter()
    value, accepted = 0.0, 0
    for reservation in (r for batch in arriving for r in batch):
        outcome = agent.place(plan, reservation, START)
        if outcome.allocations is not None:
            plan.add(Accepted(reservation, START, list(outcome.allocations)))
            value, accepted = value + reservation.value, accepted + 1
    moves = sum(changes(a.allocations) for a in plan.accepted.values())
    return value, accepted, moves, time.perf_counter() - started


def milp(cluster_text: str, arriving: list[list[Reservation]], agent: MilpAgent) -> tuple[float, int, int, float,
                                                                                       list[str]]:
    """The MILP deciding each batch together on what the earlier ones left: value, accepted, changes, seconds,
    and per batch its status, gap and the plan it kept."""
    plan = Plan(parse_cluster(cluster_text, "periodic-cluster.yaml"))
    started = time.perf_counter()
    value, accepted, notes = 0.0, 0, []
    for batch in arriving:
        result = agent.decide(plan, [(r, START) for r in batch])
        for reservation, decision in zip(batch, result.decisions, strict=True):
            if decision.accepted:
                value, accepted = value + reservation.value, accepted + 1
        report = result.report
        gap = None if report.gap is None else round(report.gap, 4)
        notes.append(f"{report.status}, gap {gap}, kept {report.chosen} (greedy start {report.greedy_value:g})")
    moves = sum(changes(a.allocations) for a in plan.accepted.values())
    return value, accepted, moves, time.perf_counter() - started, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=40)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds for the MILP per batch")
    parser.add_argument("--backend", default="highs", help="highs, cbc or cpsat")
    args = parser.parse_args()
    reservations = series(args.series, args.seed)
    arriving = batches(reservations, args.batches)
    total = sum(r.value for r in reservations)
    print(f"pulp {version('pulp')}, highspy {version('highspy')}, ortools {version('ortools')}; {args.series} series "
          f"in {len(arriving)} batches offering {offered(reservations):.2f}x the plan's vcore-time, total value "
          f"{total:g}; MILP time limit {args.time_limit:g} s a batch "
          f"({args.backend}); load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for flat in (False, True):
        value, accepted, moves, seconds = greedy(CLUSTER, arriving, flat)
        print(f"  {'gree-l' if flat else 'gree':<6} value {value:6.1f} ({value / total:5.1%})  series {accepted:3d}  "
              f"plan changes {moves:6d}  {seconds:7.2f} s", flush=True)
    agent = MilpAgent(backend=args.backend, time_limit=args.time_limit)
    value, accepted, moves, seconds, notes = milp(CLUSTER, arriving, agent)
    print(f"  {'milp':<6} value {value:6.1f} ({value / total:5.1%})  series {accepted:3d}  plan changes {moves:6d}  "
          f"{seconds:7.2f} s", flush=True)
    for index, note in enumerate(notes, 1):
        print(f"    batch {index}: {note}")
    print(f"  load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
