"""GREE and GREE-L as agents: each stage latest-and-tallest or flattest, all-or-nothing, within the user's share."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from planner.agents.base import Outcome
from planner.agents.explain import capacity_reason, clipped_reason, window_reason
from planner.agents.greedy import pack
from planner.agents.greedy.early import search_early
from planner.agents.greedy.placer import DEFAULT_BUDGET, Placer
from planner.agents.greedy.solution import Solution, searched_apart
from planner.core.compile import Instance, compile_reservation
from planner.core.decision import Reason
from planner.core.plan import Allocation, Plan
from planner.core.policy import headroom
from rdl.tree import Reservation

if TYPE_CHECKING:
    from planner.agents.greedy.ontree import TreeView


@dataclass(frozen=True)
class GreedyAgent:
    """GREE (latest, tallest) or GREE-L (flattest over each stage's share), all-or-nothing; either places a
    reservation that asks for `placement=early` earliest and tallest (greedy/early.py)."""

    name: str
    flat: bool
    budget: int = DEFAULT_BUDGET
    reasons: bool = True  # False: a failed search says only `capacity` (the deadline search's probes need no more)
    refutes: bool = True  # False: an `order` is never given up early because a stage finds no room alone (Placer)

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome:
        instances = compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)
        return self.place_compiled(plan, reservation, instances)

    def place_compiled(self, plan: Plan, reservation: Reservation, instances: list[Instance]) -> Outcome:
        """`place` with the reservation already compiled (the earliest-deadline search compiles its probes once)."""
        for instance in instances:
            reason = window_reason(instance, plan, reservation)
            if reason is not None:
                return Outcome(None, reason)
        limited = plan.policy.limited
        user = reservation.user
        lo, hi = reach(instances, plan.clock.steps)
        if not limited and pack.on_tree(hi - lo, plan.clock.steps):
            return self._on_tree(plan, reservation, instances)
        free = plan.free_in(lo, hi)
        if limited:  # place around the user's share, so the limit shapes the placement rather than rejects it
            free = np.minimum(free, headroom(plan.policy, user, plan.capacity[:, lo:hi],
                                             plan.used_by(user)[:, lo:hi]))
        outcome = self._search(plan, reservation, instances, free, lo)
        if not limited:
            return outcome
        if outcome.allocations is None:
            unlimited = self._search(plan, reservation, instances, plan.free_in(lo, hi), lo)
            if unlimited.allocations is None:
                return outcome
            outcome = unlimited  # it fits the cluster, but not the user's share: say which limit
        return self._within_policy(plan, reservation, outcome)

    def _on_tree(self, plan: Plan, reservation: Reservation, instances: list[Instance]) -> Outcome:
        """The search on the plan's free-capacity tree (a long window: seconds-long steps), copying none of it."""
        from planner.agents.greedy.ontree import TreeView  # loads the compiler: only long windows come here

        tree = plan.free_tree()
        with tree.trial(plan.capacity, plan.used):
            return self._search(plan, reservation, instances, tree.free, 0, TreeView(tree))

    def _search(self, plan: Plan, reservation: Reservation, instances: list[Instance], free: np.ndarray,
                origin: int, tree: TreeView | None = None) -> Outcome:
        if reservation.placement == "early":  # the user's preference: the same search on the reversed axis (a copy)
            return search_early(plan, reservation, instances, free, origin, self.budget, self.reasons)
        # One instance searched apart: no search reads what another candidate lays, so nothing is laid. A series
        # keeps each instance laid while the next is searched.
        alone = len(instances) == 1 and searched_apart(instances[0].task)
        placer = Placer(free, plan.capacity, self.flat, origin=origin, tree=tree, lays=not alone,
                        refutes=self.refutes)
        held: list[Generator[Solution, None, None]] = []  # open searches keep their placements applied to the scratch
        placed: list[tuple[Instance, Solution]] = []
        try:
            for instance in instances:
                placer.begin(self.budget)
                task = instance.task
                search = None
                if instance is instances[-1]:  # nothing reads the scratch after the last: its placement is not laid
                    solution = placer.first(task, task.lo, task.hi, (task.lo, task.hi))
                else:
                    search = placer.search(task, task.lo, task.hi, (task.lo, task.hi))
                    solution = next(search, None)
                if solution is None:
                    if not self.reasons:
                        return Outcome(None, Reason("capacity", "no placement found"))
                    reason = clipped_reason(instance, plan, reservation)
                    tried = self.budget if placer.budget <= 0 else None
                    return Outcome(None, reason or capacity_reason(placer.failure, instance, plan, reservation, tried))
                if search is not None:
                    held.append(search)
                placed.append((instance, solution))
            return Outcome(tuple(to_allocations(placed)))
        finally:
            for search in reversed(held):  # take the placements back (on a tree, the plan's own)
                search.close()

    @staticmethod
    def _within_policy(plan: Plan, reservation: Reservation, outcome: Outcome) -> Outcome:
        """The outcome, or a `policy` rejection naming the user's limit it would break."""
        assert outcome.allocations is not None
        violation = plan.policy_violation(reservation, list(outcome.allocations))
        if violation is None:
            return outcome
        return Outcome(None, Reason("policy", violation.message(plan.resources, plan.clock.origin, plan.clock.step)))


def reach(instances: list[Instance], steps: int) -> tuple[int, int]:
    """The steps [lo, hi) any instance's placement can touch: all a decision needs to read of the plan."""
    lo = min(max(0, min(i.task.lo for i in instances)), steps)
    return lo, max(lo, min(steps, max(i.task.hi for i in instances)))


def to_allocations(placed: list[tuple[Instance, Solution]]) -> list[Allocation]:
    """Placements as allocations: one per atom, instance and start, in time order."""
    allocations: list[Allocation] = []
    for instance, solution in placed:
        index = instance.index
        for placement in solution:
            task = placement.task
            label, length, gang, bundle = task.label, task.length, task.gang, task.atom.bundle
            allocations.extend(Allocation(label, start, start + length, gangs * gang, bundle, index)
                               for start, gangs in zip(placement.starts.tolist(), placement.gangs.tolist(),
                                                       strict=True))
    return sorted(allocations, key=attrgetter("instance", "start", "atom"))
