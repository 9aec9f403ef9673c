"""Time coarsening: a plan on k-step slots maps to a plan the checker accepts at the plan step; the MILP agent
that solves on slots is never worse than the greedy agents and keeps its time limit."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.agents.milp.agent import MilpAgent, read_back, warm_start
from planner.agents.milp.coarsen import (
    Coarse,
    choose_step,
    coarse_free,
    coarse_greedy,
    coarse_task,
    coarsen,
    lanes_per_slot,
    refine,
)
from planner.agents.milp.model import Item, build
from planner.agents.milp.solvers import STATUSES, solve_highs
from planner.core.check import check_plan
from planner.core.compile import AtomTask, GroupTask, compile_reservation
from planner.core.decision import Decision, Reason
from planner.core.plan import Allocation, Plan
from rdl.cluster import Cluster
from rdl.tree import Reservation
from tests.planner.agents.milp.test_milp import atom_text, day_batch, decide, is_valid, one_by_one, steady, windowed
from tests.planner.support import START, Ticks, make_cluster, one, parse

pytestmark = pytest.mark.filterwarnings("ignore:PULP_CBC_CMD is deprecated:DeprecationWarning")


# -- helpers ---------------------------------------------------------------------------------------------------------


def items_of(plan: Plan, reservations: list[Reservation]) -> list[Item]:
    return [Item(r.name, r.value, compile_reservation(r, START, plan.clock, plan.now_step, plan.resources))
            for r in reservations]


def violations(cluster: Cluster, reservations: list[Reservation], placed: dict[str, list[Allocation]]) -> list[str]:
    """The checker's verdict on a plan that accepts exactly `placed` (at the plan step)."""
    plan = Plan(cluster)
    decisions = [Decision(r.name, True, tuple(placed[r.name])) if r.name in placed
                 else Decision(r.name, False, reason=Reason("capacity", "left out")) for r in reservations]
    return check_plan(cluster, reservations, [d.to_json(plan.clock) for d in decisions])


def random_instance(rng: random.Random) -> tuple[Cluster, list[Reservation]]:
    """A few reservations of every shape (atoms, orders with and without gaps, `all`, `any`), on 24-60 steps;
    leases shorter than, as long as and longer than the slots the tests use."""
    steps, capacity = rng.randint(24, 60), rng.randint(3, 6)
    cluster = make_cluster({"vcores": capacity, "memory": f"{capacity * 2}GiB"}, steps)

    def atom() -> str:
        g = rng.choice([1, 1, 2])
        h = rng.choice([None, g, 2 * g, 4 * g])
        return atom_text(1, g, h, rng.randint(1, 7), rng.randint(1, 4), memory=rng.choice(["1GiB", "2GiB"]))

    reservations: list[Reservation] = []
    while len(reservations) < rng.randint(3, 8):
        lo = rng.randint(0, steps // 2)
        hi = rng.randint(lo + steps // 3, steps)
        shape = rng.choice(["atom", "order", "order-gap", "all", "any"])
        if shape == "atom":
            body = atom()
        elif shape.startswith("order"):
            gap = f", gap={rng.randint(0, 12)}m" if shape == "order-gap" else ""
            body = f"order({atom()}, {atom()}{gap})"
        else:
            body = f"{shape}({atom()}, {atom()})"
        reservation = one(f"reservation r{len(reservations)} value={rng.randint(1, 9)} {{ {windowed(lo, hi, body)} }}")
        if is_valid([reservation], cluster):
            reservations.append(reservation)
    return cluster, reservations


def solve_coarse(plan: Plan, coarse: Coarse) -> dict[str, list[Allocation]]:
    """The coarse acceptance model solved by HiGHS from the coarse greedy start: coarse allocations."""
    free, capacity = coarse_free(plan.free(), coarse.k), coarse_free(plan.capacity, coarse.k)
    model = build(coarse.items, free, capacity, cost_weight=0.01)
    warm_start(model, coarse_greedy(coarse.items, free, capacity))
    result = solve_highs(model.problem, 10, 1e-4, True)
    assert result.has_solution, result
    accepted = {name for name, var in model.accept.items() if (var.varValue or 0) > 0.5}
    return read_back(model, accepted)


# -- the way back to the plan step -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6))
def test_a_coarse_greedy_plan_maps_to_a_plan_the_checker_accepts(seed: int, k: int) -> None:
    cluster, reservations = random_instance(random.Random(seed))
    plan = Plan(cluster)
    coarse = coarsen(items_of(plan, reservations), k)
    free, capacity = coarse_free(plan.free(), k), coarse_free(plan.capacity, k)
    fine = refine(coarse, coarse_greedy(coarse.items, free, capacity))
    assert violations(cluster, reservations, fine) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6))
