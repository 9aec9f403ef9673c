"""Offline re-planning: move accepted reservations within their windows to cut changes and cost,
and optionally admit reservations that were rejected. Accepted ones stay accepted (a hard
constraint); what the solver cannot improve in time is left exactly as it was.

Admission is one acceptance model with every accepted reservation fixed (`Item.fixed`): it
may move them to make room. Moving for smoothness is `planner.agents.milp.smooth`, one reservation (or
a few neighbours) at a time, which keeps every step's plan valid and only ever lowers the
allocation changes; one model of the whole plan did not improve the greedy plans of 200
reservations in 20 s (`benchmarks/smooth.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from planner.agents.milp.agent import DEFAULT_COST_WEIGHT, DEFAULT_GAP, DEFAULT_TIME_LIMIT
from planner.agents.milp.model import Item, build, fixed_item, read_back, warm_start
from planner.agents.milp.smooth import changes, smooth
from planner.agents.milp.solvers import DEFAULT_BACKEND, get_backend
from planner.core.compile import compile_reservation
from planner.core.plan import Accepted, Allocation, Plan
from rdl.tree import Reservation

ADMIT_SHARE = 0.6  # of the time limit for admission, when there is something to admit


@dataclass
class ReplanReport:
    """What re-planning did: who moved, who was admitted, the solver's status, and the changes smoothed away."""

    status: str
    moved: list[str] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    seconds: float = 0.0
    changes_before: int = 0
    changes_after: int = 0


def replan(plan: Plan, admit: list[tuple[Reservation, datetime]] | None = None, backend: str = DEFAULT_BACKEND,
           time_limit: float = DEFAULT_TIME_LIMIT, gap: float = DEFAULT_GAP) -> ReplanReport:
    """Re-optimise every accepted reservation of `plan` (in place), admitting what of `admit` fits.

    Status: the admission solve's when there was something to admit and it answered with no plan;
    otherwise `feasible` when smoothing converged and `timeout` when its time ran out first."""
    started = time.perf_counter()
    before = {name: list(a.allocations) for name, a in plan.accepted.items()}
    changes_before = sum(changes(a) for a in before.values())
    status: str | None = None
    admitted: list[str] = []
    candidates = [(r, when) for r, when in admit or [] if r.name not in plan.accepted]
    if candidates:
        admitted, status = _admit(plan, candidates, backend, time_limit * ADMIT_SHARE, gap)
    left = time_limit - (time.perf_counter() - started)
    smoothed = smooth(plan, list(plan.accepted), max(0.0, left), backend, gap)
    if status is None:
        status = "feasible" if smoothed.finished else "timeout"
    moved = sorted(name for name, allocations in before.items() if _moved(allocations, plan.accepted[name].allocations))
    after = sum(changes(plan.accepted[name].allocations) for name in before)
    return ReplanReport(status, moved, admitted, time.perf_counter() - started, changes_before, after)


def _admit(plan: Plan, admit: list[tuple[Reservation, datetime]], backend: str, time_limit: float,
           gap: float) -> tuple[list[str], str | None]:
    """Admit what fits of `admit`, moving the accepted ones if need be (all stay accepted). Nothing changes
    unless the solver answers with a plan that admits someone and keeps every user within the sharing
    policy. Returns the admitted names, and the solver's status when it answered with no plan (else None)."""
    kept = {name: plan.remove(name) for name in list(plan.accepted)}
    placed: dict[str, list[Allocation]] | None = None
    try:
        items = [fixed_item(plan, accepted) for accepted in kept.values()]
        items += [Item(r.name, r.value, _instances(plan, r, when)) for r, when in admit]
        model = build(items, plan.free(), plan.capacity, DEFAULT_COST_WEIGHT)
        warm_start(model, {name: a.allocations for name, a in kept.items()})
        result = get_backend(backend)(model.problem, time_limit, gap, True)
        if result.has_solution:
            placed = read_back(model, {name for name, var in model.accept.items() if (var.varValue or 0) > 0.5})
            placed = _within_policy(plan, kept, admit, placed)
    finally:
        for name, accepted in kept.items():
            allocations = placed[name] if placed is not None else accepted.allocations
            plan.add(Accepted(accepted.reservation, accepted.submitted, allocations))
    admitted = []
    for reservation, submitted in admit:
        if placed is not None and reservation.name in placed:
            plan.add(Accepted(reservation, submitted, placed[reservation.name]))
            admitted.append(reservation.name)
    return admitted, None if result.has_solution else result.status


def _within_policy(plan: Plan, kept: dict[str, Accepted], admit: list[tuple[Reservation, datetime]],
                   placed: dict[str, list[Allocation]]) -> dict[str, list[Allocation]] | None:
    """`placed` when it admits someone and every reservation in it keeps its user within the sharing policy
    (the model knows no user limits), else None (the plan stays as it was)."""
    new = [(r, when) for r, when in admit if r.name in placed]
    if not new or any(name not in placed for name in kept):
        return None  # admitting nobody is no reason to move anyone (and everyone accepted stays so)
    trial = plan.copy()
    everyone = [(a.reservation, a.submitted) for a in kept.values()] + new
    for reservation, submitted in everyone:
        if not trial.within_policy(reservation, placed[reservation.name]):
            return None
        trial.add(Accepted(reservation, submitted, placed[reservation.name]))
    return placed


def _instances(plan: Plan, reservation: Reservation, submitted: datetime) -> list:  # type: ignore[type-arg]
    return compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)


def _moved(before: list[Allocation], after: list[Allocation]) -> bool:
    def key(a: Allocation) -> tuple[int, str, int, int]:
        return a.instance, a.atom, a.start, a.bundles

    return sorted(map(key, before)) != sorted(map(key, after))
