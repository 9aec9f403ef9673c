"""Greedy shapes for a plan the MILP decided: fewer allocation changes in milliseconds, before any model.

The acceptance model picks any vertex of its polytope, so the leases it places rise and fall
from step to step; GREE-L's flattest shapes (and GREE's tallest) change far less. Two moves
bring those shapes in while keeping every acceptance:
- `refill`: the whole accepted set submitted again to GREE-L (then GREE), in submission order
  and by value, on the plan without them; used when every one of them fits again;
- `reshape`: each accepted reservation, most changes first, taken out and placed again by
  GREE-L and GREE on the plan of the others; the fewer-changes placement is kept when it has
  fewer changes than where it was (the others are fixed, so the plan's changes only fall).
Both are greedy placements (policy checked, windows clipped to the plan's current step), so
every plan they leave is valid.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from planner.agents.greedy.agent import GreedyAgent
from planner.agents.milp.changes import changes
from planner.core.plan import Accepted, Allocation, Plan
from rdl.tree import Reservation

GREEDY_SHAPES = (GreedyAgent("gree-l", flat=True), GreedyAgent("gree", flat=False))  # flattest first
PASSES = 3  # re-placing one can free room for another; past three passes little moved on the benchmark's batches


@dataclass
class ReshapeReport:
    """What re-placing by the greedy agents did: changes before and after, who moved, how many passes."""

    changes_before: int = 0
    changes_after: int = 0
    moved: list[str] = field(default_factory=list)
    passes: int = 0


def refill(base: Plan, batch: list[tuple[Reservation, datetime]],
           names: set[str]) -> dict[str, list[Allocation]] | None:
    """The fewest-changes plan in which a greedy agent accepts every one of `names` again on `base`, submitting
    them in the batch's order or by value (highest first); None when no agent fits them all."""
    chosen = [(r, when) for r, when in batch if r.name in names]
    orders = (chosen, sorted(chosen, key=lambda item: -item[0].value))
    best: tuple[int, dict[str, list[Allocation]]] | None = None
    for agent in GREEDY_SHAPES:
        for order in orders:
            placed = _fill_all(agent, base.copy(), order)
            if placed is None:
                continue
            total = sum(changes(allocations) for allocations in placed.values())
            if best is None or total < best[0]:
                best = (total, placed)
    return None if best is None else best[1]


def _fill_all(agent: GreedyAgent, scratch: Plan,
              order: list[tuple[Reservation, datetime]]) -> dict[str, list[Allocation]] | None:
    """Every reservation of `order` placed by `agent` one by one on `scratch` (changed), or None at the first miss."""
    placed: dict[str, list[Allocation]] = {}
    for reservation, submitted in order:
        outcome = agent.place(scratch, reservation, submitted)
        if outcome.allocations is None:
            return None
        placed[reservation.name] = list(outcome.allocations)
        scratch.add(Accepted(reservation, submitted, placed[reservation.name]))
    return placed


def reshape(plan: Plan, names: Iterable[str], deadline: float) -> ReshapeReport:
    """Re-place each of `names` in `plan` (in place) by the greedy agents on the plan of the others, where that
    has fewer changes; passes repeat while something moved, until `deadline` (a `time.perf_counter()` value)."""
    names = [n for n in names if n in plan.accepted]
    report = ReshapeReport(changes_before=sum(changes(plan.accepted[n].allocations) for n in names))
    movable = [n for n in names if all(a.start >= plan.now_step for a in plan.accepted[n].allocations)]
    moved: set[str] = set()
    while movable and report.passes < PASSES and time.perf_counter() < deadline:
        report.passes += 1
        order = sorted(movable, key=lambda n: -changes(plan.accepted[n].allocations))
        now_moved = [n for n in order if time.perf_counter() < deadline and _replace(plan, n)]
        moved.update(now_moved)
        if not now_moved:
            break
    report.moved = sorted(moved)
    report.changes_after = sum(changes(plan.accepted[n].allocations) for n in names)
    return report


def _replace(plan: Plan, name: str) -> bool:
    """Place `name` again by the greedy agents on the plan without it; keep the fewest-changes placement when it
    has fewer changes than the current one (else the plan is left as it was)."""
    current = plan.remove(name)
    best, fewest = current.allocations, changes(current.allocations)
    for agent in GREEDY_SHAPES:
        outcome = agent.place(plan, current.reservation, current.submitted)
        if outcome.allocations is not None and changes(list(outcome.allocations)) < fewest:
            best, fewest = list(outcome.allocations), changes(list(outcome.allocations))
    plan.add(Accepted(current.reservation, current.submitted, best))
    return best is not current.allocations
