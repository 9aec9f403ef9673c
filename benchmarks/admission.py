"""Online admission speed and quality of the greedy agents on a one-week, one-minute plan.

    python benchmarks/admission.py [--count 10000] [--seed 7] [--agents gree,gree-l] [--no-explain]
    python benchmarks/admission.py --sweep [--count 2000] [--steps 1m,10s,1s] [--roll-count 10000] [--parts]

Submits a seeded mix of reservations (single atoms, orders of 2-4 stages, `any` of 2-3
alternatives, gangs) one by one, arrivals spread over the week, demand about 1.3x
capacity. Prints per agent: admissions per second, p50/p99 latency for single atoms and
for trees (accepted and rejected apart: a rejection also searches its earliest deadline),
accepted count and work, and peak memory.

`--sweep` runs the same stream on the same week at each step (1 minute, 10 seconds, 1 second: 10,080 to 604,800
steps) through gree, gree-l and a bare compiled earliest-fit pass (each atom one block, earliest start where it fits,
booked on a dense array: the least any admission can cost on that grid), and prints per admission the p50/p99 CPU
time, the accepted count and the plan's memory; then the roll of a plan holding `--roll-count` reservations at the
finest step, by one hour (the store's hourly roll; the median of five in a row).
"""

from __future__ import annotations

import argparse
import random
import resource
import time

import numpy as np

from planner.admission import Planner
from planner.agents.greedy.agent import GreedyAgent
from planner.agents.registry import AGENTS, get_agent
from rdl import RDLErrors, parse_cluster, parse_text, validate
from rdl.summary import least_work
from rdl.tree import Atom, Reservation, atoms

CLUSTER = """
start: 2026-11-23T00:00:00Z
step: 1m
horizon: 7d
capacity: {memory: 4TiB, vcores: 2048}
"""
WEEK_MINUTES = 7 * 24 * 60


def atom(rng: random.Random, name: str) -> str:
    memory, vcores = rng.choice([("2GiB", 1), ("4GiB", 2), ("8GiB", 4), ("16GiB", 8)])
    bundle = f"b={{memory: {memory}, vcores: {vcores}}}"
    if rng.random() < 0.3:  # gang: one or two leases of g bundles
        g = rng.choice([4, 8, 16, 32])
        length = rng.choice([15, 30, 60])
        return f"{name}: atom({bundle}, g={g}, h={g}, l={length}m, w={g * length * rng.choice([1, 2])}m)"
    h = rng.choice([10, 20, 50, 100])
    length = rng.choice([1, 5, 10, 30])
    return f"{name}: atom({bundle}, h={h}, l={length}m, w={rng.randint(1, 16)}h)"


