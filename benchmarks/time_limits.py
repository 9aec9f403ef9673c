"""Wall-clock checks that the tests no longer make: the MILP agent and its solvers keep their time limits.

    python benchmarks/time_limits.py [--limit 2.0] [--slack 1.0]

The tests assert what the code decides (the seconds each solve is given, on an injected clock,
and node limits); whether the machine then keeps those seconds depends on how busy it is, so it
is measured here. Prints one line per check (wall seconds against the limit) and exits 1 when one
overran by more than the slack: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.agents.milp.agent import MilpAgent
from planner.agents.milp.model import Item, build
from planner.agents.milp.solvers import get_backend
from planner.core.compile import compile_reservation
from planner.core.plan import Plan
from tests.planner.agents.milp.test_milp import day_batch
from tests.planner.support import START, parse


def agent_run(limit: float, coarsen: int | None, smooth: bool) -> Callable[[], object]:
    """The agent on the tests' day batch (40 reservations, one day of one-minute steps)."""
    cluster, text = day_batch()
    batch = [(r, START) for r in parse(text)]
    return lambda: MilpAgent(time_limit=limit, coarsen=coarsen, smooth=smooth).decide(Plan(cluster), batch)


def backend_run(limit: float, backend: str) -> Callable[[], object]:
    """One backend on the day batch's acceptance model at the plan step (~18k variables)."""
    cluster, text = day_batch()
    plan = Plan(cluster)
    items = [Item(r.name, r.value, compile_reservation(r, START, plan.clock, plan.now_step, plan.resources))
             for r in parse(text)]
    problem = build(items, plan.free(), plan.capacity, 0.01).problem
    return lambda: get_backend(backend)(problem, limit, 1e-4, False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=2.0, help="seconds given to each run")
    parser.add_argument("--slack", type=float, default=1.0, help="seconds over the limit still counted as within")
    args = parser.parse_args()
    checks = {
        "agent, chosen slots": agent_run(args.limit, None, True),
        "agent, plan step": agent_run(args.limit, 1, True),
        "agent, slots, no smoothing": agent_run(args.limit, None, False),
        "highs on the plan-step model": backend_run(args.limit, "highs"),
        "cbc on the plan-step model": backend_run(args.limit, "cbc"),
    }
    overran = 0
    for name, run in checks.items():
        started = time.perf_counter()
        run()
        seconds = time.perf_counter() - started
        late = seconds > args.limit + args.slack
        overran += late
        print(f"{name:32} {seconds:6.2f} s of {args.limit:g} s{'  OVER' if late else ''}")
    return 1 if overran else 0


if __name__ == "__main__":
    sys.exit(main())
