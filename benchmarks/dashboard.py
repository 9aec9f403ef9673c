"""The dashboard's page weight and time to first render on a plan of many reservations, in headless Chromium.

    python benchmarks/dashboard.py [--count 5000] [--users 50] [--runs 3] [--seed 7]

Builds a one-week, one-minute plan (benchmarks/admission.py's cluster and workload, demand about 1.3x capacity)
by submitting `count` reservations spread over `users` users, serves it with `rayon serve`, and opens the
dashboard's timeline `runs` times as an admin (every reservation) and as one user (their own, the others as
load), with the token already in the tab's sessionStorage (as after logging in). Prints per viewer:

- page weight: the page's own files (HTML, scripts, styles, transferred) and the API's answers it reads;
- time to first render: from the navigation's start to the timeline first drawn with the reservations' rows
  (performance mark `rayon:rows`: bars from the listing), and to their allocation shapes drawn (`rayon:shapes`,
  after the listing with `allocations=true`). Median and range over the runs.

Needs Chromium, chromedriver and selenium, as the browser tests do (tests/planner/api/browser.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from admission import CLUSTER, workload  # noqa: E402 (benchmarks/ and the root on the path first)

from planner.store.facade import Store  # noqa: E402
from tests.planner.api import browser  # noqa: E402
from tests.planner.api.support import make_tokens, running  # noqa: E402

WAIT = 300.0  # seconds: a bound for a stuck page


def build(state: Path, count: int, users: int, seed: int) -> tuple[int, dict[str, int]]:
    """The plan: `count` reservations submitted one by one, user u{i % users}; accepted ones, per user."""
    accepted = 0
    per_user: dict[str, int] = {}
    with Store.open(state) as store:
        store.init(CLUSTER, "benchmark-cluster.yaml")
        for index, reservation in enumerate(workload(count, seed)):
            user = f"u{index % users}"
            if store.submit(replace(reservation, user=user)).accepted:
                accepted += 1
                per_user[user] = per_user.get(user, 0) + 1
    return accepted, per_user


MEASURE = """
const marks = Object.fromEntries(performance.getEntriesByType("mark").map(m => [m.name, m.startTime]));
const nav = performance.getEntriesByType("navigation")[0];
const files = performance.getEntriesByType("resource");
const api = files.filter(f => new URL(f.name).pathname.startsWith("/v1/"));
const own = files.filter(f => !new URL(f.name).pathname.startsWith("/v1/"));
const sum = (list, key) => list.reduce((s, f) => s + (f[key] || 0), 0);
return {rows: marks["rayon:rows"], shapes: marks["rayon:shapes"],
        page: nav.transferSize + sum(own, "transferSize"),
        page_decoded: nav.decodedBodySize + sum(own, "decodedBodySize"),
        api: sum(api, "transferSize"), api_decoded: sum(api, "decodedBodySize"), requests: api.length,
        drawn: document.querySelector("canvas.timeline-canvas")?.dataset.rendered};
"""


def measure(driver: object, url: str, token: str, expected: int) -> dict[str, float]:
    """One cold load of the timeline with the token in the tab: the figures MEASURE reads."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{url}/dashboard/static/vendor/README.md")  # the origin, without the dashboard's scripts
    driver.execute_script("sessionStorage.setItem('rayon.token', arguments[0])", token)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})  # every load a first visit
    driver.get(f"{url}/?run={time.monotonic()}#/timeline")
    WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        lambda d: d.execute_script("return performance.getEntriesByName('rayon:shapes').length") == 1)
    figures = driver.execute_script(MEASURE)
    assert figures["drawn"] == str(expected), (figures["drawn"], expected)
    return figures


def spread(values: list[float], unit: str = "ms") -> str:
    return f"{statistics.median(values):,.0f} {unit} (runs: {', '.join(f'{v:,.0f}' for v in values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if (why := browser.missing()) is not None:
        sys.exit(f"benchmarks/dashboard.py needs a browser: {why}")
    with tempfile.TemporaryDirectory(prefix="rayon-dashboard-") as folder:
        root = Path(folder)
        started = time.perf_counter()
        accepted, per_user = build(root / "plan.db", args.count, args.users, args.seed)
        print(f"plan: {args.count:,} reservations submitted, {accepted:,} accepted, over {args.users} users "
              f"(built in {time.perf_counter() - started:.0f} s); one week at one-minute steps")
        users = {"ops": "admin", "u0": "user"}
        tokens = make_tokens(root / "tokens.yaml", users)
        with running(root / "plan.db", root / "tokens.yaml", tokens) as server, browser.chromium() as driver:
            for user, expected in (("ops", accepted), ("u0", per_user.get("u0", 0))):
                runs = [measure(driver, server.url, tokens[user], expected) for _ in range(args.runs)]
                first = runs[0]
                print(f"\n{user} ({users[user]}): {expected:,} reservations on the timeline")
                print(f"  page weight: the page's files {first['page'] / 1024:,.0f} KiB transferred "
                      f"({first['page_decoded'] / 1024:,.0f} KiB decoded); the API's answers "
                      f"{first['api'] / 1024:,.0f} KiB transferred ({first['api_decoded'] / 1024:,.0f} KiB "
                      f"decoded) in {first['requests']} requests")
                print(f"  first render (rows drawn):     {spread([r['rows'] for r in runs])}")
                print(f"  shapes drawn (allocations):    {spread([r['shapes'] for r in runs])}")


if __name__ == "__main__":
    main()
