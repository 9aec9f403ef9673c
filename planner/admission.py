"""The Planner: submit a reservation, get a decision at once, and the plan guarantees what it accepted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np

from planner.agents.base import Agent
from planner.agents.deadline import earliest_deadline
from planner.agents.registry import DEFAULT_AGENT, get_agent
from planner.core.decision import Decision, Reason
from planner.core.plan import Accepted, Plan
from planner.replan.adapt import Adaptation, adapt, with_capacity
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.tree import Reservation
from rdl.validate import validate


class Planner:
    """Owns a plan and admits reservations into it, one at a time, all-or-nothing."""

    def __init__(self, cluster: Cluster, now: datetime | None = None, *, plan: Plan | None = None):
        self.plan = plan if plan is not None else Plan(cluster, now)

    @classmethod
    def over(cls, plan: Plan) -> Planner:
        """A Planner that owns an existing plan (the constructor lays a fresh one over the cluster)."""
        return cls(plan.cluster, plan=plan)

    def submit(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, submitted: datetime | None = None,
               dry_run: bool = False, validated: bool = False, explain: bool = True) -> Decision:
        """Decide one reservation; accepted ones are added to the plan unless `dry_run`."""
        chosen = get_agent(agent) if isinstance(agent, str) else agent
        submitted = submitted or self.plan.now
        invalid = self._invalid(reservation, submitted, validated)
        if invalid is not None:
            return Decision(reservation.name, False, reason=invalid, extra={"agent": chosen.name})
        outcome = chosen.place(self.plan, reservation, submitted)
        if outcome.allocations is None:
            reason = outcome.reason or Reason("capacity", "no placement found")
            if explain and reason.code == "capacity":
                reason = replace(reason, earliest_deadline=earliest_deadline(self.plan, chosen, reservation,
                                                                             submitted))
            return Decision(reservation.name, False, reason=reason, extra={"agent": chosen.name})
        if not dry_run:
            self.plan.add(Accepted(reservation, submitted, list(outcome.allocations)))
        return Decision(reservation.name, True, outcome.allocations, extra={"agent": chosen.name})

    def advance(self, now: datetime) -> int:
        """Move the plan's clock to `now` (never back) and roll its window with it; the steps the window moved.

        The one way a plan's clock moves (DESIGN.md, "One clock"): the store, the service and the simulator all
        call it, so a simulated plan rolls exactly as a served one does. What starts before `now` can no longer
        be placed; steps that fall off the back are history; new ones come in at the front with the cluster
        file's capacity.
        """
        return self.plan.roll(now)

    def adapt(self, capacity: np.ndarray, acceptance: Sequence[str], agent: str | Agent = DEFAULT_AGENT,
              cluster: Cluster | None = None) -> Adaptation:
        """Lay the plan over new capacity (resources x steps) and bring it back within it.

        Reservations that no longer fit are kept where they still fit, moved by `agent`, or
        dropped (lowest priority, then latest in `acceptance`, first). The one way a plan's
        capacity changes: the store, the simulator and the follower's re-planning all call it.
        """
        chosen = get_agent(agent) if isinstance(agent, str) else agent
        adapted = with_capacity(self.plan, cluster or self.plan.cluster, capacity)
        report = adapt(adapted, acceptance, chosen)
        self.plan = adapted
        return report

    def _invalid(self, reservation: Reservation, submitted: datetime, validated: bool) -> Reason | None:
        if reservation.name in self.plan.accepted:
            return Reason("invalid", f"a reservation named `{reservation.name}` is already in the plan")
        if validated:
            return None
        try:
            validate([reservation], self.plan.cluster, submitted)
        except RDLErrors as errors:
            return Reason("invalid", "; ".join(e.headline() for e in errors.errors))
        return None
