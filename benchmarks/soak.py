"""A quarter on a fast clock: months of plan time through the real HTTP server, week by week.

    python benchmarks/soak.py [--days 90] [--step 5m] [--horizon 7d] [--rate 43200] [--retention 30d] [--seed 5]

Starts `rayon serve --clock fast:RATE` (RATE plan seconds per wall second; 43200: half a day a second)
on a fresh SQLite plan of STEP steps reaching HORIZON ahead, whose cluster file holds a capacity dip
every Thursday 00:00-06:00 for the whole run. One client submits a daily recurring reservation at the
start, then one-off reservations with deadlines inside the horizon, steadily, as the plan's clock
moves, asking for about twice what the cluster has. The store keeps RETENTION of log and history.
Prints per simulated week: decisions, acceptance, admission latency p50/p99, the server's RSS,
the database size, the rows of the live tables (reservations and leases) and of the history, and
the recurring instances placed and missed (from the server's /metrics); then the plan checker's
verdict on the whole store, whether every instance of the series was decided exactly once, and the
last 30 days' RSS, p99 and database size against days 30-60 (the run passes when each is within 10%).
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.store.facade import Store  # noqa: E402
from rdl import units  # noqa: E402
from tests.planner.api.support import make_tokens, running, stored_violations, submit  # noqa: E402

START = datetime.fromisoformat("2026-11-23T00:00:00+00:00")  # a Monday
DAILY = ("reservation nightly user=ops every=1d arrival=+1h deadline=+5h "
         "{ atom(b={vcores: 16, memory: 32GiB}, g=4, h=4, l=2h, w=8h) }")


@dataclass
class Week:
    """What one simulated week saw."""

    decisions: int = 0
    accepted: int = 0
    latencies: list[float] = field(default_factory=list)
    rss_mib: float = 0.0
    db_mib: float = 0.0
    placed: int = 0
    missed: int = 0
    live: int = 0  # rows of the live tables
    past: int = 0  # rows of the history


def cluster_yaml(days: int, step: str, horizon: str) -> str:
    """256 vcores and 512 GiB, halved every Thursday 00:00-06:00 for `days` days and a horizon beyond."""
    lines = [f"start: {units.format_instant(START)}", f"step: {step}", f"horizon: {horizon}",
             "capacity: {vcores: 256, memory: 512GiB}", "changes:"]
    for week in range(days // 7 + 3):
        thursday = START + timedelta(days=7 * week + 3)
        lines.append(f"  - {{at: {units.format_instant(thursday)}, capacity: {{vcores: 128, memory: 256GiB}}}}")
        lines.append(f"  - {{at: {units.format_instant(thursday + timedelta(hours=6))}, "
                     "capacity: {vcores: 256, memory: 512GiB}}")
    return "\n".join(lines) + "\n"


def one_off(rng: random.Random, index: int) -> str:
    """A reservation arriving within a day of the clock with a deadline inside the horizon."""
    vcores, gang, hours = rng.choice([2, 4, 8]), rng.choice([4, 8, 16]), rng.choice([2, 4, 8])
    arrival, slack = rng.randint(0, 24 * 60), rng.randint(hours * 60, 3 * 24 * 60)
    return (f"reservation r{index} user=u{index % 7} arrival=+{arrival}m deadline=+{slack}m "
            f"{{ atom(b={{vcores: {vcores}, memory: {2 * vcores}GiB}}, g={gang}, h={2 * gang}, l=30m, "
            f"w={gang * hours}h) }}")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def db_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20


def rows(path: Path) -> tuple[int, int]:
    """Rows of the live tables (reservations and leases) and of the history."""
    with sqlite3.connect(path) as connection:
        live = sum(connection.execute(f"SELECT count(*) FROM rayon_{table}").fetchone()[0]
                   for table in ("reservations", "leases"))
        return live, connection.execute("SELECT count(*) FROM rayon_history").fetchone()[0]


def series_counts(client: httpx.Client) -> tuple[int, int]:
    """Instances of recurring reservations placed and missed so far, from the server's /metrics."""
    found = {"placed": 0, "missed": 0}
    for line in client.get("/metrics").text.splitlines():
        match = re.match(r'rayon_series_instances_total\{outcome="(\w+)"\} ([0-9.e+]+)', line)
        if match:
            found[match.group(1)] = int(float(match.group(2)))
    return found["placed"], found["missed"]


