"""The Planner: submit a reservation, get a decision at once, and the plan guarantees what it accepted."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from planner.agents import DEFAULT_AGENT, Agent, get_agent
from planner.decision import Decision, Reason
from planner.plan import Accepted, Plan
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.shape import step_floor
from rdl.tree import Absolute, Reservation, Window
from rdl.validate import validate


class Planner:
    """Owns a plan and admits reservations into it, one at a time, all-or-nothing."""

    def __init__(self, cluster: Cluster, now: datetime | None = None):
        self.plan = Plan(cluster, now)

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


def with_deadline(reservation: Reservation, deadline: datetime) -> Reservation | None:
    """The same request with another deadline; None when it has no deadline to move."""
    if reservation.deadline is not None:
        return replace(reservation, deadline=Absolute(deadline))
    if isinstance(reservation.body, Window):
        return replace(reservation, body=replace(reservation.body, end=Absolute(deadline)))
    return None


def earliest_deadline(plan: Plan, agent: Agent, reservation: Reservation, submitted: datetime) -> datetime | None:
    """The earliest deadline (to the step) at which the agent would accept the request on this plan."""
    arrival = reservation.arrival_at(submitted)
    current = _deadline(reservation, arrival)
    if current is None:
        return None
    clock = plan.clock

    def fits(step: int) -> bool:
        moved = with_deadline(reservation, clock.at(step))
        return moved is not None and agent.place(plan, moved, submitted).placed

    low = max(step_floor(clock.origin, current, clock.step), 0)
    high = clock.steps
    if low >= high or not fits(high):
        return None
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return clock.at(high)


def _deadline(reservation: Reservation, arrival: datetime) -> datetime | None:
    if reservation.deadline is not None:
        return reservation.deadline.resolve(arrival)
    if isinstance(reservation.body, Window):
        return reservation.body.end.resolve(arrival)
    return None
