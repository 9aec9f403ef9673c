"""When the search of a whole request may give up early: nothing is searched after it fails, so the budget it
leaves is read by nobody, and a piece that finds no room even alone proves that no placement exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.agents.greedy.room import AtomRoom
from planner.agents.greedy.solution import Solution
from planner.core.compile import AtomTask, GroupTask, Task

if TYPE_CHECKING:
    from planner.agents.greedy.placer import Placer


def has_room(placer: Placer, atom: AtomTask, lo: int, hi: int) -> bool:
    """Whether any placement of the atom inside [lo, hi) fits the placer's scratch as it is: GREE's latest placement
    finds one whenever one exists (tests/planner/agents/test_all_alone.py)."""
    return placer.place_atom(atom, lo, hi, False, AtomRoom(placer, atom, lo, hi)) is not None


class AllAlone:
    """Whether an `all`'s children each find room alone: the search of the whole request's `all` stops as soon as one
    does not (`hopeless`), for then no placement of the others leaves it room.

    Asked when a child offers no candidate. An atom is placed alone on the scratch as it was when the `all` began
    (the candidates laid for its siblings taken back for the test, then laid again): GREE's latest placement finds
    room whenever any placement of the atom has it, and laying only takes room away. A child that is not an atom is
    never tested; one that found room alone is not tested again. With no budget left, nothing more is found."""

    def __init__(self, placer: Placer, lo: int, hi: int):
        self.placer, self.lo, self.hi = placer, lo, hi
        self.fits: set[int] = set()  # ids of the children that found room alone
        self.hopeless = False

    def check(self, child: Task, laid: list[Solution]) -> None:
        placer = self.placer
        if placer.budget <= 0:
            self.hopeless = True
            return
        if not isinstance(child, AtomTask) or id(child) in self.fits:
            return
        if not laid:  # the scratch is as the `all` found it: this very search found no room
            self.hopeless = True
            return
        lo, hi = max(self.lo, child.lo), min(self.hi, child.hi)
        taken = laid if placer.lays else []
        for solution in reversed(taken):
            placer.apply(solution, -1)
        try:
            fits = has_room(placer, child, lo, hi)
        finally:
            for solution in taken:
                placer.apply(solution, +1)
        if fits:
            self.fits.add(id(child))
        else:
            self.hopeless = True


class StagesAlone:
    """Whether a stage of a whole request's `order` finds no room even alone: then no placement of the order exists,
    and its search stops (`hopeless`) instead of backtracking through the later stages' candidates.

    Each atom stage is placed alone, GREE's latest (it finds room whenever any placement has it), in the widest
    stretch the order leaves it: its own window, after the stages before it and before the stages after it, each
    taking at least its lease length. Only where nothing is laid while the order is searched (`Placer(lays=False)`),
    so that the scratch is as the order found it; asked once, and only after some atom has recorded the search's
    failure, which the long search would record first too (the reason stays the same)."""

    def __init__(self, placer: Placer, task: GroupTask, lo: int, hi: int):
        self.placer, self.task, self.lo, self.hi = placer, task, lo, hi
        self.asked = False
        self.found = False

    def hopeless(self) -> bool:
        placer = self.placer
        if self.asked or placer.failure is None:
            return self.found
        self.asked = True
        least = [child.length if isinstance(child, AtomTask) else 0 for child in self.task.children]
        before, after = 0, sum(least)
        for child, steps in zip(self.task.children, least, strict=True):
            after -= steps
            if isinstance(child, AtomTask):
                lo, hi = max(child.lo, self.lo + before), min(child.hi, self.hi - after)
                if not has_room(placer, child, lo, hi):
                    self.found = True
                    return True
            before += steps
        return False