def series_problems(state: Path, missed: int) -> tuple[int, list[str]]:
    """How many instances of the daily series hold leases, and whether each instance that came into the horizon
    was decided exactly once."""
    with Store.open(state) as store:
        record, now, horizon = store.get("nightly"), store.now(), store.cluster().horizon
    instances = [a.instance for a in record.allocations]
    problems = [f"instance {i} placed {instances.count(i)} times" for i in sorted(set(instances))
                if instances.count(i) > 1]
    # Instance i arrives at START + 1h + i days and comes in once its deadline (+5h) is inside the horizon.
    due = (now + timedelta(seconds=horizon) - START - timedelta(hours=6)) // timedelta(days=1) + 1
    if len(set(instances)) + missed not in (due, due + 1):  # the one at the horizon's edge may have come in or not
        problems.append(f"{len(set(instances))} instances placed and {missed} missed, {due} due")
    return len(set(instances)), problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--step", default="5m")
    parser.add_argument("--horizon", default="7d")
    parser.add_argument("--rate", type=float, default=43200.0, help="plan seconds per wall second")
    parser.add_argument("--retention", default="30d", help="how long the log and the history keep the past")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    end = START + timedelta(days=args.days)
    weeks: dict[int, Week] = {}
    with tempfile.TemporaryDirectory() as folder:
        state, tokens_file = Path(folder) / "plan.db", Path(folder) / "tokens.yaml"
        with Store.open(state) as store:
            store.init(cluster_yaml(args.days, args.step, args.horizon), "soak-cluster.yaml")
            store.set_retention(args.retention)
        tokens = make_tokens(tokens_file, {"ops": "admin"})
        began = time.monotonic()
        with running(state, tokens_file, tokens, "--clock", f"fast:{args.rate:g}") as server, \
                server.client("ops") as client:
            assert submit(client, DAILY).json()["accepted"]
            index, now = 0, START
            while now < end:
                before = time.perf_counter()
                response = submit(client, one_off(rng, index))
                latency = time.perf_counter() - before
                answer = response.json()
                if response.status_code not in (200, 201):
                    raise SystemExit(f"submission {index} answered {response.status_code}: {answer}")
                now = units.parse_instant(client.get("/v1/ready").json()["now"])
                week = weeks.setdefault((now - START).days // 7, Week())
                week.decisions += 1
                week.accepted += bool(answer["accepted"])
                week.latencies.append(latency)
                if week.decisions == 1 or index % 50 == 0:
                    week.rss_mib, week.db_mib = rss_mib(server.process.pid), db_mib(state)
                    week.live, week.past = rows(state)
                    week.placed, week.missed = series_counts(client)
                index += 1
            placed, missed = series_counts(client)
        wall = time.monotonic() - began
        for number in sorted(weeks, reverse=True)[:-1]:  # each week's own instances, from the running totals
            weeks[number].placed -= weeks[number - 1].placed if number - 1 in weeks else 0
            weeks[number].missed -= weeks[number - 1].missed if number - 1 in weeks else 0
        violations = stored_violations(state)
        held, problems = series_problems(state, missed)
    print(f"{args.days} days of plan time at {args.step} steps, horizon {args.horizon}, in {wall:.0f} s wall "
          f"(fast:{args.rate:g}); {index} one-off submissions and one daily series")
    print(f"{'week':>4} {'decisions':>9} {'accepted':>8} {'p50 ms':>7} {'p99 ms':>7} {'RSS MiB':>8} {'DB MiB':>7} "
          f"{'live rows':>9} {'history':>7} {'placed':>6} {'missed':>6}")
    for number in sorted(weeks):
        w = weeks[number]
        cuts = statistics.quantiles(w.latencies, n=100) if len(w.latencies) > 1 else [0.0] * 99
        print(f"{number:>4} {w.decisions:>9} {w.accepted / max(w.decisions, 1):>8.0%} {cuts[49] * 1e3:>7.1f} "
              f"{cuts[98] * 1e3:>7.1f} {w.rss_mib:>8.0f} {w.db_mib:>7.1f} {w.live:>9} {w.past:>7} {w.placed:>6} "
              f"{w.missed:>6}")
    print(f"plan checker: {'no violation' if not violations else violations[:5]}")
    print(f"daily series: {held} instances hold leases ({placed} placed as the clock moved, the rest at submission), "
          f"{missed} missed; "
          f"{'each decided once' if not problems else problems[:5]}")
    middle = [w for n, w in weeks.items() if 30 <= 7 * n < 60]
    last = [w for n, w in weeks.items() if 7 * n >= args.days - 30]
    if middle and last:
        def p99(group: list[Week]) -> float:
            return statistics.quantiles([x for w in group for x in w.latencies], n=100)[98]
        rss = max(w.rss_mib for w in last) / max(w.rss_mib for w in middle)
        latency = p99(last) / p99(middle)
        size = max(w.db_mib for w in last) / max(w.db_mib for w in middle)
        print(f"last 30 days against days 30-60: RSS x{rss:.2f}, p99 x{latency:.2f}, database x{size:.2f} "
              f"({'pass' if max(rss, latency, size) <= 1.1 else 'FAIL'}: each within 10%)")


if __name__ == "__main__":
    main()
