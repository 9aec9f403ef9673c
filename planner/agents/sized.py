"""GREE-S: GREE-L with size-aware admission: it refuses a reservation that needs more than a share of the cluster
over its own window, to keep room for the smaller ones after it.

On a busy plan one large reservation can take the room of several small ones; an agent that counts admissions
(YARN's greedy, which fails on large ones, docs/peers.md) then accepts more. GREE-S makes that trade on purpose and
says so: a refused reservation gets a `policy` reason naming its share and the limit. It decides on the request
alone (its least work against the cluster's capacity over its window), before any search, so the same request is
refused on an empty plan too. Everything it accepts it places as GREE-L does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from planner.agents.base import Outcome
from planner.agents.explain import clipped_reason, window_reason
from planner.agents.greedy.agent import GreedyAgent
from planner.core.compile import AtomTask, Task, compile_reservation
from planner.core.decision import Reason
from planner.core.plan import Plan
from rdl import units
from rdl.tree import Reservation

DEFAULT_SHARE = 0.1  # measured on benchmarks/peers/yarn_agents.py's streams (docs/peers.md, "Size-aware admission")


@dataclass(frozen=True)
class SizedAgent(GreedyAgent):
    """GREE-L that first refuses any instance needing more than `share` of the cluster's capacity over its window
    (of any one resource, its least work: `any` counts its lightest alternative)."""

    share: float = DEFAULT_SHARE

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome:
        instances = compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)
        if any(window_reason(instance, plan, reservation) is not None
               or clipped_reason(instance, plan, reservation) is not None for instance in instances):
            return self.place_compiled(plan, reservation, instances)  # clock or horizon rule it out: as GREE-L
        for instance in instances:
            share, resource = window_share(instance.task, plan)
            if share > self.share:
                lo, hi = instance.task.lo, instance.task.hi
                return Outcome(None, Reason("policy", (
                    f"`{reservation.name}` needs {share:.1%} of the cluster's {plan.resources[resource]} over its "
                    f"window [{units.format_instant(plan.clock.at(lo))}, {units.format_instant(plan.clock.at(hi))}); "
                    f"{self.name} admits a reservation up to {self.share:.0%} of it, to keep room for smaller "
                    "ones (a later deadline lowers the share)")))
        return self.place_compiled(plan, reservation, instances)


def window_share(task: Task, plan: Plan) -> tuple[float, int]:
    """The largest share, over resources, of the cluster's capacity in the task's window [lo, hi) that its least
    work needs, and that resource's row (a resource the window holds none of counts as needed without limit).

    In Python floats but for numpy's sum over a group's children (a few resources: a numpy call per node cost more
    than the arithmetic; 20 to 5 us for a gang), the same to the bit as in numpy (test_sized.py)."""
    held = plan.capacity[:, max(0, task.lo):min(plan.clock.steps, task.hi)].sum(axis=1).tolist()
    shares = _shares(least_need(task, held), held)
    share = max(shares)
    return share, shares.index(share)


def least_need(task: Task, held: list[float]) -> list[float]:
    """Resource-steps per resource the task needs at the least: an atom's leases × gang × length × bundle; `any`
    its alternative with the smallest largest share of `held`; `order` and `all` the sum of their children."""
    if isinstance(task, AtomTask):
        times = float(task.leases * task.gang * task.length)
        return [amount * times for amount in task.demand.tolist()]
    needs = [least_need(child, held) for child in task.children]
    if task.kind == "any":
        return min(needs, key=lambda need: max(_shares(need, held)))
    # numpy's sum, whose order of additions (pairwise for one resource and eight children or more) decides the last
    # bit; a group of one child, most requests, needs none
    return needs[0] if len(needs) == 1 else np.sum(needs, axis=0).tolist()


def _shares(need: list[float], held: list[float]) -> list[float]:
    return [n / h if h > 0 else (math.inf if n > 0 else 0.0) for n, h in zip(need, held, strict=True)]
