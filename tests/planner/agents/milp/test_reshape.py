"""Greedy shapes for the MILP's plans (planner.agents.milp.reshape, and how the agent ranks plans): never more
allocation changes than GREE-L's plan of the same set, never less value, every promise kept."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any as AnyType

import pytest
from hypothesis import HealthCheck, given, settings

from planner.admission import Planner
from planner.agents.greedy.agent import GreedyAgent
from planner.agents.milp.agent import BatchResult, MilpAgent, total_changes
from planner.agents.milp.changes import changes
from planner.agents.milp.reshape import GREEDY_SHAPES, pinned_fill, refill, reshape
from planner.core.check import check_plan
from planner.core.plan import Accepted, Allocation, Plan
from rdl.cluster import Cluster
from rdl.tree import Reservation
from tests.planner.agents.milp.test_milp import BATCH, BATCH_CLUSTER
from tests.planner.agents.milp.test_smooth import START, pinned_plan, records
from tests.planner.agents.test_properties import Scenario, scenarios
from tests.planner.support import Ticks, make_cluster, parse

pytestmark = pytest.mark.filterwarnings("ignore:PULP_CBC_CMD is deprecated:DeprecationWarning")

GREE_L = GREEDY_SHAPES[0]
INTERLEAVED = ("reservation a { atom(b={vcores: 1}, l=1m, w=2m) }\n"
               "reservation b { atom(b={vcores: 1}, l=1m, w=2m) }")


def held(plan: Plan) -> dict[str, list[Allocation]]:
    return {name: list(accepted.allocations) for name, accepted in plan.accepted.items()}


def test_refill_gives_the_same_set_greedy_shapes() -> None:
    # Capacity 1 over four steps, a and b interleaved (8 changes): placed again one after the other, each is
    # one block (4 changes), the same two accepted.
    cluster = make_cluster({"vcores": 1}, 4)
    plan, reservations = pinned_plan(cluster, INTERLEAVED, {"a": [0, 2], "b": [1, 3]})
    placed = held(plan)
    refilled = refill(Plan(cluster), [(r, START) for r in reservations], placed, float("inf"))
    assert refilled is not None and set(refilled) == {"a", "b"}
    assert (total_changes(placed), total_changes(refilled)) == (8, 4)
    fresh = Plan(cluster)
    for reservation in reservations:
        fresh.add(Accepted(reservation, START, refilled[reservation.name]))
    assert check_plan(cluster, reservations, records(fresh, reservations)) == []


def test_what_the_greedy_agent_misses_keeps_the_solvers_shape() -> None:
    # A fits anywhere, B only in [3, 6): GREE-L submitting A first puts it late and misses B. B keeps the
    # solver's shape, put down first, and A is placed again around it.
    cluster = make_cluster(*BATCH_CLUSTER)
    a, b = parse(BATCH)
    solver = {"A": moved_to(cluster, a, 0, 2), "B": moved_to(cluster, b, 3, 6)}
    found = pinned_fill(GREE_L, Plan(cluster), [(a, START), (b, START)], solver, float("inf"))
    assert found["B"] == solver["B"]
    assert all(alloc.end <= 3 for alloc in found["A"]), found
    fresh = Plan(cluster)
    for reservation in (a, b):
        fresh.add(Accepted(reservation, START, found[reservation.name]))
    assert check_plan(cluster, [a, b], records(fresh, [a, b])) == []


def moved_to(cluster: Cluster, reservation: Reservation, start: int, end: int) -> list[Allocation]:
    """The reservation's one lease as GREE places it on an empty plan, moved to [start, end)."""
    placed = GreedyAgent("gree", flat=False).place(Plan(cluster), reservation, START).allocations
    assert placed is not None and len(placed) == 1
    return [replace(placed[0], start=start, end=end)]


def test_out_of_time_a_refill_changes_nothing() -> None:
    cluster = make_cluster({"vcores": 1}, 4)
    plan, reservations = pinned_plan(cluster, INTERLEAVED, {"a": [0, 2], "b": [1, 3]})
    assert refill(Plan(cluster), [(r, START) for r in reservations], held(plan), 0.0) is None


def test_reshape_gives_a_jagged_reservation_the_greedy_shape() -> None:
    cluster = make_cluster({"vcores": 2}, 10)
    plan, reservations = pinned_plan(cluster, "reservation r { atom(b={vcores: 1}, l=1m, w=4m) }",
                                     {"r": [0, 2, 5, 8]})
    report = reshape(plan, ["r"], float("inf"))
    assert (report.changes_before, report.changes_after, report.moved) == (8, 2, ["r"])
    assert check_plan(cluster, reservations, records(plan, reservations)) == []


