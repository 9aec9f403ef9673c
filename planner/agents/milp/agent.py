"""The offline `milp` agent: decide a batch of reservations together, and re-plan accepted ones.

Approach (each step measured on this machine with `benchmarks/milp.py`; figures in the
issue note):
1. Greedy first: the batch is submitted one by one with GREE and GREE-L (in submission
   order and by value), and the best of those plans is the incumbent.
2. Size the model: a model with more lease starts than `start_budget` allows (it grows
   with the time limit and the number of atoms) is solved on slots of `k` plan steps
   (`planner.agents.milp.coarsen`), `k` the fewest steps that bring it within budget and, among up
   to twice that, the one that wastes least in lanes. Why: at the plan step HiGHS did
   not improve on the greedy start in 60 s at N=50/T=1440, N=200/T=288, N=200/T=1440 and
   N=1000/T=288 (its root LP alone takes 12-80 s), while on slots it reaches 0.985-0.996
   of the LP bound at the last three and proves the slots' optimum at the first (180
   against 172; the LP bound is loose at N=50: at T=96 the proven optimum is 0.827 of
   it); the plan-step model of N=1000/T=1440 (~0.5 M starts) takes minutes to build.
   Waste matters: N=1000/T=288 on slots of 3, 4, 6 and 9 steps reached 0.968, 0.994,
   0.977 and 0.978 of the bound (leases of 1, 2 and 4 steps fill 4-step slots exactly).
3. Acceptance: one MILP (`planner.agents.milp.model`) maximising accepted value with a small
   load-weighted cost, warm-started from the incumbent (on slots: from GREE/GREE-L run on
   the slots), bounded by the time limit. Short leases hold sums of starts rather than
   variables of their own, and implied capacity rows are left out (half the LP).
4. Back to the plan step and repair: a plan on slots maps to a feasible plan at the plan
   step (lanes, see `planner.agents.milp.coarsen`); then what is left out (including reservations the
   slots cannot hold) is offered to GREE and GREE-L, most valuable first, and the better
   fill is kept. This recovers what slot-rounded windows lose. When the slots were solved
   with `LADDER_SECONDS` to spare and the plan-step model has at most `LADDER_STARTS`
   starts, the plan-step model is solved from that plan too, and kept when it is worth
   as much (N=1000/T=96 on 4-step slots: 0.979 -> 0.999).
5. Never worse than greedy: the answer is the better of that plan and the incumbent by
   `rank`: accepted value, then how many are accepted, then fewer allocation changes (the
   output says which; at a full tie the greedy plan), and reservations still left out are
   offered to the greedy agent once more on the final plan. A solver's "infeasible" never rejects
   anything on its own: the acceptance model always has the empty plan, so such an answer
   is an error and the incumbent stands. The time limit covers every step: the solver
   gets what is left after the greedy start and the build, less what handing the model
   over and the repair are expected to take.
6. Smoothing, last, with the accepted set fixed. The solver picks any vertex, so its plans
   had 4-10x GREE-L's allocation changes (issue #19). First greedy shapes
   (`planner.agents.milp.reshape`): the whole set placed again by GREE-L (then GREE), latest
   planned start first and in three other orders, the few it misses pinned at the solver's
   shapes (N=200/T=288: 10,036 changes -> 2,570 in 0.1 s; GREE-L fits 155 of 156 in that
   order); then each reservation offered GREE-L's and GREE's shape on the plan of the
   others; then (`planner.agents.milp.smooth`) each accepted reservation (then groups of
   neighbours) is re-placed by a model of its own to cut its changes, in the time left
   (from the refilled plan the models reach 1,504 in 25 s at N=50/T=96, from the solver's
   2,266). One model of the whole batch, minimising every
   atom's changes at once (what this step was before), did not improve on the acceptance
   answer in 20 s at N=200/T=96 and N=200/T=288, where the local moves removed 45% and
   22% of the changes (`benchmarks/smooth.py`; at N=50/T=96 the whole model removed 80%,
   the local moves 76%).
7. How far from optimal: the solver's own bound and gap are of the model it saw (on
   slots, not the real problem), so the answer's gap is taken against the volume bound
   (`planner.agents.milp.bound`), computed after the greedy start in at most a tenth of the
   time limit (0.6 s at N=1000/T=1440, where the LP relaxation does not solve in 300 s), or
   the items' total value when greedy accepted them all (most online arrivals), and tightened by
   HiGHS's dual bound when it solved the plan-step model (then the agent proves its
   answer within 0.003-0.06% of optimal: N=50, 200, 1000 at T=96 and N=50 at T=288).
Tried and dropped: more HiGHS heuristic effort (`mip_heuristic_effort` 0.3 and 0.8 found
nothing better than the greedy start at N=200/T=288 in 60 s); LP-guided greedy order
(submitting by the LP relaxation's accept values gained 3 of 923 on N=200/T=288, not worth
an LP solve); the LP relaxation is nearly integral in accepts there (158 ones, 39 zeros,
3 fractional), so the gap is in placing, which is what the slots make tractable; a
tighter `h` row (held gangs at most `h` times the atom's presence, what makes the volume
bound tight) left N=200/T=288 and N=1000/T=288 exactly where they were, plain and on slots.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any as AnyType

import pulp

from planner.agents.base import Outcome
from planner.agents.deadline import earliest_deadline
from planner.agents.explain import window_reason
from planner.agents.greedy.agent import GreedyAgent
from planner.agents.milp.bound import volume_bound
from planner.agents.milp.changes import changes
from planner.agents.milp.coarsen import (
    atom_count,
    choose_step,
    coarse_free,
    coarse_greedy,
    coarsen,
    lease_starts,
    refine,
)
from planner.agents.milp.model import Item, build, read_back, warm_start
from planner.agents.milp.reshape import refill
from planner.agents.milp.smooth import smooth
from planner.agents.milp.solvers import DEFAULT_BACKEND, Clock, bounded, get_backend
from planner.core.compile import compile_reservation
from planner.core.decision import Decision, Reason
from planner.core.plan import Accepted, Allocation, Plan
from rdl.tree import Reservation

DEFAULT_TIME_LIMIT = 30.0
DEFAULT_GAP = 1e-4
DEFAULT_COST_WEIGHT = 0.01
BOUND_SECONDS = 10.0  # at most this long (and a tenth of the time limit) for the value bound; N=1000/T=1440: 0.6 s
LADDER_STARTS = 150_000  # a plan-step model this large still builds in seconds (N=1000/T=288: 106k, 5 s)
REFILL_SHARE = 0.3  # of the time left after acceptance, at most, for greedy shapes of the whole set
LADDER_SECONDS = 10.0  # time left after the slots that makes a plan-step solve worth starting
# How hard the acceptance model is grows with its lease starts times the starts per atom (long windows make the LP
# slow): measured, HiGHS solves it well in 60 s up to about 0.8 M of that product (N=1000/T=96 at the plan step:
# 0.8 M, 0.999 of the bound; N=200/T=288: 1.8 M, stuck at the greedy start; on 2-step slots 0.45 M, 0.996).
DIFFICULTY_PER_SECOND = 13_000


def start_budget(time_limit: float, atoms: int) -> int:
    """Lease starts a model of `atoms` atoms may have to be solved well within `time_limit` (beyond: coarsen)."""
    return max(2000, int(math.sqrt(DIFFICULTY_PER_SECOND * time_limit * max(1, atoms))))


@dataclass
class MilpReport:
    """What the solver did, for the output: backend, statuses, gap, bound, and whose plan was kept."""

    backend: str
    chosen: str = "greedy"
    value: float = 0.0  # accepted value of the answer
    value_bound: float | None = None  # no plan accepts more (`planner.agents.milp.bound.volume_bound`)
    value_bound_step: int = 1
    optimality_gap: float | None = None  # 1 - value / value_bound: how far from optimal the answer can be
    greedy: str = ""
    greedy_value: float = 0.0
    milp_value: float | None = None
    bound: float | None = None  # the solver's, for the model it saw (on slots: the slots' problem) and its objective
    gap: float | None = None
    status: str = "error"
    smoothing: str | None = None  # "done" (a pass moved nothing), "time up", or None (not asked)
    refilled: bool = False  # the accepted set was placed again by a greedy agent, with fewer changes
    reshaped: int | None = None  # accepted reservations given a greedy agent's shape by smoothing
    changes_before: int | None = None  # allocation changes of the plan chosen, before greedy shapes and smoothing
    changes_after: int | None = None
    step: int = 1
    plan_step: str | None = None
    left_out: int = 0
    repaired_value: float | None = None
    seconds: float = 0.0
    greedy_seconds: float = 0.0
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
    coarsen: int | None = None  # plan steps per slot; None chooses from the model's size and the time limit
    # What the time limit is measured on (tests inject a clock, so that what the agent decides does not depend on how
    # busy the machine is), and a node limit per solve (work, not seconds; None: the time limit alone).
    clock: Clock = field(default=time.perf_counter, repr=False, compare=False)
    nodes: int | None = None

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome:
        """One reservation on the current plan (what online submission asks of every agent)."""
        result = self.decide(plan, [(reservation, submitted)], commit=False)
        decision = result.decisions[0]
        if decision.accepted:
            return Outcome(decision.allocations)
        return Outcome(None, decision.reason)

    def decide(self, plan: Plan, batch: list[tuple[Reservation, datetime]], commit: bool = True) -> BatchResult:
        """Decide a batch together; accepted reservations are added to the plan when `commit`."""
        started = self.clock()
        report = MilpReport(self.backend)
        items, reasons = batch_items(plan, batch)
        incumbent_name, incumbent = best_greedy(plan, batch)
        if all(item.name in incumbent for item in items):
            # Greedy accepted every item that can be accepted at all: their total value is the bound, proven
            # without the volume LP (given at least half a second, it took about that per arrival on ricc_2days).
            report.value_bound = sum(item.value for item in items)
        else:
            bound = volume_bound(items, plan.free(), min(BOUND_SECONDS, 0.1 * self.time_limit))
            report.value_bound, report.value_bound_step = bound.value, bound.step
        report.greedy = incumbent_name
        report.greedy_value = _value(batch, incumbent)
        report.greedy_seconds = self.clock() - started
        chosen = incumbent
        if items:
            solved = self._ladder(plan, batch, items, incumbent, set(reasons), report, started)
            if solved is not None and rank(batch, solved) > rank(batch, incumbent):  # a full tie: the greedy plan
                chosen, report.chosen = solved, "milp"
        return self._finish(plan, batch, chosen, reasons, report, commit, started)

    # -- the model -----------------------------------------------------------------------

    def _ladder(self, plan: Plan, batch: list[tuple[Reservation, datetime]], items: list[Item],
                incumbent: dict[str, list[Allocation]], skip: set[str], report: MilpReport,
                started: float) -> dict[str, list[Allocation]] | None:
        """The solver's plan after the greedy repair: on slots when the model is large, then at the plan step from
        there when the slots were solved early and that model is not huge."""
        k = self.coarsen or choose_step(items, start_budget(self.time_limit, atom_count(items)), plan.clock.steps)
        report.step = k
        finer = self.coarsen is None and k > 1 and lease_starts(items) <= LADDER_STARTS
        solved, finer = self._solve(plan, items, incumbent, report, started, k, finer)
        if solved is None:
            return None
        solved = repair(plan, batch, solved, skip)
        report.repaired_value = _value(batch, solved)
        if finer:
            stage = MilpReport(self.backend, greedy_seconds=report.greedy_seconds, value_bound=report.value_bound)
            fine, _ = self._solve(plan, items, solved, stage, started, 1, False)
            report.plan_step, report.value_bound = stage.status, stage.value_bound
            if fine is not None:
                fine = repair(plan, batch, fine, skip)
                if rank(batch, fine) >= rank(batch, solved):
                    solved, report.repaired_value = fine, _value(batch, fine)
        return solved

    def _solve(self, plan: Plan, items: list[Item], incumbent: dict[str, list[Allocation]], report: MilpReport,
               started: float, k: int, finer: bool) -> tuple[dict[str, list[Allocation]] | None, bool]:
        """The solver's plan at the plan step (solved on slots of `k` steps, then mapped back), or None; and whether
        to solve at the plan step from it (when `finer` and the slots were solved with time to spare)."""
        free, capacity, coarse = plan.free(), plan.capacity, None
        if k > 1:
            coarse = coarsen(items, k)
            report.left_out = len(coarse.left_out)
            items, free, capacity = coarse.items, coarse_free(free, k), coarse_free(capacity, k)
            incumbent = coarse_greedy(items, free, capacity)
            if not items:
                return None, False
        build_started = self.clock()
        model = build(items, free, capacity, self.cost_weight)
        report.build_seconds = self.clock() - build_started
        report.variables = len(model.problem.variables())
        report.constraints = len(model.problem.constraints())
        warm_start(model, incumbent)
        if self.dump_model:
            write_model(model.problem, self.dump_model)
        backend = bounded(get_backend(self.backend), self.nodes)
        # Handing a model to a solver and reading its answer back cost about what building it did, and the greedy
        # repair and the final decisions afterwards at most what the greedy start did: keep that much in hand
        # (measured: N=1000/T=1440 ended 0.9 s inside a 300 s limit with a third of the greedy start kept).
        margin = max(0.2, report.build_seconds) + report.greedy_seconds
        remaining = self.time_limit - (self.clock() - started) - margin
        if remaining < 0.1:
            report.status = "timeout"
            return None, False
        first = backend(model.problem, remaining * (0.7 if self.smooth else 1.0), self.gap, True)
        report.status, report.bound, report.gap = first.status, first.bound, first.gap
        if coarse is None and first.bound is not None and first.backend == "highs":
            # At the plan step HiGHS's dual bound bounds value too (CBC reports its answer as the bound when it
            # stops within the gap; CP-SAT's is of an objective rounded to integers).
            report.value_bound = min(first.bound + model.cost_slack, report.value_bound or math.inf)
        if not first.has_solution:
            return None, False
        accepted = {name for name, var in model.accept.items() if (var.varValue or 0) > 0.5}
        report.milp_value = sum(i.value for i in items if i.name in accepted)
        solution = read_back(model, accepted)
        left = started + self.time_limit - self.clock()
        finer = finer and first.status == "optimal" and left >= LADDER_SECONDS
        return (solution if coarse is None else refine(coarse, solution)), finer

    def _finish(self, plan: Plan, batch: list[tuple[Reservation, datetime]], chosen: dict[str, list[Allocation]],
                reasons: dict[str, Reason], report: MilpReport, commit: bool, started: float) -> BatchResult:
        """Decisions in submission order: the left-out get one more greedy try on the final plan, then the accepted
        are given greedy shapes and smoothed in the time left, then the rejected learn the earliest deadline they
        could have had."""
        scratch = plan.copy()
        for reservation, submitted in batch:
            if reservation.name in chosen:
                if not scratch.within_policy(reservation, chosen[reservation.name]):
                    del chosen[reservation.name]  # the model knows no user limits: the greedy retry below does
                    continue
                scratch.add(Accepted(reservation, submitted, chosen[reservation.name]))
        greedy = GreedyAgent("gree", flat=False)
        retried = set()  # rejected on the final plan (the others' windows could not be met at all)
        for reservation, submitted in batch:
            name = reservation.name
            if name not in chosen and name not in reasons:
                outcome = greedy.place(scratch, reservation, submitted)
                if outcome.allocations is not None:
                    chosen[name] = list(outcome.allocations)
                    scratch.add(Accepted(reservation, submitted, chosen[name]))
                else:
                    reasons[name] = outcome.reason or Reason("capacity", "no room on the final plan")
                    retried.add(name)
        if self.smooth and chosen:
            report.changes_before = total_changes(chosen)
            # What is left, less what the rejections' earliest deadlines are expected to take (a greedy pass each);
            # greedy shapes for the whole set first, in at most a share of it.
            left = started + self.time_limit - self.clock() - report.greedy_seconds
            refilled = refill(plan, batch, chosen, self.clock() + REFILL_SHARE * left, self.clock)
            if refilled is not None and total_changes(refilled) < report.changes_before:
                chosen, report.refilled = refilled, True  # the same set, fewer changes
                scratch = with_placed(plan, batch, chosen)
            left = started + self.time_limit - self.clock() - report.greedy_seconds
            smoothed = smooth(scratch, list(chosen), max(0.0, left), self.backend, self.gap, clock=self.clock,
                              nodes=self.nodes)
            chosen = {name: scratch.accepted[name].allocations for name in chosen}
            report.changes_after = smoothed.changes_after
            report.smoothing = "done" if smoothed.finished else "time up"
            report.reshaped = smoothed.reshaped
        decisions = []
        for reservation, submitted in batch:
            name = reservation.name
            if name in chosen:
                decisions.append(Decision(name, True, tuple(chosen[name]), extra={"agent": self.name}))
                continue
            reason = reasons[name]
            if reason.code == "capacity" and name in retried:
                reason = replace(reason, earliest_deadline=earliest_deadline(scratch, greedy, reservation, submitted))
            decisions.append(Decision(name, False, reason=reason, extra={"agent": self.name}))
        report.value = _value(batch, chosen)
        if report.value_bound is not None:
            report.optimality_gap = max(0.0, 1.0 - report.value / report.value_bound) if report.value_bound > 0 else 0.0
        report.seconds = self.clock() - started
        if commit:
            for reservation, submitted in batch:
                if reservation.name in chosen:
                    plan.add(Accepted(reservation, submitted, chosen[reservation.name]))
        return BatchResult(decisions, report, chosen)


def batch_items(plan: Plan, batch: list[tuple[Reservation, datetime]]) -> tuple[list[Item], dict[str, Reason]]:
    """The batch compiled for the model, and why those whose windows cannot be met are rejected."""
    items, reasons = [], {}
    for reservation, submitted in batch:
        instances = compile_reservation(reservation, submitted, plan.clock, plan.now_step, plan.resources)
        reason = next((r for i in instances if (r := window_reason(i, plan, reservation)) is not None), None)
        if reason is not None:
            reasons[reservation.name] = reason
            continue
        items.append(Item(reservation.name, reservation.value, instances))
    return items, reasons


# -- greedy incumbent ---------------------------------------------------------------------


def best_greedy(plan: Plan, batch: list[tuple[Reservation, datetime]]) -> tuple[str, dict[str, list[Allocation]]]:
    """The best plan (by `rank`) from GREE or GREE-L, submitting in the given order or by value (highest first)."""
    best: tuple[tuple[float, int, int], str, dict[str, list[Allocation]]] | None = None
    orders = {"submission order": batch,
              "by value": sorted(batch, key=lambda item: -item[0].value)}
    for agent in (GreedyAgent("gree", flat=False), GreedyAgent("gree-l", flat=True)):
        for label, order in orders.items():
            placed = _fill(agent, plan.copy(), order, {})
            if best is None or rank(batch, placed) > best[0]:
                best = (rank(batch, placed), f"{agent.name} ({label})", placed)
    assert best is not None
    return best[1], best[2]


def rank(batch: list[tuple[Reservation, datetime]], placed: dict[str, list[Allocation]]) -> tuple[float, int, int]:
    """How plans of one batch compare: accepted value, then how many are accepted, then fewer allocation changes
    (each a container started or preempted); value is rounded so that sums in another order tie."""
    return round(_value(batch, placed), 9), len(placed), -total_changes(placed)


def total_changes(placed: dict[str, list[Allocation]]) -> int:
    """Allocation changes of every reservation in `placed`."""
    return sum(changes(allocations) for allocations in placed.values())


def _fill(agent: GreedyAgent, scratch: Plan, order: list[tuple[Reservation, datetime]],
          placed: dict[str, list[Allocation]]) -> dict[str, list[Allocation]]:
    """Submit `order` one by one to `agent` on `scratch` (changed in place); `placed` gains what fits."""
    for reservation, submitted in order:
        outcome = agent.place(scratch, reservation, submitted)
        if outcome.allocations is not None:
            placed[reservation.name] = list(outcome.allocations)
            scratch.add(Accepted(reservation, submitted, placed[reservation.name]))
    return placed


def repair(plan: Plan, batch: list[tuple[Reservation, datetime]], placed: dict[str, list[Allocation]],
           skip: set[str]) -> dict[str, list[Allocation]]:
    """`placed`, and what GREE or GREE-L (the better) still fits of the rest, most valuable first, at the plan step."""
    best: tuple[float, dict[str, list[Allocation]]] | None = None
    rest = sorted(((r, when) for r, when in batch if r.name not in placed and r.name not in skip),
                  key=lambda item: -item[0].value)
    base = plan.copy()
    for reservation, submitted in batch:
        if reservation.name in placed:
            base.add(Accepted(reservation, submitted, placed[reservation.name]))
    for agent in (GreedyAgent("gree", flat=False), GreedyAgent("gree-l", flat=True)):
        found = _fill(agent, base.copy(), rest, dict(placed))
        value = _value(batch, found)
        if best is None or value > best[0] + 1e-9:
            best = (value, found)
        if len(rest) == 0:
            break
    assert best is not None
    return best[1]


def with_placed(plan: Plan, batch: list[tuple[Reservation, datetime]],
                placed: dict[str, list[Allocation]]) -> Plan:
    """A copy of `plan` holding the reservations of `batch` that `placed` places."""
    scratch = plan.copy()
    for reservation, submitted in batch:
        if reservation.name in placed:
            scratch.add(Accepted(reservation, submitted, placed[reservation.name]))
    return scratch


def _value(batch: list[tuple[Reservation, datetime]], placed: dict[str, list[Allocation]]) -> float:
    return sum(r.value for r, _ in batch if r.name in placed)


# -- to and from the solver ------------------------------------------------------------------


def write_model(problem: pulp.LpProblem, path: str) -> None:
    """The model as MPS (`.mps`) or LP (anything else), for debugging."""
    if path.endswith(".mps"):
        problem.writeMPS(path)
    else:
        problem.writeLP(path)



