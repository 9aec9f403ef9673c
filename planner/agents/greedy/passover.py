"""GREE's next candidates for an atom that its caller can use none of: what trying them costs, counted, not placed.

An `order` without a gap gives up on its stage's candidates that start no later than a start the stages before found
nothing for. Each of GREE's candidates ends a step before the one before it ends, and starts no later than it, so once
one is of no use none after it is. The search still charges the budget each would have taken (the rest of the
request's search gets what is left), and this counts it. Try i is the latest placement in [lo, bound_i): its last
lease starts at the latest start whose lease has a gang's room at every step, and the next try's window ends a step
before that lease does; the tries stop at the budget or at the first that finds nothing. A narrower window holds no
more, so those that find a placement come first: one placement at the last window answers the usual case, and halving
finds the first that fails otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.agents.greedy.pack import open_starts
from planner.core.compile import AtomTask

if TYPE_CHECKING:
    from planner.agents.greedy.placer import Placer
    from planner.agents.greedy.room import AtomRoom


def tries_left(placer: Placer, task: AtomTask, lo: int, bound: int, room: AtomRoom, limit: int) -> int:
    """The placements GREE's search of `task` tries from the window [lo, bound) on, within a budget of `limit`."""
    if limit <= 0:
        return 0
    if placer.tree is not None:
        origin = placer.origin
        starts = placer.tree.open_starts(task, lo - origin, bound - origin, limit) + origin
    else:
        starts = open_starts(room.over(lo, bound), task.length, limit) + lo
    count = int(starts.shape[0])
    bounds = [bound, *(int(start) + task.length - 1 for start in starts[:-1])]  # try i's window: [lo, bounds[i])

    def finds(i: int) -> bool:
        return placer.place_atom(task, lo, bounds[i], False, room) is not None

    if count and finds(count - 1):
        found = count  # every try with a start finds a placement; the one after them (if budget is left) none
    else:
        low, high = 0, max(0, count - 1)  # the first try that finds nothing is in [low, high]
        while low < high:
            middle = (low + high) // 2
            if finds(middle):
                low = middle + 1
            else:
                high = middle
        found = low
    return min(limit, found + 1)
