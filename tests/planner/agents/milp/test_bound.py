"""Upper bounds of accepted value (planner.agents.milp.bound): never below what a plan can reach.

- against the brute-force oracle: a reservation that has a valid placement is never bounded
  below its value, at the plan step or on slots;
- against exhaustive search over small batches (test_milp's tiny instances);
- slots only loosen it; the LP bound and the volume bound agree where both are cheap;
- the MILP agent's report: its answer never exceeds the bound, and its gap says by how much.
"""

from __future__ import annotations

import functools
import random
from datetime import datetime

import pytest

from planner.agents.milp.agent import MilpAgent, batch_items
from planner.agents.milp.bound import lp_bound, volume_bound, volume_step
from planner.agents.milp.model import Item
from planner.core.compile import compile_reservation
from planner.core.plan import Plan
from rdl.tree import Reservation
from tests.planner.agents.bruteforce import Instance, feasible, random_instance
from tests.planner.agents.milp.test_milp import atom_text, decide, random_batch, random_tiny, windowed
from tests.planner.support import instant, make_cluster, parse, run_plan

pytestmark = pytest.mark.filterwarnings("ignore:PULP_CBC_CMD is deprecated:DeprecationWarning")

START = instant(0)
EPS = 1e-6


def items_of(plan: Plan, reservations: list[Reservation], when: datetime = START) -> list[Item]:
    items, _ = batch_items(plan, [(r, when) for r in reservations])
    return items