def test_a_reshape_that_finds_nothing_smoother_leaves_the_plan_byte_identical() -> None:
    # Capacity 1, every step full: neither can be placed again alone in fewer changes.
    cluster = make_cluster({"vcores": 1}, 4)
    plan, _ = pinned_plan(cluster, INTERLEAVED, {"a": [0, 2], "b": [1, 3]})
    used, before = plan.used.tobytes(), held(plan)
    report = reshape(plan, ["a", "b"], float("inf"))
    assert report.moved == [] and report.changes_after == report.changes_before == 8
    assert plan.used.tobytes() == used and held(plan) == before


def test_at_equal_value_the_smoother_plan_is_kept() -> None:
    # One reservation alone: the solver's vertex may rise and fall, GREE-L holds one bundle throughout. The
    # agent keeps the plan with fewer changes even without smoothing.
    cluster = make_cluster({"vcores": 4}, 12)
    (reservation,) = parse("reservation r { atom(b={vcores: 1}, h=4, l=1m, w=12m) }")
    result = MilpAgent(time_limit=5, smooth=False).decide(Plan(cluster), [(reservation, START)], commit=False)
    assert changes(result.allocations["r"]) == 2, result.allocations


# -- never smoother by losing value, never more jagged than GREE-L ---------------------------------------------------


@dataclass
class Compared:
    """The MILP's batch decision on a scenario (as decision JSON too) beside GREE-L's plan of the same batch."""

    cluster: Cluster
    reservations: list[Reservation]
    records: list[dict[str, AnyType]]
    result: BatchResult
    gree_l: dict[str, list[Allocation]]


def decided_and_gree_l(scenario: Scenario, time_limit: float) -> Compared:
    """The MILP deciding the scenario's reservations as one batch, and GREE-L submitting them one by one."""
    cluster, reservations, clock = scenario.cluster(), parse(scenario.text), scenario.clock()
    plan = Planner(cluster, now=clock).plan
    batch = [(r, clock) for r in reservations]
    result = MilpAgent(time_limit=time_limit, clock=Ticks()).decide(plan, batch)  # refills to the end, on any machine
    records = [d.to_json(plan.clock) for d in result.decisions]
    return Compared(cluster, reservations, records, result, gree_l_plan(cluster, batch, clock))


def gree_l_plan(cluster: Cluster, batch: list[tuple[Reservation, datetime]],
                clock: datetime) -> dict[str, list[Allocation]]:
    scratch = Planner(cluster, now=clock).plan
    for reservation, submitted in batch:
        outcome = GREE_L.place(scratch, reservation, submitted)
        if outcome.allocations is not None:
            scratch.add(Accepted(reservation, submitted, list(outcome.allocations)))
    return held(scratch)


def check_smooth_and_valuable(scenario: Scenario) -> None:
    compared = decided_and_gree_l(scenario, 2.0)
    clock = scenario.clock()
    assert check_plan(compared.cluster, compared.reservations, compared.records, submitted=clock, now=clock) == []
    report, placed, greedy = compared.result.report, compared.result.allocations, compared.gree_l
    # Never less value than before greedy shapes: the better of the greedy start and the solver's repaired plan.
    assert report.value >= max(report.greedy_value, report.repaired_value or 0.0) - 1e-9, report
    assert report.value >= sum(r.value for r in compared.reservations if r.name in greedy) - 1e-9, report
    if set(placed) == set(greedy):
        assert total_changes(placed) <= total_changes(greedy), (placed, greedy)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_same_set_as_gree_l_never_more_changes(scenario: Scenario) -> None:
    check_smooth_and_valuable(scenario)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_same_set_as_gree_l_never_more_changes_at_length(scenario: Scenario) -> None:
    check_smooth_and_valuable(scenario)


def test_an_order_in_a_window_with_no_whole_step_is_rejected_beside_one_that_fits() -> None:
    # `short` must end a minute after it is submitted (00:01), before its window opens (00:01:30): its order has no
    # step at all to split its stages at (hypothesis found the MILP's model building on it and failing).
    cluster = make_cluster({"vcores": 2}, 20)
    fits, short = parse("reservation fits { atom(b={vcores: 1}, w=1m) }\n"
                        "reservation short deadline=+1m { window(s=2026-11-23T00:01:30Z, e=2026-11-23T00:02:30Z, "
                        "order(atom(b={vcores: 1}, w=1m), atom(b={vcores: 1}, w=1m))) }")
    result = MilpAgent(time_limit=2.0).decide(Planner(cluster).plan, [(fits, START), (short, START)])
    assert [(d.reservation, d.accepted) for d in result.decisions] == [("fits", True), ("short", False)]
