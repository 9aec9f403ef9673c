"""The offline `milp` agent: decide a batch of reservations together, and re-plan accepted ones.

Approach (measured on this machine: the smoothness term is what makes the model hard):
1. Greedy first: the batch is submitted one by one with GREE and GREE-L (in submission
   order and by value), and the best of those plans is the incumbent.
2. Acceptance: one MILP (`planner.model`) maximising accepted value with a small
   load-weighted cost, warm-started from the incumbent, bounded by the time limit.
3. Smoothing: with the accepted set fixed, the same model minimises step-to-step changes
   of every atom's allocation, warm-started from step 2, in the time left.
4. Never worse than greedy: the answer is the better of the solver's plan and the
   incumbent by accepted value (the output says which), and reservations the solver
   left out are offered to the greedy agent once more on the final plan. A solver's
   "infeasible" never rejects anything on its own: the acceptance model always has the
   empty plan, so such an answer is an error and the incumbent stands.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any as AnyType

import pulp

from planner.agents import GreedyAgent, Outcome, register
from planner.compile import compile_reservation
from planner.decision import Decision, Reason
from planner.explain import window_reason
from planner.model import Item, Model, build, smoothness
from planner.plan import Accepted, Allocation, Plan
from planner.planner import earliest_deadline
from planner.policy import check
from planner.solvers import DEFAULT_BACKEND, SolveResult, get_backend
from rdl.tree import Reservation

DEFAULT_TIME_LIMIT = 30.0
DEFAULT_GAP = 1e-4
DEFAULT_COST_WEIGHT = 0.01


@dataclass
class MilpReport:
    """What the solver did, for the output: backend, statuses, gap, bound, and whose plan was kept."""

    backend: str
    chosen: str = "greedy"
    greedy: str = ""
    greedy_value: float = 0.0
    milp_value: float | None = None
    bound: float | None = None
    gap: float | None = None
    status: str = "error"
    smoothing: str | None = None
    seconds: float = 0.0
    build_seconds: float = 0.0
    variables: int = 0
    constraints: int = 0

    def to_json(self) -> dict[str, AnyType]:
        """Plain JSON values (a non-finite number, which JSON cannot hold, becomes null)."""
        return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in self.__dict__.items()}


@dataclass
class BatchResult:
    decisions: list[Decision]
    report: MilpReport
    allocations: dict[str, list[Allocation]] = field(default_factory=dict)


@dataclass(frozen=True)
class MilpAgent:
    """Decides reservations with a MILP, never worse than the greedy agents."""

    name: str = "milp"
    backend: str = DEFAULT_BACKEND
    time_limit: float = DEFAULT_TIME_LIMIT
    gap: float = DEFAULT_GAP
    cost_weight: float = DEFAULT_COST_WEIGHT
    smooth: bool = True
    dump_model: str | None = None

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome:
        """One reservation on the current plan (what online submission asks of every agent)."""
        result = self.decide(plan, [(reservation, submitted)], commit=False)
        decision = result.decisions[0]
        if decision.accepted:
            return Outcome(decision.allocations)
        return Outcome(None, decision.reason)

    def decide(self, plan: Plan, batch: list[tuple[Reservation, datetime]], commit: bool = True) -> BatchResult:
        """Decide a batch together; accepted reservations are added to the plan when `commit`."""
        started = time.perf_counter()
        report = MilpReport(self.backend)
        items, reasons = self._items(plan, batch)
        incumbent_name, incumbent = best_greedy(plan, batch)
        report.greedy = incumbent_name
        report.greedy_value = _value(batch, incumbent)
        chosen = incumbent
        if items:
            solved = self._solve(plan, items, incumbent, report, started)
            if solved is not None and _value(batch, solved) > report.greedy_value + 1e-9:
                chosen, report.chosen = solved, "milp"
            elif solved is not None and _value(batch, solved) >= report.greedy_value - 1e-9:
                chosen, report.chosen = solved, "milp"  # as good, and smoother
        report.seconds = time.perf_counter() - started
        return self._finish(plan, batch, chosen, reasons, report, commit)

    # -- the model -----------------------------------------------------------------------

    def _items(self, plan: Plan, batch: list[tuple[Reservation, datetime]]) -> tuple[list[Item], dict[str, Reason]]:
        items, reasons = [], {}
        for reservation, submitted in batch:
            instances = compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)
            reason = next((r for i in instances if (r := window_reason(i, plan, reservation)) is not None), None)
            if reason is not None:
                reasons[reservation.name] = reason
                continue
            items.append(Item(reservation.name, reservation.value, instances))
        return items, reasons

    def _solve(self, plan: Plan, items: list[Item], incumbent: dict[str, list[Allocation]], report: MilpReport,
               started: float) -> dict[str, list[Allocation]] | None:
        build_started = time.perf_counter()
        model = build(items, plan.free(), plan.capacity, self.cost_weight)
        report.build_seconds = time.perf_counter() - build_started
        report.variables = len(model.problem.variables())
        report.constraints = len(model.problem.constraints())
        warm_start(model, incumbent)
        if self.dump_model:
            write_model(model.problem, self.dump_model)
        backend = get_backend(self.backend)
        # Handing a model to a solver and reading its answer back cost about what building it did:
        # keep that much of the limit in hand so the whole answer comes within the limit.
        margin = max(0.2, report.build_seconds)
        remaining = self.time_limit - (time.perf_counter() - started) - margin
        if remaining < 0.1:
            report.status = "timeout"
            return None
        first = backend(model.problem, remaining * (0.7 if self.smooth else 1.0), self.gap, True)
        report.status, report.bound, report.gap = first.status, first.bound, first.gap
        if not first.has_solution:
            return None
        accepted = {name for name, var in model.accept.items() if (var.varValue or 0) > 0.5}
        report.milp_value = sum(i.value for i in items if i.name in accepted)
        solution = read_back(model, accepted)
        if self.smooth and accepted:
            smoothed = self._smooth(model, accepted, started + self.time_limit - 2 * margin, report)
            if smoothed is not None:
                solution = smoothed
        return solution

    def _smooth(self, model: Model, accepted: set[str], deadline: float,
                report: MilpReport) -> dict[str, list[Allocation]] | None:
        """Fix the accepted set, then minimise allocation changes (warm-started from the acceptance answer)."""
        for name, var in model.accept.items():
            model.problem += (var == (1 if name in accepted else 0), f"fixed_{var.name}")
        changes = smoothness(model)
        model.problem.sense = pulp.LpMinimize
        model.problem.setObjective(changes)
        seconds = deadline - time.perf_counter()  # measured after building the smoothing terms, which takes time
        if seconds < 0.5:
            report.smoothing = "skipped: no time left"
            return None
        result: SolveResult = get_backend(self.backend)(model.problem, seconds, self.gap, True)
        report.smoothing = result.status
        if not result.has_solution:
            return None
        return read_back(model, accepted)

    def _finish(self, plan: Plan, batch: list[tuple[Reservation, datetime]], chosen: dict[str, list[Allocation]],
                reasons: dict[str, Reason], report: MilpReport, commit: bool) -> BatchResult:
        """Decisions in submission order; the left-out get one more greedy try on the final plan."""
        scratch = plan.copy()
        for reservation, submitted in batch:
            if reservation.name in chosen:
                if not _within_policy(scratch, reservation, chosen[reservation.name]):
                    del chosen[reservation.name]  # the model knows no user limits: the greedy retry below does
                    continue
                scratch.add(Accepted(reservation, submitted, chosen[reservation.name]))
        greedy = GreedyAgent("gree", flat=False)
        decisions = []
        for reservation, submitted in batch:
            name = reservation.name
            if name not in chosen and name not in reasons:
                outcome = greedy.place(scratch, reservation, submitted)
                if outcome.allocations is not None:
                    chosen[name] = list(outcome.allocations)
                    scratch.add(Accepted(reservation, submitted, chosen[name]))
                else:
                    reason = outcome.reason or Reason("capacity", "no room on the final plan")
                    if reason.code == "capacity":
                        reason = replace(reason, earliest_deadline=earliest_deadline(scratch, greedy, reservation,
                                                                                     submitted))
                    reasons[name] = reason
            if name in chosen:
                decisions.append(Decision(name, True, tuple(chosen[name]), extra={"agent": self.name}))
            else:
                decisions.append(Decision(name, False, reason=reasons[name], extra={"agent": self.name}))
        if commit:
            for reservation, submitted in batch:
                if reservation.name in chosen:
                    plan.add(Accepted(reservation, submitted, chosen[reservation.name]))
        return BatchResult(decisions, report, chosen)


def lp_bound(plan: Plan, batch: list[tuple[Reservation, datetime]], time_limit: float = 300.0) -> tuple[float, float]:
    """The LP relaxation's accepted value: no plan can accept more value. Returns (bound, seconds)."""
    started = time.perf_counter()
    items, _ = MilpAgent()._items(plan, batch)
    model = build(items, plan.free(), plan.capacity, cost_weight=0.0)
    model.problem.solve(pulp.HiGHS(mip=False, msg=False, timeLimit=time_limit))
    return float(pulp.value(model.problem.objective) or 0.0), time.perf_counter() - started


