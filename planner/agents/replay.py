"""An agent that replays answers decided beforehand by another system (YARN's own agents, say), checked against
the plan as it is when each reservation is submitted.

Another system's agent can decide a stream of reservations up front, on its own plan: what it answers depends only
on the stream and the capacity. Replayed here, each answer is the decision, provided it still fits our plan then
(capacity, the user's share, nothing placed before the plan's clock); one that does not, because our plan has
diverged from the one it was decided on (capacity lost to failed nodes and re-planned, say), is a rejection that
says so, and the agent counts it. Asked again for a reservation (re-planning moves what no longer fits), it offers
the same answer: another system's agent that is not asked cannot move anything, which is YARN's own re-planner's
way too (it deletes, it never moves).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any as AnyType

from planner.agents.base import Outcome
from planner.core.decision import Reason
from planner.core.plan import Allocation, Plan
from rdl import units
from rdl.shape import step_floor
from rdl.tree import Reservation, labelled_atoms

TOLERANCE = 1e-6  # quantities are whole MiB and counts; this only absorbs float noise
DIVERGED = "no longer fits the plan"  # in the message of every rejection the plan's divergence caused


@dataclass(frozen=True, slots=True)
class Lease:
    """One allocation of a replayed answer, on the wall clock (the plan's step grid is applied when replayed)."""

    atom: str
    start: datetime
    end: datetime
    bundles: int
    instance: int = 0


@dataclass(frozen=True, slots=True)
class Answer:
    """Another agent's decision on one reservation: its leases when accepted, its reason when rejected."""

    accepted: bool
    leases: tuple[Lease, ...] = ()
    reason: Reason | None = None


def answer_from_json(record: Mapping[str, AnyType]) -> Answer:
    """A decision record (docs/decisions.md) as an Answer; KeyError or ValueError when it is no such record."""
    if not record["accepted"]:
        reason = record.get("reason") or {}
        return Answer(False, reason=Reason(str(reason.get("code", "capacity")), str(reason.get("message", ""))))
    leases = tuple(Lease(str(a["atom"]), units.read_instant(a["start"]), units.read_instant(a["end"]),
                         int(a["bundles"]), int(a.get("instance", 0))) for a in record["allocations"])
    return Answer(True, leases)


def answers_from_json(records: Iterable[Mapping[str, AnyType]]) -> dict[str, Answer]:
    """Decision records by reservation name; ValueError when a name is decided twice."""
    found: dict[str, Answer] = {}
    for record in records:
        name = str(record["reservation"])
        if name in found:
            raise ValueError(f"reservation `{name}` is decided twice in the replayed decisions")
        found[name] = answer_from_json(record)
    return found


@dataclass
class ReplayAgent:
    """Answers each reservation as `answers` say, when that still fits the plan; counts the answers that did not."""

    name: str
    answers: Mapping[str, Answer]
    asked: set[str] = field(default_factory=set)
    diverged: dict[str, str] = field(default_factory=dict)  # first asks refused because the plan diverged: why
    replans_refused: int = 0  # later asks (re-planning) whose answer did not fit either

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome:
        """The replayed answer's allocations if they fit `plan` now; else why not."""
        name = reservation.name
        first = name not in self.asked
        self.asked.add(name)
        answer = self.answers.get(name)
        if answer is None:
            return Outcome(None, Reason("invalid", f"{self.name} has no answer for `{name}`: its decisions were "
                                                   "made for another stream (recompute them for this one)"))
        if not answer.accepted:
            return Outcome(None, answer.reason or Reason("capacity", f"{self.name} rejected it"))
        if not answer.leases:  # an answer that could not be read as leases (the checker says what it was)
            return Outcome(None, Reason("invalid", f"{self.name} accepted it, but its answer holds no lease"))
        allocations, problem = on_plan(plan, reservation, answer.leases)
        problem = problem or misfit(plan, reservation, allocations)
        if problem is None:
            return Outcome(tuple(allocations))
        if first:
            self.diverged[name] = problem
        else:
            self.replans_refused += 1
        return Outcome(None, Reason("capacity", f"{self.name}'s answer {DIVERGED} as it is now: {problem}"))


def on_plan(plan: Plan, reservation: Reservation, leases: Sequence[Lease]) -> tuple[list[Allocation], str | None]:
    """The leases as allocations on the plan's step grid, with the reservation's bundles; or what is wrong."""
    bundles = {label: atom.bundle for _, label, atom in labelled_atoms(reservation.expr)}
    clock = plan.clock
    found = []
    for lease in leases:
        if lease.atom not in bundles:
            return [], f"a lease for atom `{lease.atom}`, which `{reservation.name}` does not have"
        start, end = step_floor(clock.origin, lease.start, clock.step), step_floor(clock.origin, lease.end, clock.step)
        if clock.at(start) != lease.start or clock.at(end) != lease.end:
            return [], f"lease {units.format_instant(lease.start)}–{units.format_instant(lease.end)} is off the steps"
        found.append(Allocation(lease.atom, start, end, lease.bundles, bundles[lease.atom], lease.instance))
    return found, None


def misfit(plan: Plan, reservation: Reservation, allocations: list[Allocation]) -> str | None:
    """What keeps these allocations out of the plan now (None when they fit): the clock, the horizon, capacity or
    the user's share."""
    if any(a.start < plan.now_step for a in allocations):
        return "a lease starts before the plan's clock"
    if any(a.end > plan.clock.steps for a in allocations):
        return "a lease ends beyond the plan's horizon"
    over = (plan.used + plan.use_of(allocations) > plan.capacity + TOLERANCE).nonzero()
    if len(over[0]):
        resource, step = plan.resources[int(over[0][0])], int(over[1][0])
        return f"{resource} is over capacity at {units.format_instant(plan.clock.at(step))}"
    if not plan.within_policy(reservation, allocations):
        return "the user's share of the plan would go over the sharing policy"
    return None


def replay_summary(agent: ReplayAgent, shown: int = 3) -> dict[str, AnyType]:
    """How the replay went, for a run's figures: answers held, those accepted by the other agent, how many of
    those no longer fit when asked (with a few of them, and why), and re-placements refused."""
    diverged = [f"{name}: {why}" for name, why in list(agent.diverged.items())[:shown]]
    return {"agent": agent.name, "answers": len(agent.answers),
            "accepted_by_agent": sum(a.accepted for a in agent.answers.values()),
            "asked": len(agent.asked), "diverged": len(agent.diverged), "diverged_examples": diverged,
            "replans_refused": agent.replans_refused}
