"""What a placement laid on the free-capacity tree holds, run by run, and the placer's cost of it, compiled.

A placement spread thin over a long span holds nothing over most of it: `pieces` gives the runs of steps where it
holds something, so laying it (ontree.tree_lay) and costing it read its leases' steps, not its span.

The cost is summed run by run (`placement_cost` here, for the tree and for the placer's copies that run compiled,
`pack.compiled_for`; runcost.runs_cost in numpy for the others; the two to the same bit): over each
stretch of steps where the placement holds the same bundles and a resource its same capacity and free, one term times
the stretch's length. A placement of a thousand one-minute leases over a day of one-second steps meets a few dozen
such stretches: the steps are still read to find them, but the two divisions of a term are made once a stretch, where
the sum step by step made them 86,400 times a resource (tests/planner/agents/test_treecost.py holds the two to each
other, test_placer_shortcuts.py each to the sum step by step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from planner.core.jit import inline_kernel, kernel

if TYPE_CHECKING:
    from planner.agents.greedy.solution import Solution


def solution_cost(solution: Solution, capacity: np.ndarray, free: np.ndarray, origin: int, laid: bool) -> float:
    """Placer.cost of a solution, placement by placement through `placement_cost`: `capacity` on the plan's step
    axis, `free` (the tree's view or a placer's copy) from step `origin` of it."""
    total = 0.0
    for placement in solution:
        base, end = placement.first_start, placement.last_end
        task = placement.task
        total += placement_cost(capacity[:, base:end], free[:, base - origin:end - origin], task.demand,
                                placement.starts, placement.gangs, task.length, task.gang, laid)
    return total


@kernel
def pieces(starts: np.ndarray, gangs: np.ndarray,
           length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The runs [lo, hi) where leases of `length` steps starting at `starts` (`gangs` at each) hold a constant,
    nonzero count: their lo, hi and count, in step order."""
    count = starts.shape[0]
    points = np.empty(2 * count, dtype=np.int64)
    deltas = np.empty(2 * count, dtype=np.int64)
    for i in range(count):
        points[i], deltas[i] = starts[i], gangs[i]
        points[count + i], deltas[count + i] = starts[i] + length, -gangs[i]
    order = np.argsort(points, kind="mergesort")
    los = np.empty(2 * count, dtype=np.int64)
    his = np.empty(2 * count, dtype=np.int64)
    held = np.empty(2 * count, dtype=np.int64)
    running, found, i = 0, 0, 0
    while i < 2 * count:
        here = points[order[i]]
        while i < 2 * count and points[order[i]] == here:
            running += deltas[order[i]]
            i += 1
        if i < 2 * count and running != 0:
            los[found], his[found], held[found] = here, points[order[i]], running
            found += 1
    return los[:found], his[:found], held[:found]


@kernel
def placement_cost(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, starts: np.ndarray,
                   gangs: np.ndarray, length: int, gang: int, laid: bool) -> float:  # pragma: no cover
    """Placer.cost of one placement, run by run; `capacity` and `free` are sliced to its span (first start to last
    end). A run ends where the bundles held, the capacity or the free capacity change, or the placement holds nothing
    (the same runs `runs_cost` finds); steps without capacity add nothing, as in the sum step by step. Not `laid`:
    `free` does not hold the placement yet, and each step is read as laying it would leave it (ontree.tree_lay's
    subtraction, to the bit)."""
    los, his, held = pieces(starts, gangs, length)
    base = starts.min()
    total = 0.0
    for r in range(demand.shape[0]):
        if demand[r] == 0:
            continue
        run_start, run_bundles, run_capacity, run_free, last = -2, 0, 0.0, 0.0, -2
        for k in range(los.shape[0]):
            bundles = held[k] * gang
            for t in range(los[k] - base, his[k] - base):
                c, f = capacity[r, t], free[r, t]
                if not laid:
                    f = f - demand[r] * float(bundles)
                if t == last + 1 and bundles == run_bundles and c == run_capacity and f == run_free:
                    last = t
                    continue
                if run_start >= 0 and run_capacity > 0:
                    total += _term(demand[r], run_bundles, run_capacity, run_free) * float(last + 1 - run_start)
                run_start, run_bundles, run_capacity, run_free, last = t, bundles, c, f, t
        if run_start >= 0 and run_capacity > 0:
            total += _term(demand[r], run_bundles, run_capacity, run_free) * float(last + 1 - run_start)
    return total


@inline_kernel
def _term(demand: float, bundles: int, capacity: float, free: float) -> float:  # pragma: no cover
    """Placer.cost's term at one step: the placement's share of capacity, weighted up by the load there."""
    share = (demand * float(bundles)) / capacity
    load = 1.0 - free / capacity
    return share * (1.0 + load)
