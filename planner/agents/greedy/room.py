"""One atom's room on a placer's scratch: the gangs that fit at each step of its window."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from planner.agents.greedy.pack import gang_room
from planner.core.compile import AtomTask

if TYPE_CHECKING:
    from planner.agents.greedy.placer import Placer


class AtomRoom:
    """One atom's gangs per step over [lo, hi), computed when first asked and sliced for every candidate after.

    Between two candidates of one atom the scratch is as it was when the atom's search began: a candidate's own
    placement, and whatever later searches laid on top of it, are taken back before the next one is made (the
    generators nest), so its room does not change."""

    def __init__(self, placer: Placer, task: AtomTask, lo: int, hi: int):
        self.placer, self.task, self.lo, self.hi = placer, task, lo, hi
        self.room: np.ndarray | None = None

    def over(self, lo: int, hi: int) -> np.ndarray:
        """The room of steps [lo, hi), inside the atom's [lo, hi)."""
        if self.room is None:
            free, origin, task = self.placer.free, self.placer.origin, self.task
            self.room = gang_room(free[:, self.lo - origin:self.hi - origin], task.demand, task.gang,
                                  task.parallelism)
        return self.room[lo - self.lo:hi - self.lo]
