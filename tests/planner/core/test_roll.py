"""The rolling window: a plan rolled forward equals the plan laid fresh over the new window with the same leases."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.core.plan import Accepted, Allocation, Plan, window_cluster, window_offset
from rdl.tree import Reservation, Resources
from tests.planner.support import START, instant, make_cluster, one

STEPS = 60
CLUSTER = make_cluster({"vcores": 8, "memory": "16GiB"}, steps=STEPS,
                       changes=[(70, {"vcores": 4}), (90, {"vcores": 8})])
BUNDLE = Resources.of({"vcores": 1.0, "memory": 1024.0})
V = CLUSTER.resource_names.index("vcores")
RESERVATION = one("reservation r { atom(b={vcores: 1}, w=1m) }")

def named(index: int) -> Reservation:
    return replace(RESERVATION, name=f"r{index}")


lease = st.tuples(st.integers(0, STEPS - 1), st.integers(1, 20), st.integers(1, 2)).map(
    lambda t: Allocation("x", t[0], min(t[0] + t[1], STEPS), t[2], BUNDLE))


@settings(max_examples=60, deadline=None)
@given(held=st.lists(st.lists(lease, min_size=1, max_size=3), max_size=4), moves=st.lists(st.integers(0, 50),
                                                                                         min_size=1, max_size=4))
def test_a_rolled_plan_is_the_fresh_plan_of_its_window_with_the_same_leases(held: list[list[Allocation]],
                                                                            moves: list[int]) -> None:
    plan = Plan(CLUSTER)
    for index, allocations in enumerate(held):
        plan.add(Accepted(named(index), START, allocations))
    step = 0
    for move in moves:
        step += move
        plan.roll(instant(step))
        fresh = Plan(window_cluster(CLUSTER, instant(step)), instant(step))
        offset = window_offset(CLUSTER, instant(step))
        for index, allocations in enumerate(held):
            fresh.add(Accepted(named(index), START, [Allocation(a.atom, a.start - offset, a.end - offset, a.bundles,
                                                               a.bundle) for a in allocations]))
        assert plan.clock == fresh.clock and plan.now == fresh.now and plan.now_step == 0
        assert np.array_equal(plan.capacity, fresh.capacity)  # the changes at steps 70 and 90 come into the window
        assert np.array_equal(plan.used, fresh.used)
        assert [a.allocations for a in plan.accepted.values()] == [a.allocations for a in fresh.accepted.values()]


def test_rolling_a_copy_leaves_the_original_as_it_was() -> None:
    plan = Plan(CLUSTER)
    plan.add(Accepted(RESERVATION, START, [Allocation("x", 5, 10, 1, BUNDLE)]))
    twin = plan.copy()
    assert twin.roll(instant(7)) == 7
    assert plan.accepted["r"].allocations == [Allocation("x", 5, 10, 1, BUNDLE)]
    assert twin.accepted["r"].allocations == [Allocation("x", -2, 3, 1, BUNDLE)]
    assert plan.used[V, 5:10].tolist() == [1.0] * 5 and twin.used[V, 0:3].tolist() == [1.0] * 3
    assert plan.clock.origin == START and twin.clock.origin == instant(7)


def test_removing_a_running_reservation_after_a_roll_frees_exactly_its_part_in_the_window() -> None:
    plan = Plan(CLUSTER)
    plan.add(Accepted(RESERVATION, START, [Allocation("x", 5, 30, 2, BUNDLE)]))
    plan.roll(instant(20))
    assert plan.used[V, :10].tolist() == [2.0] * 10 and not plan.used[V, 10:].any()
    plan.remove("r")
    assert not plan.used.any()