def _within_policy(plan: Plan, reservation: Reservation, allocations: list[Allocation]) -> bool:
    """Whether adding these allocations keeps the reservation's user within the sharing policy."""
    if not plan.policy.limited:
        return True
    added = plan.use_of(allocations)
    user = reservation.user
    return check(plan.policy, user, plan.capacity, plan.used_by(user) + added, added=added) is None


# -- greedy incumbent ---------------------------------------------------------------------


def best_greedy(plan: Plan, batch: list[tuple[Reservation, datetime]]) -> tuple[str, dict[str, list[Allocation]]]:
    """The most valuable plan from GREE or GREE-L, submitting in the given order or by value (highest first)."""
    best: tuple[float, str, dict[str, list[Allocation]]] | None = None
    orders = {"submission order": batch,
              "by value": sorted(batch, key=lambda item: -item[0].value)}
    for agent in (GreedyAgent("gree", flat=False), GreedyAgent("gree-l", flat=True)):
        for label, order in orders.items():
            scratch = plan.copy()
            placed: dict[str, list[Allocation]] = {}
            for reservation, submitted in order:
                outcome = agent.place(scratch, reservation, submitted)
                if outcome.allocations is not None:
                    placed[reservation.name] = list(outcome.allocations)
                    scratch.add(Accepted(reservation, submitted, placed[reservation.name]))
            value = _value(batch, placed)
            if best is None or value > best[0] + 1e-9:
                best = (value, f"{agent.name} ({label})", placed)
    assert best is not None
    return best[1], best[2]


