"""Smoothing a plan a few reservations at a time: fewer allocation changes, then load spread out.

An allocation change is a bundle started or stopped from one step to the next (each is a
container started or preempted). First each reservation is offered the greedy agents' shapes
on the plan of the others (`planner.agents.milp.reshape`: milliseconds each). One model
of the whole batch with the acceptances fixed did not improve on the acceptance answer in
20 s beyond small batches (`benchmarks/smooth.py`), so each accepted reservation is taken out of the plan in turn
and re-placed by a model of its own, the rest fixed: minimise its changes, then its
load-weighted cost, warm-started from where it is. When a pass removes little, the next
re-places each with its neighbours (those sharing most of its steps), in groups of 2, 4,
then up to `GROUP`: in a full plan nothing can move alone. A move is kept only when it
lowers the group's changes, or keeps them and spreads the plan's load (lower `crowding`,
a function of the whole plan, so moves never cycle): the plan only gets smoother, stays
valid (the model places the group in what the others leave free; the sharing policy is
checked) and keeps every acceptance. It stops when a pass in the largest groups moves
nothing, or at its time limit. Reservations holding leases before the plan's current step
stay where they are (their windows are clipped to the future), as do those already at
their fewest possible changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pulp

from planner.agents.milp.changes import changes
from planner.agents.milp.model import build, fixed_item, read_back, smoothness, warm_start
from planner.agents.milp.reshape import reshape
from planner.agents.milp.solvers import DEFAULT_BACKEND, Backend, Clock, bounded, get_backend
from planner.core.compile import AtomTask, Task, compile_reservation
from planner.core.plan import Accepted, Allocation, Plan

SUBPROBLEM_GAP = 0.05  # a group's model stops this close to its optimum: the next pass can do better
SUBPROBLEM_SECONDS = 1.0  # what one group's model may take at least, when the pass's time left allows
GROUP = 8  # at most this many reservations re-placed together: the seed and those sharing most of its steps
SLOW_PASS = 0.05  # a pass that removes less than this share of the changes: the groups grow
TIE_BREAK = 0.5  # the cost term, scaled to at most this many changes: it only breaks ties
OVERRUN = 0.05  # of the time limit (at most 1 s): what a model may take past its seconds, until measured


@dataclass
class SmoothReport:
    """What smoothing did: allocation changes before and after, who moved, how many models were solved."""

    changes_before: int = 0
    changes_after: int = 0
    moved: list[str] = field(default_factory=list)
    solved: int = 0
    passes: int = 0
    seconds: float = 0.0
    finished: bool = False  # a whole pass in the largest groups moved nothing (else time ran out)
    group: int = 1  # reservations re-placed together in the last pass
    reshaped: int = 0  # reservations given a greedy agent's shape (`planner.agents.milp.reshape`) before the models
    # The most a model took past the seconds it was given (handing it over, the solver's own overshoot, reading it
    # back): kept in hand when the next model is given its seconds, so that the last one too ends within the limit.
    overrun: float = 0.0


def crowding(plan: Plan, allocations: list[Allocation]) -> float:
    """The sum over steps and resources of the squared share of capacity in use with these allocations added to
    the plan: lower when load is spread (headroom kept everywhere). A function of the whole plan, so moves that
    lower it can never cycle."""
    capacity = plan.capacity
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(capacity > 0, (plan.used + plan.use_of(allocations)) / capacity, 0.0)
    return float((share * share).sum())


def smooth(plan: Plan, names: list[str] | None = None, time_limit: float = 10.0, backend: str = DEFAULT_BACKEND,
           gap: float = 1e-4, group: int = GROUP, clock: Clock = time.perf_counter,
           nodes: int | None = None) -> SmoothReport:
    """Smooth `names` (default: every accepted reservation) in `plan`, in place, within `time_limit` seconds on
    `clock`, each model within `nodes` nodes."""
    started = clock()
    deadline = started + time_limit
    names = [n for n in (plan.accepted if names is None else names) if n in plan.accepted]
    report = SmoothReport(overrun=min(1.0, OVERRUN * time_limit))
    report.changes_before = sum(changes(plan.accepted[n].allocations) for n in names)
    reshaped = reshape(plan, names, deadline, clock)  # greedy shapes first: milliseconds each, and most of the gain
    report.reshaped = len(reshaped.moved)
    movable = [n for n in names if all(a.start >= plan.now_step for a in plan.accepted[n].allocations)
               and changes(plan.accepted[n].allocations) > fewest_changes(plan, plan.accepted[n])]
    solve = bounded(get_backend(backend), nodes)
    moved: set[str] = set(reshaped.moved)
    size, stuck = 1, set[str]()  # stuck: moved nothing at this size since its neighbours last moved
    report.finished = not movable
    while movable and clock() < deadline - 0.05:
        report.passes += 1
        start = sum(changes(plan.accepted[n].allocations) for n in movable)
        changed = _pass(plan, movable, size, (deadline, clock), solve, gap, moved, stuck, report)
        if clock() >= deadline - 0.05:
            break  # cut short: whether it converged is unknown
        if not changed and size >= group:
            report.finished = True
            break
        if not changed or start - sum(changes(plan.accepted[n].allocations) for n in movable) < SLOW_PASS * start:
            size, stuck = min(group, 2 * size), set()  # little moves alone any more: re-place neighbours together
    report.group = size
    report.moved = sorted(moved)
    report.changes_after = sum(changes(plan.accepted[n].allocations) for n in names)
    report.seconds = clock() - started
    return report


def fewest_changes(plan: Plan, accepted: Accepted) -> int:
    """Changes no placement can go below: every atom placed runs at least one gang, started and stopped once
    (`all` and `order` place every child, `any` its cheapest)."""
    instances = compile_reservation(accepted.reservation, accepted.submitted, plan.clock, 0, plan.resources)
    held = {a.instance for a in accepted.allocations}
    return sum(_fewest(instance.task) for instance in instances if instance.index in held)


def _fewest(task: Task) -> int:
    if isinstance(task, AtomTask):
        return 2 * task.gang
    counts = [_fewest(child) for child in task.children]
    return min(counts) if task.kind == "any" else sum(counts)


def _pass(plan: Plan, movable: list[str], size: int, until: tuple[float, Clock], solve: Backend, gap: float,
          moved: set[str], stuck: set[str], report: SmoothReport) -> bool:
    """One pass over the movable reservations, most changes first, in groups of `size`, until the deadline on its
    clock (`until`); whether anything moved."""
    deadline, clock = until
    any_moved = False
    allowed = set(movable)
    order = [n for n in sorted(movable, key=lambda n: -changes(plan.accepted[n].allocations)) if n not in stuck]
    for index, name in enumerate(order):
        left = deadline - clock() - report.overrun
        if left < 0.05:
            break
        together = neighbours(plan, name, size, allowed)
        before = _span(plan, together)
        report.solved += 1
        seconds = min(left, max(SUBPROBLEM_SECONDS, left / (len(order) - index)))  # the time left, shared
        began = clock()
        placed = _move(plan, together, (seconds, clock), solve, gap)
        report.overrun = max(report.overrun, clock() - began - seconds)
        if placed:
            moved.update(together)
            # What the group left and where it went may let reservations there move again.
            after = _span(plan, together)
            freed = (min(before[0], after[0]), max(before[1], after[1]))
            stuck.difference_update([n for n in stuck if _overlaps(_span(plan, [n]), freed)])
            any_moved = True
        else:
            stuck.add(name)
    return any_moved


def neighbours(plan: Plan, name: str, count: int, allowed: set[str] | None = None) -> list[str]:
    """`name` and the `count - 1` other reservations (of `allowed`, by default any) sharing the most bundle-steps
    of its span with it."""
    if count <= 1:
        return [name]
    lo, hi = _span(plan, [name])
    overlap = []
    for other, accepted in plan.accepted.items():
        if other == name or (allowed is not None and other not in allowed):
            continue
        shared = sum(a.bundles * (min(hi, a.end) - max(lo, a.start)) for a in accepted.allocations
                     if a.start < hi and a.end > lo)
        if shared > 0:
            overlap.append((-shared, other))
    return [name] + [other for _, other in sorted(overlap)[:count - 1]]


def _span(plan: Plan, names: list[str]) -> tuple[int, int]:
    """First step and end of what these reservations hold."""
    allocations = [a for n in names for a in plan.accepted[n].allocations]
    if not allocations:
        return 0, 0
    return min(a.start for a in allocations), max(a.end for a in allocations)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _move(plan: Plan, names: list[str], within: tuple[float, Clock], solve: Backend, gap: float) -> bool:
    """Re-place these reservations together with the rest of the plan fixed, within seconds on a clock (`within`);
    keep the move only when smoother."""
    seconds, clock = within
    started = clock()
    current = {name: plan.remove(name) for name in names}
    try:
        items = [fixed_item(plan, accepted) for accepted in current.values()]
        model = build(items, plan.free(), plan.capacity, 0.0)
        ceiling = max(1.0, 2.0 * plan.capacity.shape[0] * max(1, len(model.usage)))
        model.problem.setObjective(smoothness(model) + (TIE_BREAK / ceiling) * (model.cost or 0))
        model.problem.sense = pulp.LpMinimize
        warm_start(model, {name: a.allocations for name, a in current.items()})
        left = seconds - (clock() - started)  # building the model counts too
        if left < 0.05:
            return False
        result = solve(model.problem, left, max(gap, SUBPROBLEM_GAP), True)
        if not result.has_solution:
            return False
        placed = read_back(model, set(names))
        before = _score(plan, [a.allocations for a in current.values()])
        after = _score(plan, list(placed.values()))
        if not (after[0] < before[0] or (after[0] == before[0] and after[1] < before[1] - 1e-9)):
            return False
        trial = plan.copy()
        for name, allocations in placed.items():
            if not trial.within_policy(current[name].reservation, allocations):
                return False
            trial.add(Accepted(current[name].reservation, current[name].submitted, allocations))
        current = {name: Accepted(a.reservation, a.submitted, placed[name]) for name, a in current.items()}
        return True
    finally:
        for accepted in current.values():
            plan.add(accepted)


def _score(plan: Plan, placements: list[list[Allocation]]) -> tuple[int, float]:
    """Allocation changes of the group, then the plan's crowding with the group placed so (the rest is fixed)."""
    return sum(changes(p) for p in placements), crowding(plan, [a for p in placements for a in p])