def test_a_coarse_milp_plan_maps_to_a_plan_the_checker_accepts(seed: int, k: int) -> None:
    cluster, reservations = random_instance(random.Random(seed))
    plan = Plan(cluster)
    coarse = coarsen(items_of(plan, reservations), k)
    if not coarse.items:
        return
    fine = refine(coarse, solve_coarse(plan, coarse))
    assert violations(cluster, reservations, fine) == []


def test_the_random_instances_are_informative() -> None:
    """Across seeds the coarse plans accept something, leave something out, and hold gapped orders and lanes."""
    accepted = rejected = lanes = 0
    for seed in range(40):
        cluster, reservations = random_instance(random.Random(seed))
        plan = Plan(cluster)
        coarse = coarsen(items_of(plan, reservations), 3)
        placed = solve_coarse(plan, coarse) if coarse.items else {}
        accepted += len(placed)
        rejected += len(reservations) - len(placed)
        lanes += sum(1 for atom in coarse.atoms.values() if lanes_per_slot(atom.length, 3) > 1)
    assert accepted >= 40 and rejected >= 20 and lanes >= 20, (accepted, rejected, lanes)


def test_a_lane_runs_leases_back_to_back_and_the_last_lane_runs_what_is_left() -> None:
    # 5 leases of 2 steps on slots of 5: two per lane (one step idle), three lanes, the last runs one.
    cluster = make_cluster({"vcores": 4}, 20)
    reservation = one(f"reservation r {{ {atom_text(1, 1, 2, 2, 5)} }}")
    plan = Plan(cluster)
    coarse = coarsen(items_of(plan, [reservation]), 5)
    (atom,) = coarse.atoms.values()
    (instance,) = coarse.items[0].instances
    assert isinstance(instance.task, AtomTask)
    assert (instance.task.length, instance.task.leases, instance.task.lo, instance.task.hi) == (1, 3, 0, 4)
    bundle = atom.atom.bundle
    lanes = [Allocation(atom.label, 0, 1, 2, bundle), Allocation(atom.label, 2, 3, 1, bundle)]
    fine = refine(coarse, {"r": lanes})["r"]
    assert [(a.start, a.end, a.bundles) for a in fine] == [(0, 2, 2), (2, 4, 2), (10, 12, 1)]
    assert violations(cluster, [reservation], {"r": fine}) == []


def test_a_lease_longer_than_a_slot_holds_whole_slots_from_its_first() -> None:
    cluster = make_cluster({"vcores": 4}, 20)
    reservation = one(f"reservation r {{ {windowed(1, 20, atom_text(1, 1, None, 7, 2))} }}")
    coarse = coarsen(items_of(Plan(cluster), [reservation]), 4)
    (instance,) = coarse.items[0].instances
    assert isinstance(instance.task, AtomTask)
    assert (instance.task.length, instance.task.leases, instance.task.lo, instance.task.hi) == (2, 2, 1, 5)
    (atom,) = coarse.atoms.values()
    fine = refine(coarse, {"r": [Allocation(atom.label, 1, 3, 1, atom.atom.bundle),
                                 Allocation(atom.label, 3, 5, 1, atom.atom.bundle)]})["r"]
    assert [(a.start, a.end) for a in fine] == [(4, 11), (12, 19)]


def test_a_gap_shrinks_by_a_slot_less_one_step_and_a_shorter_gap_cannot_be_held() -> None:
    def order(gap: int) -> GroupTask:
        text = f"reservation r {{ order({atom_text(1, 1, None, 2, 1)}, {atom_text(1, 1, None, 2, 1)}, gap={gap}m) }}"
        (instance,) = compile_reservation(one(text), START, Plan(make_cluster({"vcores": 1}, 40)).clock, 0,
                                          ("vcores",))
        assert isinstance(instance.task, GroupTask)
        return instance.task

    held = coarse_task(order(11), 4)
    assert isinstance(held, GroupTask) and held.gap == 2  # floor((11 - 3) / 4)
    assert coarse_task(order(2), 4) is None
    text = f"reservation r {{ order({atom_text(1, 1, None, 2, 1)}, {atom_text(1, 1, None, 2, 1)}, gap=2m) }}"
    coarse = coarsen(items_of(Plan(make_cluster({"vcores": 1}, 40)), parse(text)), 4)
    assert coarse.items == [] and coarse.left_out == ["r"]


def test_a_slot_has_the_least_free_capacity_of_its_steps() -> None:
    free = np.array([[3, 1, 2, 5, 5, 4, 9], [1, 1, 1, 0, 2, 2, 9]], dtype=float)
    assert coarse_free(free, 3).tolist() == [[1, 4], [1, 0]]  # the part slot at the end is dropped