def _value(batch: list[tuple[Reservation, datetime]], placed: dict[str, list[Allocation]]) -> float:
    return sum(r.value for r, _ in batch if r.name in placed)


# -- to and from the solver ------------------------------------------------------------------


def warm_start(model: Model, placed: dict[str, list[Allocation]]) -> None:
    """Set every variable to the incumbent plan's values (what the backends start from)."""
    for variable in model.problem.variables():
        variable.setInitialValue(0)
    gangs: dict[tuple[str, int, str, int], int] = {}
    for name, allocations in placed.items():
        for a in allocations:
            lease = (name, a.instance, a.atom, a.start)
            task = model.tasks.get((name, a.instance, a.atom))
            if task is not None:
                gangs[lease] = gangs.get(lease, 0) + a.bundles // task.gang
    for name, var in model.accept.items():
        var.setInitialValue(1 if name in placed else 0)
    for key, starts in model.starts.items():
        running = 0
        task = model.tasks[key]
        for s, x in starts.items():
            x.setInitialValue(gangs.get((*key, s), 0))
        for t, held in model.held[key].items():
            running += gangs.get((*key, t), 0) - gangs.get((*key, t - task.length), 0)
            held.setInitialValue(running)
    _warm_choices(model, gangs)
    _warm_splits(model, gangs)


def _warm_choices(model: Model, gangs: dict[tuple[str, int, str, int], int]) -> None:
    """An `any` child is chosen when some atom under it holds leases."""
    used = {(k[0], k[1], k[2]) for k, v in gangs.items() if v}
    for choice, keys in model.choices.values():
        choice.setInitialValue(1 if any(k in used for k in keys) else 0)


def _warm_splits(model: Model, gangs: dict[tuple[str, int, str, int], int]) -> None:
    """An order's split sits where its earlier stage's last lease ends."""
    last_end: dict[tuple[str, int, str], int] = {}
    for (name, instance, label, start), count in gangs.items():
        key = (name, instance, label)
        if count and key in model.tasks:
            last_end[key] = max(last_end.get(key, 0), start + model.tasks[key].length)
    for earlier, split in model.splits:
        ends = [last_end[k] for k in earlier if k in last_end]
        sigma = max(ends) if ends else None
        for t, var in split.items():
            var.setInitialValue(1 if sigma is not None and t <= sigma else 0)


def read_back(model: Model, accepted: set[str]) -> dict[str, list[Allocation]]:
    """Allocations from the solver's values: one per atom, instance and start with gangs > 0."""
    placed: dict[str, list[Allocation]] = {name: [] for name in accepted}
    for (name, instance, label), starts in model.starts.items():
        if name not in accepted:
            continue
        task = model.tasks[(name, instance, label)]
        for s, x in starts.items():
            count = round(x.varValue or 0)
            if count > 0:
                placed[name].append(Allocation(label, s, s + task.length, count * task.gang, task.atom.bundle,
                                               instance))
    return {name: sorted(a, key=lambda x: (x.instance, x.start, x.atom)) for name, a in placed.items()}


def write_model(problem: pulp.LpProblem, path: str) -> None:
    """The model as MPS (`.mps`) or LP (anything else), for debugging."""
    if path.endswith(".mps"):
        problem.writeMPS(path)
    else:
        problem.writeLP(path)


register("milp", MilpAgent)
