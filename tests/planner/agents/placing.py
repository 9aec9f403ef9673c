"""Helpers of the placer's tests: searches compared as plain data, and small plans with capacity taken."""

from __future__ import annotations

import random
from collections.abc import Callable

from planner.admission import Planner
from planner.agents.greedy.solution import AtomFailure, Solution
from tests.planner.support import at, make_cluster, parse, pinned


def solution_data(solution: Solution | None) -> list[tuple[str, list[int], list[int]]] | None:
    """A search's solution as labels, starts and gangs, to compare two searches."""
    return None if solution is None else [(p.task.label, p.starts.tolist(), p.gangs.tolist()) for p in solution]


def failure_data(failure: AtomFailure | None) -> tuple[str, int, int] | None:
    """Where a search's first failing atom looked, to compare two searches."""
    return None if failure is None else (failure.task.label, failure.lo, failure.hi)


def plan_with_holds(rng: random.Random, steps: int, holds: int, longest: int, tallest: int) -> Planner:
    """A plan of `steps` one-minute steps and 3-8 vcores holding up to `holds` pinned reservations, each at most
    `longest` steps long and `tallest` vcores tall, so that free capacity changes here and there."""
    planner = Planner(make_cluster({"vcores": rng.randint(3, 8)}, steps=steps))
    for held in range(holds):
        start = rng.randint(0, steps - 2)
        text = pinned(f"h{held}", start, rng.randint(1, min(longest, steps - start)), rng.randint(1, tallest))
        planner.submit(parse(text)[0], "gree")
    return planner


def atom_text(rng: random.Random, name: str, steps: int) -> str:
    """A random atom of one-vcore bundles (lease of 1-6 minutes, gang 1-3, 1-4 leases), half of them inside a window
    of their own within the plan's `steps`."""
    length = rng.randint(1, 6)
    gang = rng.randint(1, 3)
    leases = rng.randint(1, 4)
    body = f"{name}: atom(b={{vcores: 1}}, g={gang}, l={length}m, w={gang * leases * length}m)"
    if rng.random() < 0.5:  # a child window of its own, inside the plan
        lo = rng.randint(0, steps - length)
        hi = rng.randint(lo + length, steps)
        body = f"{name}: window(s={at(lo)}, e={at(hi)}, {body.split(': ', 1)[1]})"
    return body


def requests_on_plans(seed: int, count: int, holds: int, longest: int,
                      body: Callable[[random.Random, int], str]) -> list[tuple[Planner, str]]:
    """`count` small plans (12-40 one-minute steps, up to `holds` pinned reservations at most `longest` steps long and
    3 vcores tall), each with a request `r<index>` whose body `body(rng, steps)` writes."""
    rng = random.Random(seed)
    made = []
    for index in range(count):
        steps = rng.randint(12, 40)
        planner = plan_with_holds(rng, steps, rng.randint(0, holds), longest=longest, tallest=3)
        made.append((planner, f"reservation r{index} {{ {body(rng, steps)} }}"))
    return made


def orders_on_plans(seed: int, count: int, gaps: list[str] | None) -> list[tuple[Planner, str]]:
    """Small plans with capacity taken here and there, each with an `order` of two to four atoms, with a gap drawn
    from `gaps` (None: no gap)."""
    rng = random.Random(seed)
    made = []
    for index in range(count):
        planner = plan_with_holds(rng, rng.randint(20, 60), rng.randint(1, 10), longest=10, tallest=4)
        stages = []
        for stage in range(rng.randint(2, 4)):
            gang, length, leases = rng.randint(1, 2), rng.randint(1, 6), rng.randint(1, 6)
            cap = f"h={gang * rng.randint(1, 2)}, " if rng.random() < 0.6 else ""  # spread over several starts
            stages.append(f"s{stage}: atom(b={{vcores: 1}}, g={gang}, {cap}l={length}m, w={gang * leases * length}m)")
        gap = "" if gaps is None else f", gap={rng.choice(gaps)}"
        made.append((planner, f"reservation r{index} {{ order({', '.join(stages)}{gap}) }}"))
    return made