@functools.cache
def oracle_cases(count: int = 150, seed: int = 20261123) -> list[tuple[Instance, Plan, list[Reservation], bool]]:
    """Brute-force instances: the plan after their blockers, the reservation, and whether it has a placement."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        instance = random_instance(rng)
        cluster = make_cluster(*instance.cluster_args())
        run = run_plan(cluster, "\n".join(b.text(f"blocker{i}") for i, b in enumerate(instance.blockers)), "gree")
        plan = run.planner.plan
        free = [int(x) for x in plan.free()[0]]
        reservations = parse(instance.reservation_text())
        cases.append((instance, plan, reservations, feasible(instance, free)))
    return cases


@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_placeable_reservation_is_never_bounded_below_its_value(step: int) -> None:
    placeable = 0
    for instance, plan, reservations, can in oracle_cases():
        if not can:
            continue
        placeable += 1
        bound = volume_bound(items_of(plan, reservations), plan.free(), step=step)
        assert bound.value is not None
        assert bound.value >= reservations[0].value - EPS, instance
    assert placeable >= 50, "the sample should hold many placeable reservations"


def test_the_volume_bound_sees_some_reservations_cannot_be_placed() -> None:
    """Not a trivial bound: on some instances without a placement it is below the value."""
    below = [case for case in oracle_cases() if not case[3]
             and (volume_bound(items_of(case[1], case[2]), case[1].free()).value or 0) < case[2][0].value - EPS]
    assert len(below) >= 5


def test_tiny_batches_never_bound_below_the_exhaustive_optimum() -> None:
    rng = random.Random(7)
    for _ in range(25):
        tiny = random_tiny(rng)
        plan = Plan(tiny.cluster())
        items = items_of(plan, parse(tiny.text()))
        best = tiny.best()
        for step in (1, 2, 4):
            bound = volume_bound(items, plan.free(), step=step)
            assert bound.value is not None and bound.value >= best - EPS, (tiny, step, bound)


@pytest.mark.parametrize("seed", range(8))
def test_slots_only_loosen_the_bound(seed: int) -> None:
    cluster, reservations = random_batch(random.Random(seed))
    plan = Plan(cluster)
    items = items_of(plan, reservations)
    fine = volume_bound(items, plan.free(), step=1).value
    assert fine is not None
    for step in (2, 3, 5, 8):
        coarse = volume_bound(items, plan.free(), step=step).value
        assert coarse is not None and coarse >= fine - EPS


@pytest.mark.parametrize("seed", range(4))
def test_both_bounds_hold_what_the_milp_reaches(seed: int) -> None:
    """Neither is a relaxation of the other (the volume bound ties parallelism to acceptance, the LP keeps
    `order`), but both bound the same optimum: each must be at least what the MILP reaches."""
    cluster, reservations = random_batch(random.Random(seed))
    plan = Plan(cluster)
    items = items_of(plan, reservations)
    decided = decide(cluster, reservations, MilpAgent(time_limit=10, smooth=False))
    lp = lp_bound(items, plan.free(), plan.capacity, 30).value
    volume = volume_bound(items, plan.free()).value
    assert lp is not None and volume is not None
    assert lp >= decided.value - EPS and volume >= decided.value - EPS


def test_a_lease_longer_than_its_window_bounds_to_zero() -> None:
    plan = Plan(make_cluster({"vcores": 4}, 10))
    (reservation,) = parse(f"reservation r value=5 {{ {windowed(0, 3, atom_text(1, 1, None, 4, 1))} }}")
    instances = compile_reservation(reservation, START, plan.clock, plan.now_step, plan.resources)
    assert volume_bound([Item("r", 5, instances)], plan.free()).value == pytest.approx(0.0)


def test_two_reservations_competing_for_one_slot_bound_at_the_more_valuable_plus_what_is_left() -> None:
    # Capacity 2 for 4 steps (8 vcore-steps); each wants 2 vcores for 3 steps (6): only one fits, and the
    # volume relaxation can add the 2 vcore-steps left as a third of the other.
    cluster = make_cluster({"vcores": 2}, 4)
    reservations = parse("reservation a value=3 { atom(b={vcores: 1}, g=2, l=3m, w=6m) }\n"
                         "reservation b value=6 { atom(b={vcores: 1}, g=2, l=3m, w=6m) }")
    plan = Plan(cluster)
    bound = volume_bound(items_of(plan, reservations), plan.free(), step=1)
    assert bound.value == pytest.approx(6 + 3 * 2 / 6)


def test_volume_step_keeps_the_lp_under_its_column_budget() -> None:
    cluster, reservations = random_batch(random.Random(3))
    plan = Plan(cluster)
    items = items_of(plan, reservations)
    assert volume_step(items, columns=10**9) == 1
    k = volume_step(items, columns=60)
    bound = volume_bound(items, plan.free(), columns=60)
    assert bound.step == k > 1


@pytest.mark.parametrize("seed", range(6))
def test_the_milp_report_says_how_far_from_optimal_its_answer_can_be(seed: int) -> None:
    cluster, reservations = random_batch(random.Random(seed))
    decided = decide(cluster, reservations, MilpAgent(time_limit=10, smooth=False))
    report = decided.result.report
    assert report.value == pytest.approx(decided.value)
    assert report.value_bound is not None and report.value_bound >= decided.value - EPS
    assert report.optimality_gap == pytest.approx(1 - decided.value / report.value_bound)
    if report.step == 1 and report.status == "optimal" and report.optimality_gap is not None:
        # proven at the plan step: within the cost weight
        assert report.optimality_gap <= 0.01 * min(r.value for r in reservations) / decided.value + 1e-4


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_the_reported_bound_is_never_below_a_plan_the_agent_reaches(backend: str) -> None:
    """A knapsack where CBC stops within its relative gap and calls that optimal: its answer is no bound."""
    weights, values, room, big = [8, 2, 6, 9, 8, 6], [4, 3, 5, 2, 5, 2], 23, 10
    cluster = make_cluster({"vcores": 1}, room + big)
    text = f"reservation big value=100000 {{ atom(b={{vcores: 1}}, l={big}m, w={big}m) }}\n"
    text += "".join(f"reservation s{i} value={v} {{ atom(b={{vcores: 1}}, l={w}m, w={w}m) }}\n"
                    for i, (w, v) in enumerate(zip(weights, values, strict=True)))
    decided = decide(cluster, text, MilpAgent(backend=backend, time_limit=10, coarsen=1, smooth=False))
    report = decided.result.report
    assert decided.violations == []
    assert decided.value >= 100015  # big and four small ones (2 + 6 + 8 + 6 = 22 <= 23 steps) fit
    assert report.value_bound is not None and report.value_bound >= decided.value - EPS
