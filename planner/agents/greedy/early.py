"""`placement=early`: the greedy search on the reversed time axis, so every piece goes as early and as tall as it fits.

GREE's placer puts each piece as late as it goes. On an axis where step t is `steps - t` (and an `order`'s stages run
backwards: `compile.mirrored`), "as late as possible" is "as early as possible" on the plan's axis, which is what
YARN's favor-early-allocation does; one placer serves both directions. The placement is then mirrored back. Both
greedy agents (GREE and GREE-L) place an early reservation this way: spreading it flat would not be "as early as
it goes".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from planner.agents.base import Outcome
from planner.agents.explain import capacity_reason, clipped_reason
from planner.agents.greedy.placer import Placer
from planner.agents.greedy.solution import AtomFailure, Solution
from planner.core.compile import Instance, mirrored
from planner.core.decision import Reason
from planner.core.plan import Allocation, Plan
from rdl.tree import Reservation


def search_early(plan: Plan, reservation: Reservation, instances: list[Instance], free: np.ndarray, origin: int,
                 budget: int, reasons: bool = True) -> Outcome:
    """Place every instance as early as it goes on `free` (the plan's free capacity over steps [origin, origin +
    free's length)); all or nothing, with the reason of the first instance that finds no room."""
    steps = plan.clock.steps
    placer = Placer(np.ascontiguousarray(free[:, ::-1]), plan.capacity[:, ::-1], flat=False,
                    origin=steps - origin - free.shape[1])
    held: list[Iterator[Solution]] = []  # open searches keep their placements applied to the scratch
    placed: list[tuple[Instance, Solution]] = []
    for instance in instances:
        task = mirrored(instance.task, steps)
        placer.begin(budget)
        search = placer.search(task, task.lo, task.hi, (task.lo, task.hi))
        solution = next(search, None)
        if solution is None:
            if not reasons:
                return Outcome(None, Reason("capacity", "no placement found"))
            failure = unmirrored(placer.failure, steps)
            return Outcome(None, clipped_reason(instance, plan, reservation)
                           or capacity_reason(failure, instance, plan, reservation,
                                              budget if placer.budget <= 0 else None))
        held.append(search)
        placed.append((instance, solution))
    return Outcome(tuple(early_allocations(placed, steps)))


def unmirrored(failure: AtomFailure | None, steps: int) -> AtomFailure | None:
    """Where a failed atom was looking, on the plan's axis."""
    if failure is None:
        return None
    task = replace(failure.task, lo=steps - failure.task.hi, hi=steps - failure.task.lo)
    return AtomFailure(task, steps - failure.hi, steps - failure.lo)


def early_allocations(placed: list[tuple[Instance, Solution]], steps: int) -> list[Allocation]:
    """Placements made on the reversed axis as the plan's allocations: one per atom, instance and start, in time
    order (as the late search gives them)."""
    allocations = []
    for instance, solution in placed:
        for placement in solution:
            task = placement.task
            for start, gangs in zip(placement.starts.tolist(), placement.gangs.tolist(), strict=True):
                begins = steps - start - task.length
                allocations.append(Allocation(task.label, begins, begins + task.length, gangs * task.gang,
                                              task.atom.bundle, instance.index))
    return sorted(allocations, key=lambda a: (a.instance, a.start, a.atom))
