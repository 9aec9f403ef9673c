"""Offline re-planning: move accepted reservations within their windows to cut cost and changes,
and optionally admit reservations that were rejected. Accepted ones stay accepted (a hard
constraint); if the solver finds nothing better in time, the plan is left exactly as it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

import pulp

from planner.compile import compile_reservation
from planner.milp import DEFAULT_COST_WEIGHT, DEFAULT_GAP, DEFAULT_TIME_LIMIT, read_back, warm_start
from planner.model import Item, build, smoothness
from planner.plan import Accepted, Allocation, Plan
from planner.solvers import DEFAULT_BACKEND, get_backend
from rdl.tree import Reservation


@dataclass
class ReplanReport:
    """What re-planning did: who moved, who was admitted, and what the solver said."""

    status: str
    moved: list[str] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)
    seconds: float = 0.0


def replan(plan: Plan, admit: list[tuple[Reservation, datetime]] | None = None, backend: str = DEFAULT_BACKEND,
           time_limit: float = DEFAULT_TIME_LIMIT, gap: float = DEFAULT_GAP) -> ReplanReport:
    """Re-optimise every accepted reservation of `plan` (in place), admitting what of `admit` fits."""
    started = time.perf_counter()
    admit = admit or []
    kept = dict(plan.accepted)
    for name in kept:
        plan.remove(name)
    try:
        items = [Item(name, a.reservation.value, _instances(plan, a.reservation, a.submitted), fixed=True)
                 for name, a in kept.items()]
        items += [Item(r.name, r.value, _instances(plan, r, when)) for r, when in admit if r.name not in kept]
        model = build(items, plan.free(), plan.capacity, DEFAULT_COST_WEIGHT)
        warm_start(model, {name: a.allocations for name, a in kept.items()})
        solve = get_backend(backend)
        first = solve(model.problem, time_limit * 0.6, gap, True)
        if not first.has_solution:
            return _restore(plan, kept, first.status, started)
        accepted = {name for name, var in model.accept.items() if (var.varValue or 0) > 0.5}
        changes = smoothness(model)
        for name, var in model.accept.items():
            model.problem += (var == (1 if name in accepted else 0), f"fixed_{var.name}")
        model.problem.setObjective(changes)
        model.problem.sense = pulp.LpMinimize
        left = max(0.5, time_limit - (time.perf_counter() - started))
        second = solve(model.problem, left, gap, True)
        placed = read_back(model, accepted) if second.has_solution else None
        if placed is None:
            return _restore(plan, kept, second.status, started)
    except Exception:
        _restore(plan, kept, "error", started)
        raise
    report = ReplanReport(second.status, seconds=time.perf_counter() - started)
    submitted = {r.name: when for r, when in admit}
    for name, allocations in placed.items():
        if name in kept:
            previous = kept[name]
            plan.add(Accepted(previous.reservation, previous.submitted, allocations))
            if _moved(previous.allocations, allocations):
                report.moved.append(name)
        else:
            reservation = next(r for r, _ in admit if r.name == name)
            plan.add(Accepted(reservation, submitted[name], allocations))
            report.admitted.append(name)
    return report


def _instances(plan: Plan, reservation: Reservation, submitted: datetime) -> list:  # type: ignore[type-arg]
    return compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)


def _restore(plan: Plan, kept: dict[str, Accepted], status: str, started: float) -> ReplanReport:
    for name, accepted in kept.items():
        if name not in plan.accepted:
            plan.add(accepted)
    return ReplanReport(status, seconds=time.perf_counter() - started)


def _moved(before: list[Allocation], after: list[Allocation]) -> bool:
    def key(a: Allocation) -> tuple[int, str, int, int]:
        return a.instance, a.atom, a.start, a.bundles

    return sorted(map(key, before)) != sorted(map(key, after))
