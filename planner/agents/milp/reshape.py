"""Greedy shapes for a plan the MILP decided: fewer allocation changes in milliseconds, before any model.

The acceptance model picks any vertex of its polytope, so the leases it places rise and fall
from step to step; GREE-L's flattest shapes (and GREE's tallest) change far less. Two moves
bring those shapes in while keeping every acceptance:
- `refill`: the whole accepted set placed again by GREE-L (or GREE), in a few orders, on the
  plan without them; the few it misses keep the solver's shapes, put down first, and the
  rest is placed again around them, until nothing is missed;
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
from planner.agents.milp.solvers import Clock
from planner.core.compile import compile_reservation
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


def refill(base: Plan, batch: list[tuple[Reservation, datetime]], placed: dict[str, list[Allocation]],
           deadline: float, clock: Clock = time.perf_counter) -> dict[str, list[Allocation]] | None:
    """The fewest-changes plan of the same set as `placed` (a valid plan on `base`) that `pinned_fill` finds with
    GREE-L or GREE and each of `orders`, tried until `deadline` (on `clock`); None if none."""
    best: tuple[int, dict[str, list[Allocation]]] | None = None
    tries = orders(base, batch, placed)
    for agent in GREEDY_SHAPES:  # GREE-L's flat shapes first: on the benchmark's batches GREE's had 1.7-3.2x changes
        for order in tries:
            if clock() >= deadline:
                return None if best is None else best[1]
            found = pinned_fill(agent, base, order, placed, deadline, clock)
            total = sum(changes(allocations) for allocations in found.values())
            if best is None or total < best[0]:
                best = (total, found)
    return None if best is None else best[1]


def orders(base: Plan, batch: list[tuple[Reservation, datetime]],
           placed: dict[str, list[Allocation]]) -> list[list[tuple[Reservation, datetime]]]:
    """The accepted of `batch` in the orders worth a refill, best first: latest planned start first (each then
    finds the room it had left; on the benchmark's batches GREE-L fits all but one or two so), latest window
    first, the batch's own order (GREE-L's plan when it accepted the same set), and by value."""
    chosen = [(r, when) for r, when in batch if r.name in placed]
    first = {name: min((a.start for a in allocations), default=0) for name, allocations in placed.items()}
    opens = {r.name: min(i.task.lo for i in compile_reservation(r, when, base.clock, base.now_step, base.resources))
             for r, when in chosen}
    return [sorted(chosen, key=lambda item: -first[item[0].name]),
            sorted(chosen, key=lambda item: -opens[item[0].name]),
            chosen,
            sorted(chosen, key=lambda item: -item[0].value)]


def pinned_fill(agent: GreedyAgent, base: Plan, order: list[tuple[Reservation, datetime]],
                placed: dict[str, list[Allocation]], deadline: float,
                clock: Clock = time.perf_counter) -> dict[str, list[Allocation]]:
    """Every reservation of `order` on `base`: placed by `agent` one by one, except those it missed in an earlier
    round, which keep their shapes from `placed` (put down first). Rounds repeat until nothing is missed; at
    worst all are pinned and the answer is `placed` itself (also at `deadline`), a valid plan of the same set."""
    pinned: set[str] = set()
    while clock() < deadline:
        scratch = base.copy()
        found: dict[str, list[Allocation]] = {}
        for reservation, submitted in order:
            if reservation.name in pinned:
                found[reservation.name] = placed[reservation.name]
                scratch.add(Accepted(reservation, submitted, found[reservation.name]))
        missed = _fill_rest(agent, scratch, [item for item in order if item[0].name not in pinned], found)
        if not missed:
            return found
        pinned.update(missed)
    return {reservation.name: placed[reservation.name] for reservation, _ in order}


def _fill_rest(agent: GreedyAgent, scratch: Plan, order: list[tuple[Reservation, datetime]],
               found: dict[str, list[Allocation]]) -> list[str]:
    """Place `order` by `agent` on `scratch` (changed; `found` gains each placement); the names it missed."""
    missed = []
    for reservation, submitted in order:
        outcome = agent.place(scratch, reservation, submitted)
        if outcome.allocations is None:
            missed.append(reservation.name)
            continue
        found[reservation.name] = list(outcome.allocations)
        scratch.add(Accepted(reservation, submitted, found[reservation.name]))
    return missed


def reshape(plan: Plan, names: Iterable[str], deadline: float, clock: Clock = time.perf_counter) -> ReshapeReport:
    """Re-place each of `names` in `plan` (in place) by the greedy agents on the plan of the others, where that
    has fewer changes; passes repeat while something moved, until `deadline` (on `clock`)."""
    names = [n for n in names if n in plan.accepted]
    report = ReshapeReport(changes_before=sum(changes(plan.accepted[n].allocations) for n in names))
    movable = [n for n in names if all(a.start >= plan.now_step for a in plan.accepted[n].allocations)]
    moved: set[str] = set()
    while movable and report.passes < PASSES and clock() < deadline:
        report.passes += 1
        order = sorted(movable, key=lambda n: -changes(plan.accepted[n].allocations))
        now_moved = [n for n in order if clock() < deadline and _replace(plan, n)]
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