def body(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return atom(rng, "main")
    if kind < 0.8:
        stages = ",\n    ".join(atom(rng, f"s{i}") for i in range(rng.randint(2, 4)))
        return f"order(\n    {stages}\n  )"
    options = ",\n    ".join(atom(rng, f"a{i}") for i in range(rng.randint(2, 3)))
    return f"any(\n    {options}\n  )"


def workload(count: int, seed: int) -> list[Reservation]:
    """`count` valid reservations arriving over the week, each with a deadline 2-12 hours after it arrives."""
    rng = random.Random(seed)
    cluster = parse_cluster(CLUSTER, "benchmark-cluster.yaml")
    found: list[Reservation] = []
    drawn = 0  # names count every draw, kept or not, so that a redraw never reuses one
    while len(found) < count:
        wanted = count - len(found)
        candidates = _candidates(rng, wanted, drawn)
        drawn += wanted
        for reservation in candidates:
            try:
                validate([reservation], cluster)
            except RDLErrors:
                continue  # a draw that could never fit its window is bad input, not a planning case
            found.append(reservation)
    return found


def _candidates(rng: random.Random, count: int, first: int) -> list[Reservation]:
    text = []
    for index in range(first, first + count):
        arrival = rng.randint(0, WEEK_MINUTES - 13 * 60)
        stamp = (np.datetime64("2026-11-23T00:00") + np.timedelta64(arrival, "m")).astype(str)
        text.append(f"reservation r{index} arrival={stamp}:00Z deadline=+{rng.randint(2, 12)}h "
                    f"value={rng.randint(1, 10)} {{\n  {body(rng)}\n}}\n")
    return parse_text("\n".join(text), "admission-workload.rdl")


def percentile(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.2f} ms" if values else "-"


def run(agent_name: str, reservations: list[Reservation], explain: bool) -> None:
    cluster = parse_cluster(CLUSTER, "benchmark-cluster.yaml")
    planner = Planner(cluster)
    agent = get_agent(agent_name)
    latencies: dict[tuple[bool, bool], list[float]] = {(s, a): [] for s in (True, False) for a in (True, False)}
    accepted_work = 0.0
    accepted = 0
    started = time.perf_counter()
    for reservation in reservations:
        begin = time.perf_counter()
        decision = planner.submit(reservation, agent, validated=True, explain=explain)
        elapsed = time.perf_counter() - begin
        single = isinstance(reservation.body, Atom)
        latencies[(single, decision.accepted)].append(elapsed)
        if decision.accepted:
            accepted += 1
            accepted_work += least_work(reservation.body)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    capacity_work = float(planner.plan.capacity[1].sum()) * cluster.step  # vcore-seconds
    used_work = float(planner.plan.used[1].sum()) * cluster.step
    print(f"\n== {agent_name}: {len(reservations)} reservations in {wall:.1f} s "
          f"({len(reservations) / wall:,.0f} admissions/s)")
    for single in (True, False):
        label = "single atoms" if single else "trees       "
        ok, no = latencies[(single, True)], latencies[(single, False)]
        everything = ok + no
        print(f"  {label}: p50 {percentile(everything, 50)}, p99 {percentile(everything, 99)}   "
              f"(accepted n={len(ok)} p50 {percentile(ok, 50)} p99 {percentile(ok, 99)}; "
              f"rejected n={len(no)} p50 {percentile(no, 50)} p99 {percentile(no, 99)})")
    print(f"  accepted: {accepted} of {len(reservations)}, {accepted_work / 3600:,.0f} bundle-hours; "
          f"vcore utilisation of the plan {used_work / capacity_work:.1%}")
    print(f"  peak resident memory of the process so far: {peak / 2**20:.0f} MiB")


def sweep(reservations: list[Reservation], steps: list[str], agents: list[str], explain: bool,
          roll_count: int, parts: bool = False) -> None:
    """The resolution sweep: the same stream at each step, ours and the bare pass side by side (see the docstring);
    with `parts`, each greedy agent's admission split into its parts below its row."""
    from resolution import PARTS, admission_parts, bare_pass, plan_memory, roll_time

    print(f"{'step':>5} {'steps':>8} {'agent':<7} {'accepted':>8} {'p50 µs':>8} {'p99 µs':>8} {'plan MiB':>9}")
    for step in steps:
        cluster = parse_cluster(CLUSTER.replace("step: 1m", f"step: {step}"), "benchmark-cluster.yaml")
        for name in agents:
            planner, agent, times, accepted = Planner(cluster), get_agent(name), [], 0
            for reservation in reservations:
                began = time.process_time()
                accepted += planner.submit(reservation, agent, validated=True, explain=explain).accepted
                times.append(time.process_time() - began)
            _row(step, cluster.steps, name, accepted, times, plan_memory(planner.plan))
            if parts and isinstance(agent, GreedyAgent):
                split = admission_parts(cluster, reservations, agent)
                whole = sum(sum(split[part]) for part in PARTS)
                for part in PARTS:
                    _part_row(f"{name}:{part}", split[part], whole)
        accepted, times, memory = bare_pass(cluster, reservations)
        _row(step, cluster.steps, "bare", accepted, times, memory)
    finest = parse_cluster(CLUSTER.replace("step: 1m", f"step: {steps[-1]}"), "benchmark-cluster.yaml")
    seconds = roll_time(finest, roll_count)
    print(f"roll by 1 h of a plan holding {roll_count:,} reservations at {steps[-1]} steps: {seconds * 1000:.1f} ms")


def _part_row(label: str, spent: list[float], whole: float) -> None:
    """A part of an agent's admissions (timed in a run of its own): how many did it, its p50/p99 over those, its
    share of that run's CPU time."""
    p50, p99 = (np.percentile(spent, q) * 1e6 if spent else 0.0 for q in (50, 99))
    print(f"{'':>5} {'':>8} {label:<7} {len(spent):>8} {p50:>8.0f} {p99:>8.0f} {sum(spent) / whole:>9.0%}")


def _row(step: str, count: int, agent: str, accepted: int, times: list[float], memory: int) -> None:
    p50, p99 = (np.percentile(times, q) * 1e6 for q in (50, 99))
    print(f"{step:>5} {count:>8,} {agent:<7} {accepted:>8} {p50:>8.0f} {p99:>8.0f} {memory / 2**20:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--agents", default="gree,gree-l", help=f"comma-separated, from {', '.join(AGENTS)}")
    parser.add_argument("--no-explain", action="store_true", help="skip the earliest-deadline search on rejection")
    parser.add_argument("--sweep", action="store_true", help="the resolution sweep (see above)")
    parser.add_argument("--steps", default="1m,10s,1s", help="--sweep: the steps, coarsest first")
    parser.add_argument("--parts", action="store_true",
                        help="--sweep: below each greedy agent, its admissions split into compile, search, explain "
                             "(earliest deadline of a rejection) and record (plan add, decision): count, p50, p99, "
                             "share of time")
    parser.add_argument("--roll-count", type=int, default=10_000, help="--sweep: reservations held by the rolled plan")
    args = parser.parse_args()
    if args.sweep:
        sweep(workload(args.count, args.seed), args.steps.split(","), args.agents.split(","), not args.no_explain,
              args.roll_count, args.parts)
        return
    reservations = workload(args.count, args.seed)
    demand = sum(least_work(r.body) * _vcores(r) for r in reservations)
    print(f"workload: {len(reservations)} reservations, demand {demand / (2048 * 7 * 86400):.2f}x the week's vcores")
    for name in args.agents.split(","):
        run(name.strip(), reservations, explain=not args.no_explain)


def _vcores(reservation: Reservation) -> float:
    found = atoms(reservation.body)
    return sum(a.bundle.get("vcores", 0.0) or 0.0 for _, a in found) / max(len(found), 1)


if __name__ == "__main__":
    main()
