"""Committed decisions per second through the plan store (SQLite), one writer and then several processes.

    python benchmarks/store.py [--count 10000] [--seed 7] [--threads 8] [--processes 4] [--agent gree-l]
        [--explain] [--dir D]

Uses the workload of admission.py (a seeded mix over a one-week, one-minute plan). Prints, for the
in-memory Planner alone (the baseline), for one writer, for one process with N threads (group
commit: what arrives together is one batch, one transaction) and for N writer processes on one SQLite
file: decisions per second and p50/p99 latency of one submission including its commit. The
earliest-deadline search on rejection is off unless --explain: it is planner work, not store work
(admission.py measures it), and at 1.5x demand it dominates. Last, on the one-writer file: what moving
the plan's clock costs, a step at a time (the window rolls each time) and a day at once.

    python benchmarks/store.py --series DAYS [--every 10]

Instead: issue #29's growth of a plan that runs for DAYS plan-days with two series every 11 minutes and a daily
one (one-minute steps, a one-day horizon), the clock moved a day at a time: every `--every` days, the lease
rows live and in the history, and what moving the clock a day and a minute and loading the plan afresh cost.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sqlite3

from admission import CLUSTER, workload

from planner.admission import Planner
from planner.store.facade import Store
from rdl import parse_cluster, parse_text
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation


@dataclass
class Run:
    """Latencies of each submission (seconds), wall time, and how many were accepted."""

    latencies: list[float]
    wall: float
    accepted: int

    def report(self, label: str) -> None:
        count = len(self.latencies)
        p50, p99 = (np.percentile(self.latencies, q) * 1000 for q in (50, 99))
        print(f"  {label:<22} {count / self.wall:8,.0f} decisions/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   "
              f"accepted {self.accepted:,} of {count:,} in {self.wall:.1f} s")


def baseline(reservations: list[Reservation], agent: str, explain: bool) -> Run:
    """The in-memory Planner alone, nothing written."""
    planner = Planner(parse_cluster(CLUSTER))
    latencies, accepted, started = [], 0, time.perf_counter()
    for reservation in reservations:
        begin = time.perf_counter()
        accepted += planner.submit(reservation, agent, validated=True, explain=explain).accepted
        latencies.append(time.perf_counter() - begin)
    return Run(latencies, time.perf_counter() - started, accepted)


def submit_all(store: Store, reservations: list[Reservation], agent: str, explain: bool) -> tuple[list[float], int]:
    latencies, accepted = [], 0
    for reservation in reservations:
        begin = time.perf_counter()
        accepted += store.submit(reservation, agent, actor="bench", explain=explain).accepted
        latencies.append(time.perf_counter() - begin)
    return latencies, accepted


def one_writer(path: Path, reservations: list[Reservation], agent: str, explain: bool) -> Run:
    with Store.open(path) as store:
        store.init(CLUSTER, "benchmark-cluster.yaml", force=True)
        started = time.perf_counter()
        latencies, accepted = submit_all(store, reservations, agent, explain)
        return Run(latencies, time.perf_counter() - started, accepted)


def threaded_writer(path: Path, reservations: list[Reservation], agent: str, explain: bool, threads: int) -> Run:
    """One Store, `threads` threads submitting at once (as a server's requests do): group commit decides and
    commits what arrives together as one batch; the batches' mean size is printed."""
    with Store.open(path) as store:
        store.init(CLUSTER, "benchmark-cluster.yaml", force=True)
        sizes: list[int] = []
        store.count_batches(sizes.append)
        shares = [reservations[i::threads] for i in range(threads)]
        done: list[tuple[list[float], int]] = []
        workers = [threading.Thread(target=lambda share=share: done.append(submit_all(store, share, agent, explain)))
                   for share in shares]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
    print(f"  ({len(sizes):,} write transactions, {np.mean(sizes):.1f} submissions each)")
    return Run([x for latencies, _ in done for x in latencies], wall, sum(accepted for _, accepted in done))


def writer_process(path: str, texts: list[str], agent: str, explain: bool, barrier: object,
                   results: object) -> None:
    """One of several writers: open and parse first, wait for the others, then submit and report."""
    reservations = [r for text in texts for r in parse_text(text, "bench.rdl")]
    with Store.open(path) as store:
        store.load_plan()  # a process opens its store once and then serves many submissions
        barrier.wait()  # type: ignore[attr-defined]
        latencies, accepted = submit_all(store, reservations, agent, explain)
    results.put((latencies, accepted, time.monotonic()))  # type: ignore[attr-defined]


def many_writers(path: Path, reservations: list[Reservation], agent: str, explain: bool, processes: int) -> Run:
    with Store.open(path) as store:
        store.init(CLUSTER, "benchmark-cluster.yaml", force=True)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes + 1), context.Queue()
    shares = [[format_reservation(r) for r in reservations[i::processes]] for i in range(processes)]
    workers = [context.Process(target=writer_process, args=(str(path), share, agent, explain, barrier, results))
               for share in shares]
    for worker in workers:
        worker.start()
    barrier.wait()
    started = time.monotonic()
    done = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    latencies = [x for d in done for x in d[0]]
    return Run(latencies, max(d[2] for d in done) - started, sum(d[1] for d in done))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8, help="threads of the one-process, group-commit phase")
    parser.add_argument("--agent", default="gree-l")
    parser.add_argument("--explain", action="store_true", help="search the earliest deadline on rejection")
    parser.add_argument("--dir", type=Path, help="where the SQLite files go (default: a temporary folder)")
    parser.add_argument("--series", type=int, metavar="DAYS", help="only the growth of a plan with series")
    parser.add_argument("--every", type=int, default=10, help="with --series: days between two reports")
    args = parser.parse_args()
    if args.series:
        with tempfile.TemporaryDirectory() as scratch:
            series_growth((args.dir or Path(scratch)) / "series.db", args.series, args.every)
        return
    reservations = workload(args.count, args.seed)
    print(f"{len(reservations):,} reservations, agent {args.agent}, explain {'on' if args.explain else 'off'}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.dir or Path(scratch)
        baseline(reservations, args.agent, args.explain).report("planner alone")
        single = folder / "one-writer.db"
        one_writer(single, reservations, args.agent, args.explain).report("store, one writer")
        threaded_writer(folder / "threads.db", reservations, args.agent, args.explain, args.threads) \
            .report(f"store, {args.threads} threads")
        many = folder / "many-writers.db"
        many_writers(many, reservations, args.agent, args.explain, args.processes) \
            .report(f"store, {args.processes} processes")
        size = sum(p.stat().st_size for p in folder.glob("one-writer.db*")) / 2**20
        print(f"  SQLite file after {len(reservations):,} decisions: {size:.1f} MiB")
        advances(single)


def advances(path: Path, moves: int = 60) -> None:
    """The cost of moving the plan's clock (expiry, rolling the window, series going on) on the filled store:
    one step at a time, then a day at once."""
    with Store.open(path) as store:
        store.load_plan()
        step = store.cluster().step
        latencies = []
        for _ in range(moves):
            began = time.perf_counter()
            store.advance(store.now() + timedelta(seconds=step))
            latencies.append(time.perf_counter() - began)
        began = time.perf_counter()
        report = store.advance(store.now() + timedelta(days=1))
        day = time.perf_counter() - began
        held = len(store.load_plan().accepted)
    cuts = np.percentile(np.array(latencies) * 1e3, [50, 99])
    print(f"  advance one step       p50 {cuts[0]:6.2f} ms   p99 {cuts[1]:6.2f} ms   ({moves} moves, "
          f"{held:,} reservations held after)")
    print(f"  advance a day at once  {day * 1e3:8.1f} ms   ({len(report.expired):,} expired)")


SERIES_CLUSTER = """start: 2026-01-01T00:00:00Z
step: 1m
horizon: 1d
capacity: {vcores: 64, memory: 256GiB}
"""
SERIES = ("reservation fast_a every=11m { window(e=+10m, atom(b={vcores: 2, memory: 4GiB}, w=3m)) }\n"
          "reservation fast_b every=11m { window(e=+10m, atom(b={vcores: 1, memory: 2GiB}, g=2, h=2, l=2m, w=4m)) }\n"
          "reservation daily every=1d { window(e=+6h, atom(b={vcores: 16, memory: 64GiB}, w=2h)) }\n")


def series_growth(path: Path, days: int, every: int) -> None:
    """Issue #29 item 4: live lease rows, history rows and the cost of the clock as a plan with series runs on."""
    with Store.open(path) as store:
        store.init(SERIES_CLUSTER, "series-cluster.yaml")
        for reservation in parse_text(SERIES, "series.rdl"):
            assert store.submit(reservation).accepted
    print(f"two series every 11 minutes and a daily one, one-minute steps, a one-day horizon, {days} plan-days")
    print("   day   live leases   history rows   advance a day   a minute   load_plan afresh")
    with Store.open(path) as store:
        for day in range(1, days + 1):
            began = time.perf_counter()
            store.advance(store.now() + timedelta(days=1) - timedelta(minutes=1))
            a_day = time.perf_counter() - began
            began = time.perf_counter()
            store.advance(store.now() + timedelta(minutes=1))
            a_minute = time.perf_counter() - began
            if day % every and day != days:
                continue
            with Store.open(path) as fresh:
                began = time.perf_counter()
                fresh.load_plan()
                loading = time.perf_counter() - began
            with sqlite3.connect(path) as connection:
                live, past = (connection.execute(f"SELECT count(*) FROM rayon_{table}").fetchone()[0]
                              for table in ("leases", "history"))
            print(f"  {day:4d}   {live:11,d}   {past:12,d}   {a_day * 1e3:10.0f} ms   {a_minute * 1e3:5.0f} ms   "
                  f"{loading * 1e3:11.0f} ms")


if __name__ == "__main__":
    main()
