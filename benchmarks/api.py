"""Submissions and listings per second through the HTTP API (`rayon serve` on loopback, SQLite), under load.

    python benchmarks/api.py [--threads 8] [--count 500] [--lists 100] [--seed 11] [--no-explain] [--week] [--verbose]
    python benchmarks/api.py --wrk 10 [--threads 8] [--count 3000] [--no-explain] [--workers 2] [--decider process]
                             [--dialect yarn]

Starts `rayon serve` on a fresh SQLite plan and drives it from client threads in this
process, each thread with its own user's token: first every thread submits `--count` reservations
(RDL text), then every thread lists its own reservations `--lists` times, a page of 100 at a random
offset. The load is the concurrency test's (tests/planner/api/support.py `Load`: one-day plan,
malleable atoms and gangs in windows of 1-4 hours, about 1.5 times the capacity asked for); with
`--week`, the heavier mix of admission.py on its one-week plan instead (orders and `any` of
malleable atoms holding hundreds of leases each: the store's writing then bounds the rate).

Prints for each phase the requests per second and the p50/p99 latency seen by the clients (the
server's work, the loopback, and the clients' own share of the CPU: run it on an idle machine).
The target of issue 6: at least 200 submits per second with p99 under 50 ms.

With `--wrk SECONDS` the load comes from wrk (Debian's `wrk`, C, not itself the bottleneck) instead of
Python threads: first its ceiling, the server's empty `GET /v1/health` with the same `--threads`
connections, then submissions of the same load (each wrk thread its own slice of it) for SECONDS each,
so that the ratio of the two shows what deciding and committing cost beside serving a request at all.
Each phase also prints the CPU time the server's processes spent per request (from Linux /proc): the cost,
which other load on the machine does not blur as it blurs the rate. `--workers N` starts `rayon serve
--workers N` (N processes on one port and one store), `--decider process|inline` passes that on: where the
submissions are decided (a process of its own, or a serving process). `--dialect yarn` sends the same load as
YARN's REST submissions (`POST /ws/v1/cluster/reservation/submit`, JSON, each under an id of its own; a window
becomes the arrival and deadline, its atom one `reservation-request`) instead of RDL text to `/v1/reservations`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from admission import CLUSTER as WEEK_CLUSTER  # noqa: E402 (benchmarks/ and the root on the path first)
from admission import workload as week_workload  # noqa: E402

from planner.store.facade import Store  # noqa: E402
from rdl.forms.yarn import to_yarn  # noqa: E402
from rdl.syntax.parser import parse_text  # noqa: E402
from rdl.syntax.printer import format_reservation  # noqa: E402
from rdl.tree import Absolute, Window  # noqa: E402
from tests.planner.api.support import Load, descendants, make_tokens, running  # noqa: E402


@dataclass
class Phase:
    """Latencies of every request (seconds), wall time, and the answers' statuses."""

    latencies: list[float]
    wall: float
    statuses: Counter[int]

    def report(self, label: str, extra: str = "") -> None:
        count = len(self.latencies)
        p50, p99 = (np.percentile(self.latencies, q) * 1000 for q in (50, 99))
        ok = sum(n for status, n in self.statuses.items() if 200 <= status < 300)
        others = ", ".join(f"{n} × {status}" for status, n in sorted(self.statuses.items()) if not 200 <= status < 300)
        print(f"  {label:<8} {count / self.wall:8,.0f} requests/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   "
              f"{ok:,} of {count:,} 2xx{f' ({others})' if others else ''} in {self.wall:.1f} s{extra}")


def drive(url: str, tokens: list[str], work: Callable[[httpx.Client, int], list[tuple[float, int]]]) -> Phase:
    """Run `work(client, thread)` in one thread per token, all starting together."""
    barrier = threading.Barrier(len(tokens) + 1)
    results: list[list[tuple[float, int]]] = [[] for _ in tokens]

    def run(thread: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[thread]}"}, timeout=60) as client:
            client.get("/v1/whoami")  # open the connection before the clock starts
            barrier.wait()
            results[thread] = work(client, thread)

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(len(tokens))]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    flat = [item for items in results for item in items]
    return Phase([seconds for seconds, _ in flat], wall, Counter(status for _, status in flat))


def timed(client: httpx.Client, request: Callable[[httpx.Client], httpx.Response]) -> tuple[float, httpx.Response]:
    begin = time.perf_counter()
    answer = request(client)
    return time.perf_counter() - begin, answer


