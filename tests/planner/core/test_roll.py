"""The rolling window: a plan rolled forward equals the plan laid fresh over the new window with the same leases."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.core.check import _capacity, _Grid  # the checker's own reading of the cluster file
from planner.core.plan import Accepted, Allocation, Plan, window_cluster, window_offset
from rdl.cluster import parse_cluster
from rdl.tree import Reservation, Resources
from tests.planner.support import START, cluster_text, instant, make_cluster, one

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
        assert plan.clock == fresh.clock and plan.now == fresh.now and 0 <= plan.now_step < CLUSTER.roll_steps
        assert np.array_equal(plan.capacity, fresh.capacity)  # the changes at steps 70 and 90 come into the window
        assert np.array_equal(plan.used, fresh.used)
        assert [a.allocations for a in plan.accepted.values()] == [a.allocations for a in fresh.accepted.values()]


def test_rolling_a_copy_leaves_the_original_as_it_was() -> None:
    plan = Plan(CLUSTER)
    plan.add(Accepted(RESERVATION, START, [Allocation("x", 5, 10, 1, BUNDLE)]))
    twin = plan.copy()
    assert CLUSTER.roll_steps == 3 and twin.roll(instant(8)) == 6  # the window moves by whole roll_steps
    assert plan.accepted["r"].allocations == [Allocation("x", 5, 10, 1, BUNDLE)]
    assert twin.accepted["r"].allocations == [Allocation("x", -1, 4, 1, BUNDLE)]
    assert plan.used[V, 5:10].tolist() == [1.0] * 5 and twin.used[V, 0:4].tolist() == [1.0] * 4
    assert plan.clock.origin == START and twin.clock.origin == instant(6) and twin.now_step == 2


def test_removing_a_running_reservation_after_a_roll_frees_exactly_its_part_in_the_window() -> None:
    plan = Plan(CLUSTER)
    plan.add(Accepted(RESERVATION, START, [Allocation("x", 5, 30, 2, BUNDLE)]))
    plan.roll(instant(21))
    assert plan.used[V, :9].tolist() == [2.0] * 9 and not plan.used[V, 9:].any()
    plan.remove("r")
    assert not plan.used.any()


@settings(max_examples=80, deadline=None)
@given(at=st.integers(-300, 300), every=st.integers(60, 400), length=st.integers(1, 59), origin=st.integers(0, 500),
       value=st.sampled_from([2, 12]))
def test_recurring_changes_give_the_plan_and_the_checker_the_same_capacity(at: int, every: int, length: int,
                                                                          origin: int, value: int) -> None:
    """Windows in seconds on a one-minute grid, on and off it: both count a step's least capacity."""
    text = cluster_text({"vcores": 8, "memory": "16GiB"}, steps=60, changes=[(30, {"vcores": 6})])
    start = START + timedelta(seconds=at)
    text += (f"  - {{at: {start:%Y-%m-%dT%H:%M:%SZ}, every: {every}m, for: {length}m, "
             f"capacity: {{vcores: {value}}}}}\n") if at % 2 else \
        (f"  - {{at: {start:%Y-%m-%dT%H:%M:%SZ}, every: {every * 60 + 30}s, for: {length * 60 - 30}s, "
         f"capacity: {{vcores: {value}}}}}\n")
    cluster = window_cluster(parse_cluster(text, "cluster.yaml"), instant(origin))
    plan = Plan(cluster)
    assert np.array_equal(plan.capacity, _capacity(cluster, _Grid(cluster, cluster.steps)))


def test_a_weekly_dip_comes_back_every_week_as_the_plan_rolls() -> None:
    text = ("start: 2026-11-23T00:00:00Z\nstep: 1h\nhorizon: 7d\ncapacity: {vcores: 8}\nchanges:\n"
            "  - {at: 2026-11-26T00:00:00Z, every: 7d, for: 6h, capacity: {vcores: 4}}\n")
    plan = Plan(parse_cluster(text, "cluster.yaml"))
    for week in range(3):
        plan.roll(START + timedelta(days=7 * week))
        dips = [plan.clock.at(step) for step in range(plan.clock.steps) if plan.capacity[0, step] == 4]
        thursday = START + timedelta(days=7 * week + 3)
        assert dips == [thursday + timedelta(hours=hour) for hour in range(6)]


def test_the_planners_advance_is_the_roll_one_clock_for_the_store_the_service_and_the_simulator() -> None:
    from planner.admission import Planner

    planner, plan = Planner(CLUSTER), Plan(CLUSTER)
    for each in (planner.plan, plan):
        each.add(Accepted(RESERVATION, START, [Allocation("x", 5, 30, 2, BUNDLE)]))
    assert planner.advance(instant(21)) == plan.roll(instant(21)) == 21
    assert planner.plan.clock == plan.clock and planner.plan.clock.origin == instant(21)
    assert np.array_equal(planner.plan.used, plan.used) and np.array_equal(planner.plan.capacity, plan.capacity)
    assert planner.advance(instant(10)) == 0 and planner.plan.now == instant(21)  # never back


def test_a_roll_reads_no_allocation_the_reservations_are_re_based_when_read() -> None:
    plan = Plan(CLUSTER)
    held = Accepted(RESERVATION, START, [Allocation("x", 5, 30, 2, BUNDLE)])
    plan.add(held)
    plan.roll(instant(9))
    plan.roll(instant(12))  # two rolls before any read: one shift of 12 when read
    entry, origin = plan.accepted._entries["r"]
    assert entry is held and origin == 0  # untouched by the rolls
    assert plan.accepted["r"].allocations == [Allocation("x", -7, 18, 2, BUNDLE)]
    assert plan.accepted._entries["r"][1] == 12 and held.allocations == [Allocation("x", 5, 30, 2, BUNDLE)]


@settings(max_examples=60, deadline=None)
@given(moves=st.lists(st.integers(0, 30), min_size=1, max_size=5), reads=st.lists(st.booleans(), min_size=5,
                                                                                  max_size=5))
def test_reading_between_rolls_or_not_gives_the_same_allocations(moves: list[int], reads: list[bool]) -> None:
    read, unread = Plan(CLUSTER), Plan(CLUSTER)
    for plan in (read, unread):
        plan.add(Accepted(RESERVATION, START, [Allocation("x", 40, 55, 1, BUNDLE)]))
    twin, step = read.copy(), 0
    for move, look in zip(moves, reads, strict=False):
        step += move
        read.roll(instant(step))
        unread.roll(instant(step))
        if look:
            assert read.accepted["r"].allocations[0].end - read.accepted["r"].allocations[0].start == 15
    assert read.accepted == unread.accepted and dict(read.accepted) == dict(unread.accepted)
    assert twin.accepted["r"].allocations == [Allocation("x", 40, 55, 1, BUNDLE)]  # a copy from before: its origin
