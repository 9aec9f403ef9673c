"""Greedy placement of a task tree on a scratch copy of free capacity, with bounded backtracking.

Each node offers candidate placements, most preferred first, as a generator: a yielded
candidate is applied to the scratch and undone when the generator moves on or closes.
`order` places its last stage first and backtracks into later stages when an earlier
one cannot fit (YARN's greedy gives up there); `any` tries every alternative and offers
the cheapest first. A shared budget bounds the number of atom placements tried. The `all`
that is a whole request's task stops as soon as one child finds no room even alone, where
backtracking would spend the budget on placements of its siblings that cannot help; the
whole request's `order`, once a stage has found nothing, stops if one of its stages finds
no room even alone in the widest stretch the others leave it; an `order` with a gap passes
over the starts of a stage that the stage before cannot reach, and a one-lease stage's next
candidates go straight to the latest start the stage before can reach (one step at a time, they
spent the budget before they got there); one without a gap counts, rather than places, the next
candidates of a stage that start too early to be used (passover.py).

Two strategies share this search. GREE puts every atom as late and as tall as it
goes. GREE-L first spreads each atom as flat as the free capacity allows over its share
of the window (an `order` splits its window among its stages in proportion to their
work), then falls back to GREE's placements.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from planner.agents.greedy import pack
from planner.agents.greedy.giveup import AllAlone, StagesAlone
from planner.agents.greedy.pack import Blocks, flattest, latest
from planner.agents.greedy.passover import tries_left
from planner.agents.greedy.room import AtomRoom
from planner.agents.greedy.runcost import runs_cost
from planner.agents.greedy.solution import AtomFailure, AtomPlacement, Solution, first_start, last_end, only_atom
from planner.core.compile import AtomTask, GroupTask, Task, task_work

if TYPE_CHECKING:
    from planner.agents.greedy.ontree import TreeView

DEFAULT_BUDGET = 64


class Placer:
    """Searches placements for task trees on `free` (resources × steps), which it mutates.

    `free` may cover only the steps the search can reach, from step `origin` of the plan on: placements and
    `capacity` (the whole plan's) stay on the plan's step axis. With a `tree` (ontree.py), `free` is the plan's own
    free-capacity tree, laid on in place and taken back, and the searches it answers (`TreeView.answers`) ask it.
    Without `lays` it offers candidates without laying them, for tasks `searched_apart`. Without `refutes` a whole
    request's `order` never stops early (`StagesAlone`).
    """

    def __init__(self, free: np.ndarray, capacity: np.ndarray, flat: bool, budget: int = DEFAULT_BUDGET,
                 origin: int = 0, tree: TreeView | None = None, lays: bool = True, refutes: bool = True):
        self.free = tree.free if tree is not None else free
        self.tree = tree
        self.origin = origin
        self.capacity = capacity
        self.flat = flat
        self.budget = budget
        self.refunds = budget  # budget an `any`'s alternatives that find nothing may give back (_ranked)
        self.lays = lays
        self.refutes = refutes
        self.failure: AtomFailure | None = None
        self.root: Task | None = None  # the task of the search a caller began (`search`, `first`)
        self.short: tuple[AtomTask, int | None] | None = None  # an atom whose first candidate ended too early

    def begin(self, budget: int) -> None:
        """Start the search of one instance: `budget` placements, and as many again that an `any`'s alternatives which
        find nothing may give back (_ranked)."""
        self.budget, self.refunds, self.failure = budget, budget, None

    # -- applying candidates -----------------------------------------------------------

    def apply(self, solution: Solution, sign: int) -> None:
        for placement in solution:
            if self.tree is not None:
                self.tree.lay(placement.starts - self.origin, placement.gangs, placement.task, sign)
                continue
            task = placement.task
            base = placement.first_start - self.origin
            if placement.starts.shape[0] == 1:  # one block: the same product at each step, made once
                count = float(int(placement.gangs[0]) * task.gang)
                self.free[:, base:base + task.length] -= (task.demand * sign)[:, None] * count
                continue
            from planner.core.laying import lay  # many blocks: `held` and its outer product in one compiled pass

            offsets = placement.starts - placement.first_start
            lay(self.free, base, offsets, offsets + task.length, placement.gangs * task.gang, task.demand * sign)

    def _offer(self, solution: Solution) -> Iterator[Solution]:
        if not self.lays:
            yield solution
            return
        self.apply(solution, +1)
        try:
            yield solution
        finally:
            self.apply(solution, -1)

    def cost(self, solution: Solution, laid: bool = True) -> float:
        """What a placement costs: its share of capacity, weighted up where the plan is already loaded, summed over
        the stretches of steps where nothing of that changes (treecost.py). Not `laid`: an atom's placement, not on
        the scratch, costed as it would be laid there."""
        if self.tree is not None or pack.compiled_for(self.free.shape[1]):
            # compiled on the tree's view (reading the steps the placement holds only) and on copies where pack's
            # kernels are: the same sum to the bit
            from planner.agents.greedy.treecost import solution_cost

            return solution_cost(solution, self.capacity, self.free, self.origin, laid)
        total = 0.0
        for placement in solution:
            base, held = placement.held()
            capacity = self.capacity[:, base:base + held.shape[0]]
            free = self.free[:, base - self.origin:base - self.origin + held.shape[0]]
            total += runs_cost(capacity, free, placement.task.demand, held, laid)
        return total

    # -- candidates per node -----------------------------------------------------------

    def solutions(self, task: Task, lo: int, hi: int, preferred: tuple[int, int] | None = None,
                  min_end: int | None = None, ceiling: Ceiling | None = None) -> Generator[Solution, None, None]:
        """Candidate placements of `task` inside [lo, hi), applied while yielded; an atom's GREE candidates end by
        `ceiling.end` once the caller sets it."""
        lo, hi = max(lo, task.lo), min(hi, task.hi)
        if isinstance(task, AtomTask):
            yield from self._atom(task, lo, hi, preferred, min_end, ceiling)
        elif (only := only_atom(task)) is not None:  # an `all` of one atom is that atom (as `_all` would search it)
            yield from self.solutions(only, lo, hi, preferred)
        elif task.kind == "order":
            yield from self._order(task, lo, hi, preferred)
        elif task.kind == "all":
            yield from self._all(task, lo, hi, preferred)
        else:
            yield from self._any(task, lo, hi, preferred)

    def search(self, task: Task, lo: int, hi: int,
               preferred: tuple[int, int] | None = None) -> Generator[Solution, None, None]:
        """`solutions` of a whole request's task. Nothing is searched after it fails, so the budget it leaves is
        read by nobody, and an `all` may stop at a child that finds no room even alone (`AllAlone`)."""
        self.root = task
        return self.solutions(task, lo, hi, preferred)

    def first(self, task: Task, lo: int, hi: int, preferred: tuple[int, int] | None = None,
              whole: bool = True) -> Solution | None:
        """The first candidate `search` offers, left off the scratch: for a search whose caller reads nothing
        of the scratch after it (an atom's, or an `all` of one atom's, is then never laid; any other's is taken back
        at once). Not `whole`: the caller searches more with the budget this search leaves, so an `all` does not
        stop early."""
        self.root = task if whole else None
        if isinstance(task, GroupTask) and task.kind == "any":
            return self._first_of_any(task, max(lo, task.lo), min(hi, task.hi), preferred)
        if (only := only_atom(task)) is not None:  # a request of one gang
            return self._first_of_atom(only, max(lo, task.lo), min(hi, task.hi), preferred)
        if not isinstance(task, AtomTask):
            return _first_of(self.solutions(task, lo, hi, preferred))
        return self._first_of_atom(task, lo, hi, preferred)

    def _first_of_atom(self, task: AtomTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> Solution | None:
        """`_atom`'s first candidate, not laid, with what `_atom` notes when there is none."""
        lo, hi = max(lo, task.lo), min(hi, task.hi)
        candidates = self._atom_candidates(task, lo, hi, preferred)
        found = next(candidates, None)
        candidates.close()
        if found is None:  # no budget for even one (as `_atom`, which then records no failure)
            return None
        if found[0] is None:
            self._fell_short(task, None)
            if self.failure is None:
                self.failure = AtomFailure(task, lo, hi)
        return found[0]

    def place_atom(self, task: AtomTask, lo: int, hi: int, spread: bool, room: AtomRoom) -> Solution | None:
        if hi - lo < task.length:
            return None
        blocks: Blocks | None
        if self.tree is not None and self.tree.answers(spread, task.length):
            blocks = self.tree.blocks(spread, task, lo - self.origin, hi - self.origin)
        else:
            blocks = (flattest if spread else latest)(room.over(lo, hi), task.length, task.leases)
        if blocks is None:
            return None
        return [AtomPlacement(task, blocks[0] + lo, blocks[1])]

    def _atom(self, task: AtomTask, lo: int, hi: int, preferred: tuple[int, int] | None,
              min_end: int | None, ceiling: Ceiling | None = None) -> Iterator[Solution]:
        seen: set[tuple[bytes, bytes]] = set()
        first, latest = True, True
        for candidate, latest_first in self._atom_candidates(task, lo, hi, preferred, ceiling):
            if candidate is None:
                if first:
                    self._fell_short(task, None)
                    if self.failure is None:
                        self.failure = AtomFailure(task, lo, hi)
                return
            first = False
            if min_end is not None and latest_first and last_end(candidate) < min_end:
                # GREE's candidates (GREE-L's after its flat ones) only end earlier from here on: trying them
                # would spend the shared budget on nothing. The first of them ends as late as any placement of the
                # atom in the window can (GREE-L's flat ones too): the next stage of an `order` with a gap reads it.
                if latest:
                    self._fell_short(task, last_end(candidate))
                return
            latest = latest and not latest_first
            key = candidate[0].key()
            if key in seen:
                continue
            seen.add(key)
            if min_end is not None and last_end(candidate) < min_end:
                continue
            yield from self._offer(candidate)

    def _atom_candidates(self, task: AtomTask, lo: int, hi: int, preferred: tuple[int, int] | None,
                         ceiling: Ceiling | None = None) -> Generator[tuple[Solution | None, bool], None, None]:
        """Candidates, each with whether it is GREE's latest-first kind (each one ends before the one before)."""
        room = AtomRoom(self, task, lo, hi)
        if self.flat:
            for a, b in ([(max(lo, preferred[0]), min(hi, preferred[1]))] if preferred else []) + [(lo, hi)]:
                if self.budget <= 0:
                    return
                self.budget -= 1
                spread = self.place_atom(task, a, b, True, room)
                if spread is not None:
                    yield spread, False
        bound = hi
        while self.budget > 0:
            self.budget -= 1
            placed = self.place_atom(task, lo, bound, False, room)
            if placed is not None and ceiling is not None and ceiling.after is not None \
                    and first_start(placed) <= ceiling.after:  # of no use, nor is any after it: charged, not placed
                self.budget -= tries_left(self, task, lo, last_end(placed) - 1, room, self.budget)
                return
            yield placed, True
            if placed is None:
                return
            bound = last_end(placed) - 1
            if ceiling is not None and ceiling.end is not None:
                bound = min(bound, ceiling.end)

    def _order(self, task: GroupTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> Iterator[Solution]:
        shares = self._shares(task, preferred or (lo, hi)) if self.flat else [None] * len(task.children)

        # Without a gap, an earlier stage that found no room before `start` finds none before an earlier
        # start either: GREE's next candidates only start earlier, so one failure ends the search there;
        # GREE-L's first candidates are flat and may start later than its last ones, so it tries a few.
        give_up_after = None if task.gap is not None else (3 if self.flat else 1)
        alone = StagesAlone(self, task, lo, hi) if task is self.root and self.refutes and not self.lays else None

        def stages(index: int, end: int, next_start: int | None) -> Iterator[Solution]:
            min_end = next_start - task.gap if next_start is not None and task.gap is not None else None
            failed_below, failures = None, 0
            before = task.children[index - 1] if index > 0 else None
            # The latest the stage before can end before a start it could not meet (None: no room at all).
            reach: tuple[int, int | None] | None = None
            failed: dict[int, int] = {}  # starts the stages before found nothing for, and the budget that took
            ceiling = Ceiling()
            for placed in self.solutions(task.children[index], lo, end, shares[index], min_end, ceiling):
                if min_end is not None and last_end(placed) < min_end:
                    continue
                if index == 0:
                    yield placed
                    continue
                start = first_start(placed)
                if failed_below is not None and start <= failed_below:
                    continue
                if task.gap is not None:
                    skipped = self._passed_over(start, task.gap, failed, reach)
                    if skipped:
                        self.budget -= min(skipped, self.budget)
                        continue
                self.short, budget = None, self.budget
                found = False
                for earlier in stages(index - 1, start, start):
                    found = True
                    yield earlier + placed
                if not found and alone is not None and alone.hopeless():
                    return
                if not found and task.gap is not None:
                    failed[start] = budget - self.budget
                    if self.short is not None and self.short[0] is before:
                        reach = (start, self.short[1])
                        if not self._jumped(task.children[index], start, task.gap, reach, ceiling):
                            return
                if not found and give_up_after is not None:
                    failures += 1
                    if failures >= give_up_after:
                        return
                    failed_below = ceiling.after = start

        yield from stages(len(task.children) - 1, hi, None)

    @staticmethod
    def _passed_over(start: int, gap: int, failed: dict[int, int], reach: tuple[int, int | None] | None) -> int:
        """The budget the stages before a stage of an `order` with a gap would spend finding nothing for a start
        of it, when that is known without searching; else 0. They read only the steps before `start`, which this
        stage's candidates never hold, so: the same start finds nothing again (a search given less budget than
        it took stops on the way); and before an earlier start, GREE's search of the stage before ends where it
        ended (or finds no room) again, after one placement."""
        if start in failed:
            return failed[start]
        unreached = reach is not None and start <= reach[0] and (reach[1] is None or reach[1] < start - gap)
        return 1 if unreached else 0

    @staticmethod
    def _jumped(stage: Task, start: int, gap: int, reach: tuple[int, int | None] | None, ceiling: Ceiling) -> bool:
        """Once `reach` is known (at `start`, where the stage before found nothing): make the stage's next GREE
        candidates start where the stage before can reach, rather than one step earlier each, each charged to the
        budget (and passed over). A one-lease
        atom's next candidates start earlier and earlier, each its end less its length, so: they may end no later than
        the stage before's latest end, plus the gap, plus the length; none, when the stage before has no room at all.
        Whether the stage has more candidates worth trying (False: stop)."""
        if not isinstance(stage, AtomTask) or stage.leases != 1 or reach is None or start > reach[0]:
            return True
        if reach[1] is None:
            return False
        ceiling.end = reach[1] + gap + stage.length
        return True

    def _fell_short(self, task: AtomTask, end: int | None) -> None:
        """Note that the atom's first candidate, its latest placement, ended at `end`, before the step it had to
        reach, or that it had none: an `order` with a gap skips the starts of its next stage that the atom cannot
        reach either."""
        self.short = (task, end)

    def _shares(self, task: GroupTask, window: tuple[int, int]) -> list[tuple[int, int] | None]:
        """Each stage's part of the window, in proportion to its work (rounded half to even, as numpy's `round`
        of the running sums; in floats, not arrays, which cost 11 us for a handful of stages against 2)."""
        works = [task_work(child) for child in task.children]
        total = sum(works) or 1.0
        start, span = int(window[0]), int(window[1]) - int(window[0])
        running, bounds = 0.0, [start]
        for work in works:
            running += float(work)
            bounds.append(round(start + span * running / total))
        return [(bounds[i], bounds[i + 1]) for i in range(len(works))]

    def _all(self, task: GroupTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> Iterator[Solution]:
        alone = AllAlone(self, lo, hi) if task is self.root else None
        for children in self._all_orders(task, lo, hi):
            yield from self._all_in_order(children, lo, hi, preferred, alone)
            if alone is not None and alone.hopeless:
                return

    def _all_in_order(self, children: list[Task], lo: int, hi: int, preferred: tuple[int, int] | None,
                      alone: AllAlone | None) -> Iterator[Solution]:
        def rest(index: int, laid: list[Solution]) -> Iterator[Solution]:
            found = False
            for placed in self.solutions(children[index], lo, hi, preferred):
                found = True
                if index == len(children) - 1:
                    yield placed
                    continue
                for others in rest(index + 1, [*laid, placed]):
                    yield placed + others
                if alone is not None and alone.hopeless:
                    return
            if not found and alone is not None:
                alone.check(children[index], laid)

        yield from rest(0, [])

    @staticmethod
    def _all_orders(task: GroupTask, lo: int, hi: int) -> list[list[Task]]:
        """Orders to place `all`'s children in: least room to spare first (the most constrained child
        takes its place before the others crowd it), then heaviest first, then as written."""
        def slack(child: Task) -> int:
            return (min(hi, child.hi) - max(lo, child.lo)) - (child.length if isinstance(child, AtomTask) else 0)

        orders: list[list[Task]] = []
        for key in (slack, lambda c: -task_work(c), None):
            order = sorted(task.children, key=key) if key else list(task.children)  # type: ignore[arg-type]
            if order not in orders:
                orders.append(order)
        return orders

    def _any(self, task: GroupTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> Iterator[Solution]:
        yield from self._in_rank(task, self._ranked(task, lo, hi, preferred), lo, hi, preferred)

    def _in_rank(self, task: GroupTask, ranked: list[_Alternative], lo: int, hi: int,
                 preferred: tuple[int, int] | None) -> Generator[Solution, None, None]:
        """Every candidate of the ranked alternatives, cheapest alternative first."""
        for alternative in ranked:
            yield from self.solutions(task.children[alternative.index], lo, hi, preferred)

    def _ranked(self, task: GroupTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> list[_Alternative]:
        """The alternatives of an `any` that place, cheapest first (then as written), with their first candidates.
        An alternative that finds nothing gives back the budget it spent (up to `refunds` over the instance's search,
        so the work stays bounded): one that cannot fit, such as an `order` stepping its last stage back through
        every start, would otherwise leave the alternatives after it no budget to find the one that fits."""
        ranked = []
        for index, child in enumerate(task.children):
            budget, refunds = self.budget, self.refunds
            if isinstance(child, AtomTask):  # costed as it would be laid, not laid: nothing else reads the scratch
                first = self._first_of_atom(child, lo, hi, preferred)
                cost = 0.0 if first is None else self.cost(first, laid=not self.lays)
            else:
                trial = self.solutions(child, lo, hi, preferred)
                first = next(trial, None)
                cost = 0.0 if first is None else self.cost(first)
                trial.close()
            if first is not None:
                ranked.append(_Alternative(cost, index, first, budget - self.budget, refunds - self.refunds))
            else:  # found nothing: what it spent goes back to the alternatives after it, or it would starve them
                refund = min(budget - self.budget, self.refunds)
                self.budget, self.refunds = self.budget + refund, self.refunds - refund
        return sorted(ranked, key=lambda alternative: (alternative.cost, alternative.index))

    def _first_of_any(self, task: GroupTask, lo: int, hi: int, preferred: tuple[int, int] | None) -> Solution | None:
        """`_any`'s first candidate without searching its cheapest alternative twice. Searched again, it finds the
        same first candidate for the same budget, when that much is left and it took no refund (the search is
        deterministic and the scratch is as it was; refunds taken the first time may be gone the second, and then
        a nested `any` spends more); otherwise it is searched again as `_any` does."""
        ranked = self._ranked(task, lo, hi, preferred)
        if ranked and self.budget >= ranked[0].spent and ranked[0].refunded == 0:
            self.budget -= ranked[0].spent
            return ranked[0].first
        return _first_of(self._in_rank(task, ranked, lo, hi, preferred))


def _first_of(search: Generator[Solution, None, None]) -> Solution | None:
    """The first candidate a search offers, taken back off the scratch."""
    try:
        return next(search, None)
    finally:
        search.close()


@dataclass(slots=True)
class Ceiling:
    """The latest an atom's next GREE candidates may end, once its caller knows later ones cannot be used (an `order`
    with a gap); or the latest start at which they are of no use (one without: the stages before found nothing)."""

    end: int | None = None
    after: int | None = None


@dataclass(frozen=True, slots=True)
class _Alternative:
    """One alternative of an `any` that places: what its first candidate costs, the budget finding it took, and the
    refunds its own `any`s took on the way."""

    cost: float
    index: int
    first: Solution
    spent: int
    refunded: int