def load_of(args: argparse.Namespace) -> Load:
    """The concurrency test's load, or with `--week` admission.py's mix on its one-week plan."""
    if not args.week:
        return Load.make(args.threads, args.count, args.seed)
    # renamed: admission.py's names repeat where it redrew an invalid reservation
    items = [(f"w{i}", format_reservation(replace(r, name=f"w{i}")))
             for i, r in enumerate(week_workload(args.threads * args.count, args.seed))]
    return Load([items[t::args.threads] for t in range(args.threads)], WEEK_CLUSTER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--count", type=int, default=500, help="submissions per thread")
    parser.add_argument("--lists", type=int, default=100, help="list requests per thread")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-explain", action="store_true", help="skip the earliest-deadline search on rejection")
    parser.add_argument("--week", action="store_true", help="admission.py's heavier mix on a one-week plan")
    parser.add_argument("--verbose", action="store_true", help="print every answer other than 2xx")
    parser.add_argument("--wrk", type=float, metavar="SECONDS", help="drive the server with wrk for SECONDS per phase")
    parser.add_argument("--workers", type=int, default=1, help="with --wrk: the server's worker processes")
    parser.add_argument("--decider", choices=("inline", "process"),
                        help="with --wrk: where the server decides (its default: process with several workers)")
    parser.add_argument("--dialect", choices=("native", "yarn"), default="native",
                        help="with --wrk: submit RDL text natively, or YARN's JSON to its REST dialect")
    args = parser.parse_args()
    if args.wrk:
        with_wrk(args)
        return
    load = load_of(args)
    params = {"explain": "false"} if args.no_explain else {}
    accepted = [0] * args.threads

    def submit_share(client: httpx.Client, thread: int) -> list[tuple[float, int]]:
        found = []
        for _, text in load.shares[thread]:
            seconds, answer = timed(client, lambda c, text=text: c.post(
                "/v1/reservations", content=text, params=params, headers={"Content-Type": "text/plain"}))
            accepted[thread] += answer.is_success and answer.json()["accepted"]
            if not answer.is_success and args.verbose:
                print(f"  {answer.status_code}: {answer.text[:400]}", file=sys.stderr)
            found.append((seconds, answer.status_code))
        return found

    def list_pages(client: httpx.Client, thread: int) -> list[tuple[float, int]]:
        rng = random.Random(args.seed + thread)
        found = []
        for _ in range(args.lists):
            offset = rng.randrange(0, max(1, args.count - 100))
            seconds, answer = timed(client, lambda c, offset=offset: c.get(
                "/v1/reservations", params={"limit": 100, "offset": offset}))
            found.append((seconds, answer.status_code))
        return found

    with tempfile.TemporaryDirectory() as scratch:
        state, token_file = Path(scratch) / "plan.db", Path(scratch) / "tokens.yaml"
        with Store.open(state) as store:
            store.init(load.cluster, "benchmark-cluster.yaml")
        tokens = make_tokens(token_file, {f"user{i}": "user" for i in range(args.threads)})
        total = sum(len(share) for share in load.shares)
        print(f"{total:,} reservations ({'week' if args.week else 'concurrency test'} load) over {args.threads} "
              f"client threads, SQLite on loopback, explain {'off' if args.no_explain else 'on'}")
        with running(state, token_file, tokens) as server:
            users = list(server.tokens.values())
            submits = drive(server.url, users, submit_share)
            submits.report("submit", f", {sum(accepted):,} accepted")
            drive(server.url, users, list_pages).report("list", " (pages of 100 of the user's own)")


def yarn_body(text: str, sequence: int) -> str:
    """A load reservation (a window around one atom) as YARN's REST submission, on one line, under its own id."""
    reservation = parse_text(text)[0]
    window = reservation.body
    assert isinstance(window, Window) and isinstance(window.start, Absolute) and isinstance(window.end, Absolute)
    atom = replace(window.child, parallelism=None)  # YARN's num-containers is w/l: no cap of its own
    shaped = replace(reservation, body=atom, queue="default", arrival=window.start, deadline=window.end)
    return json.dumps(to_yarn(shaped, f"reservation_1_{sequence:06d}"), separators=(",", ":"))


WRK_LATENCY = """
-- every run prints its figures on one line, for run_wrk
function done(summary, latency, requests)
  io.write(string.format("WRK %d %d %f %f %d\\n", summary.requests, summary.duration, latency:percentile(50),
                         latency:percentile(99), summary.errors.status))
end
"""

WRK_SCRIPT = """
local made = 0
function setup(thread) thread:set("id", made); made = made + 1 end
local lines, next_line = {}, 0
function init(args)
  local i = 0
  for line in io.lines(args[1]) do
    if i % tonumber(args[2]) == id then lines[#lines + 1] = line end
    i = i + 1
  end
  wrk.headers["Authorization"] = "Bearer " .. args[3]
  wrk.headers["Content-Type"] = args[4] or "text/plain"
end
function request()
  next_line = next_line % #lines + 1
  return wrk.format("POST", wrk.path, nil, lines[next_line])
end
""" + WRK_LATENCY


def settle(url: str, workers: int) -> None:
    """Wait for the server to answer (its workers start after the parent listens), and a second more for the
    other workers to be up as well."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    time.sleep(1 if workers > 1 else 0)


def cpu_seconds(pids: list[int]) -> float | None:
    """User and system CPU time the processes have used so far (Linux /proc; None elsewhere)."""
    try:
        fields = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() for pid in pids]
    except OSError:
        return None
    return sum(int(f[11]) + int(f[12]) for f in fields) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15


def wrk_threads(connections: int) -> int:
    """wrk's threads: two (the machine's cores), or one per connection if fewer. The submit script splits the
    reservations among them (each thread's connections share its slice)."""
    return min(2, connections)


def run_wrk(url: str, seconds: float, connections: int, script: Path, *args: str, pids: list[int]) -> str:
    """One wrk run (`wrk_threads`) with a script; its figures as one printable line, with the CPU time the server's
    processes (`pids`) spent per request: the cost that other load on the machine does not blur."""
    command = ["wrk", "-t", str(wrk_threads(connections)), "-c", str(connections), "-d", f"{seconds:g}s",
               "-s", str(script), url, *(["--", *args] if args else [])]
    before = cpu_seconds(pids)
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    after = cpu_seconds(pids)
    line = next(part for part in out.splitlines() if part.startswith("WRK "))
    requests, micros, p50, p99, non_2xx = (float(x) for x in line.split()[1:])
    spent = None if before is None or after is None else (after - before) * 1e3 / requests
    cpu = "" if spent is None else f"   server CPU {spent:5.2f} ms/request"
    return (f"{requests / (micros / 1e6):8,.0f} requests/s   p50 {p50 / 1000:6.2f} ms   p99 {p99 / 1000:6.2f} ms   "
            f"{requests:,.0f} requests in {micros / 1e6:.1f} s{f', {non_2xx:,.0f} not 2xx' if non_2xx else ''}{cpu}")


def with_wrk(args: argparse.Namespace) -> None:
    """The wrk phases: the empty endpoint's ceiling, then submissions, against one server on a fresh plan."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed here (Debian: apt-get install wrk)")
    load = Load.make(args.threads, args.count, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        state, token_file = folder / "plan.db", folder / "tokens.yaml"
        with Store.open(state) as store:
            store.init(load.cluster, "benchmark-cluster.yaml")
        tokens = make_tokens(token_file, {"bench": "user"})
        lines = folder / "reservations.txt"
        texts = [text for share in load.shares for _, text in share]
        yarn = args.dialect == "yarn"
        lines.write_text("".join((yarn_body(text, i) if yarn else text) + "\n" for i, text in enumerate(texts)))
        (folder / "submit.lua").write_text(WRK_SCRIPT)
        (folder / "latency.lua").write_text(WRK_LATENCY)
        total = sum(len(share) for share in load.shares)
        apart = args.decider == "process" or (args.decider is None and args.workers > 1)
        print(f"wrk, {args.threads} connections, {args.wrk:g} s per phase; {args.workers} serving process"
              f"{'es' if args.workers > 1 else ''}{' and a deciding process' if apart else ''}, SQLite on loopback, "
              f"explain {'off' if args.no_explain else 'on'}; {total:,} reservations of the concurrency test load "
              f"ready{', as YARN REST submissions' if yarn else ''}")
        decider = ("--decider", args.decider) if args.decider else ()
        with running(state, token_file, tokens, "--workers", str(args.workers), *decider) as server:
            settle(server.url, args.workers + apart)
            pids = [server.process.pid, *descendants(server.process.pid)]
            ceiling = run_wrk(server.url + "/v1/health", args.wrk, args.threads, folder / "latency.lua", pids=pids)
            print(f"  ceiling  {ceiling}   (GET /v1/health: serving a request at all)")
            path = ("/ws/v1/cluster/reservation/submit" if yarn else
                    "/v1/reservations" + ("?explain=false" if args.no_explain else ""))
            figures = run_wrk(server.url + path, args.wrk, args.threads, folder / "submit.lua", str(lines),
                              str(wrk_threads(args.threads)), tokens["bench"],
                              "application/json" if yarn else "text/plain", pids=pids)
            print(f"  submit   {figures}")
            scraped = httpx.get(server.url + "/metrics").text
            batches = {name: float(value) for name, value in re.findall(r"^rayon_store_batch_size_(sum|count) (\S+)$",
                                                                       scraped, re.MULTILINE)}
            mean = batches.get("sum", 0) / max(batches.get("count", 0), 1)
            print(f"  batches  {batches.get('count', 0):,.0f} write transactions, {mean:.1f} submissions each on "
                  "average (group commit)")
        with Store.open(state) as store:
            submits = [e for e in store.log() if e.action == "submit"]
            accepted = sum(bool(e.accepted) for e in submits)
        wrapped = " (the load ran out and names came round again: raise --count)" if len(submits) > total else ""
        print(f"  stored   {len(submits):,} submissions logged, {accepted:,} accepted{wrapped}")


if __name__ == "__main__":
    main()