def test_a_small_model_stays_at_the_plan_step() -> None:
    cluster = make_cluster({"vcores": 4}, 60)
    reservations = parse(f"reservation r {{ {atom_text(1, 1, None, 2, 3)} }}")
    assert choose_step(items_of(Plan(cluster), reservations), budget=1000, steps=60) == 1


def test_a_large_model_gets_the_coarsest_slot_it_needs_then_the_one_that_wastes_least() -> None:
    # 1437 starts of four 4-step leases: a budget of 300 needs slots of 5 steps at least (four lanes, 4 steps
    # idle); slots of 8 run two leases per lane and waste nothing.
    cluster = make_cluster({"vcores": 4}, 1440)
    reservations = parse(f"reservation r {{ {atom_text(1, 1, None, 4, 4)} }}")
    items = items_of(Plan(cluster), reservations)
    assert choose_step(items, budget=300, steps=1440) == 8
    assert choose_step(items, budget=1437, steps=1440) == 1


# -- the agent on slots -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_the_coarse_milp_is_never_worse_than_the_greedy_agents(seed: int) -> None:
    cluster, reservations = random_instance(random.Random(1000 + seed))
    greedy = max(one_by_one(cluster, reservations, "gree"), one_by_one(cluster, reservations, "gree-l"))
    decided = decide(cluster, reservations, MilpAgent(time_limit=5, coarsen=3))
    assert decided.violations == [], decided.violations
    report = decided.result.report
    assert report.step == 3 and report.status in STATUSES
    assert decided.value >= greedy - 1e-9 and decided.value >= report.greedy_value - 1e-9, (decided.value, report)


def test_the_agent_coarsens_a_large_model() -> None:
    """How coarse follows from the model's size and the time limit (that the limit is kept: test_milp.py)."""
    cluster, text = day_batch()
    decided = decide(cluster, text, steady(time_limit=2.0, nodes=0))
    report = decided.result.report
    assert report.step > 1, report
    assert decided.violations == [], decided.violations[:5]
    assert decided.value >= report.greedy_value - 1e-9


def test_the_coarse_model_beats_the_greedy_start_on_a_day_batch() -> None:
    """On slots the solver finishes what it cannot at the plan step: more value than the best greedy plan, at the
    root of its search already (no branching: the same answer on any machine)."""
    cluster, text = day_batch(seed=2, count=60)
    decided = decide(cluster, text, steady(time_limit=8.0, coarsen=10, smooth=False, nodes=0))
    report = decided.result.report
    assert decided.violations == [], decided.violations[:5]
    assert report.chosen == "milp" and decided.value > report.greedy_value, report


def test_reservations_the_slots_cannot_hold_get_the_greedy_repair() -> None:
    """An order whose gap is shorter than a slot is left out of the coarse model, and still accepted."""
    cluster = make_cluster({"vcores": 2}, 60)
    text = (f"reservation tight value=5 {{ order({atom_text(1, 1, None, 3, 2)}, {atom_text(1, 1, None, 3, 2)}, "
            f"gap=1m) }}\nreservation plain value=1 {{ {atom_text(1, 1, None, 4, 2)} }}")
    decided = decide(cluster, text, MilpAgent(time_limit=5, coarsen=6))
    assert decided.violations == []
    assert decided.accepted("tight") and decided.accepted("plain"), decided.records
    assert decided.result.report.left_out == 1


def test_slots_solved_early_hand_their_plan_to_a_plan_step_solve() -> None:
    """With time left after the slots (on the agent's clock, which here stands still), the plan-step model starts
    from the repaired slot plan: never worse."""
    cluster, text = day_batch(seed=3, count=15)
    decided = decide(cluster, text, steady(time_limit=12.0, smooth=False, nodes=10))
    report = decided.result.report
    assert report.step > 1 and report.plan_step in STATUSES, report
    assert decided.violations == [], decided.violations[:5]
    assert decided.value >= report.greedy_value - 1e-9
    assert report.repaired_value is not None and decided.value >= report.repaired_value - 1e-9


def test_slots_solved_late_go_no_finer() -> None:
    """With less than `LADDER_SECONDS` left after the slots (each reading of this clock counts for a second), no
    plan-step model is started."""
    cluster, text = day_batch(seed=3, count=15)
    decided = decide(cluster, text, steady(time_limit=12.0, smooth=False, nodes=10, clock=Ticks(1.0)))
    report = decided.result.report
    assert report.step > 1 and report.status == "optimal" and report.plan_step is None, report
    assert decided.violations == [], decided.violations[:5]
