"""The free-capacity tree against the dense answer: least room, and the first step from either end with room at
most or at least a bound, after random trial placements laid and taken back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.agents.greedy.pack import gang_room
from planner.core import freetree, treekernels
from planner.core.freetree import FreeTree, cap
from planner.core.plan import Accepted, Allocation, Plan
from rdl.tree import Resources
from tests.planner.support import START, instant, make_cluster, one

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HALVES = st.integers(-4, 40).map(lambda n: n / 2)  # whole and half units, some below zero (over capacity)
DEMANDS = st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0])


def _dense_find(room: np.ndarray, lo: int, hi: int, bound: int, at_least: bool, from_right: bool) -> int:
    hits = [t for t in range(lo, hi) if (room[t] >= bound if at_least else room[t] <= bound)]
    if not hits:
        return -1
    return hits[-1] if from_right else hits[0]


@st.composite
def trees(draw: st.DrawFn) -> tuple[FreeTree, np.ndarray]:
    """A tree over random free capacity (up to a few blocks), maybe in runs of one value, with random spans then
    changed in place."""
    resources = draw(st.integers(1, 3))
    steps = draw(st.integers(0, 3 * treekernels.BLOCK + 7))
    free = draw(hnp.arrays(np.float64, (resources, steps), elements=HALVES))
    if draw(st.booleans()):  # runs of one value, as a plan's are: whole blocks and parts of blocks hold one value
        t = 0
        while t < steps:
            run = draw(st.integers(1, 2 * treekernels.BLOCK))
            free[:, t:t + run] = free[:, t:t + 1]
            t += run
    tree = FreeTree(free)
    for _ in range(draw(st.integers(0, 3))):
        if steps == 0:
            break
        lo = draw(st.integers(0, steps - 1))
        hi = draw(st.integers(lo + 1, steps))
        tree.free[:, lo:hi] -= draw(HALVES)
        tree.touched(lo, hi)
    return tree, tree.free.copy()


@FAST
@given(data=st.data(), built=trees(), gang=st.integers(1, 3), parallelism=st.one_of(st.none(), st.integers(0, 12)))
def test_searches_give_the_dense_answer(data: st.DataObject, built: tuple[FreeTree, np.ndarray], gang: int,
                                        parallelism: int | None) -> None:
    tree, free = built
    demand = data.draw(hnp.arrays(np.float64, free.shape[0], elements=DEMANDS))
    room = gang_room(free, demand, gang, parallelism)
    steps = free.shape[1]
    lo = data.draw(st.integers(0, steps))
    hi = data.draw(st.integers(lo, steps))
    if hi > lo:
        assert tree.least_room(lo, hi, demand, gang, parallelism) == int(room[lo:hi].min())
    for bound in {0, 1, 2, int(room[lo:hi].max()) if hi > lo else 3}:
        for at_least in (False, True):
            for from_right in (False, True):
                expected = _dense_find(room, lo, hi, bound, at_least, from_right)
                found = tree.find(lo, hi, demand, gang, parallelism, bound, at_least=at_least, from_right=from_right)
                assert found == expected, (bound, at_least, from_right)


SHARES = st.one_of(st.sampled_from([0.1, 0.3, 1 / 3, 0.7, 1.5, 2.2, 1e-3, 37.9]),
                   st.floats(1e-4, 1e4, allow_nan=False, allow_infinity=False))


@FAST
@given(data=st.data(), gang=st.integers(1, 4), parallelism=st.one_of(st.none(), st.integers(0, 40)),
       bound=st.integers(0, 12), at_least=st.booleans())
def test_the_room_test_compares_as_room_at_divides(data: st.DataObject, gang: int, parallelism: int | None,
                                                   bound: int, at_least: bool) -> None:
    """The searches compare free capacity with a threshold per resource instead of dividing (room_test): the same
    answer as room_at at every float, the ones a few ulps either side of each boundary included."""
    resources = data.draw(st.integers(1, 3))
    demand = np.array([data.draw(st.one_of(st.just(0.0), SHARES)) for _ in range(resources)])
    least, fixed = treekernels.room_test(demand, gang, cap(parallelism), bound, at_least)
    for _ in range(20):
        values = np.empty(resources)
        for r in range(resources):
            bundles = data.draw(st.one_of(st.sampled_from([bound * gang, (bound + 1) * gang]),  # where room turns
                                          st.integers(0, 3 * (bound + 1) * gang)))
            slack = data.draw(st.sampled_from([0.0, treekernels.EPSILON]))  # room_at's boundary is k - EPSILON
            values[r] = (bundles - slack) * max(demand[r], 0.25)
            for _ in range(data.draw(st.integers(0, 4))):
                values[r] = np.nextafter(values[r], data.draw(st.sampled_from([np.inf, -np.inf])))
        room = treekernels.room_at(values, demand, gang, cap(parallelism))
        expected = room >= bound if at_least else room <= bound
        assert treekernels.meets(values, least, fixed, at_least) == expected, (values, room)


def test_the_room_test_turns_at_the_same_float_as_room_at() -> None:
    """At each float around where room_at's count turns (k - EPSILON bundles), for 3,000 shares and counts: the
    comparison says what the division says."""
    rng = np.random.default_rng(7)
    for _ in range(3000):
        share = float(rng.choice([rng.uniform(1e-4, 1e4), 0.1, 0.3, 1 / 3, 0.7]))
        gang, bound, at_least = int(rng.integers(1, 4)), int(rng.integers(0, 20)), bool(rng.integers(0, 2))
        demand = np.array([share])
        least, fixed = treekernels.room_test(demand, gang, treekernels.NO_CAP, bound, at_least)
        turn = (bound * gang if at_least else (bound + 1) * gang) - treekernels.EPSILON
        value = np.nextafter(np.nextafter(turn * share, -np.inf), -np.inf)
        for _ in range(5):
            room = treekernels.room_at(np.array([value]), demand, gang, treekernels.NO_CAP)
            assert treekernels.meets(np.array([value]), least, fixed, at_least) == \
                (room >= bound if at_least else room <= bound), (share, gang, bound, at_least, value)
            value = np.nextafter(value, np.inf)


@FAST
@given(built=trees())
def test_the_tree_holds_the_block_minima_and_maxima(built: tuple[FreeTree, np.ndarray]) -> None:
    tree, free = built
    size = tree.mins.shape[1] // 2
    for block in range(-(-free.shape[1] // treekernels.BLOCK)):
        part = free[:, block * treekernels.BLOCK:(block + 1) * treekernels.BLOCK]
        assert np.array_equal(tree.mins[:, size + block], part.min(axis=1))
        assert np.array_equal(tree.maxs[:, size + block], part.max(axis=1))
    if free.shape[1]:
        assert np.array_equal(tree.mins[:, 1], free.min(axis=1)) and np.array_equal(tree.maxs[:, 1], free.max(axis=1))


def test_a_trial_gives_back_every_step_it_touched() -> None:
    capacity = np.full((2, 300), 8.0)
    used = np.zeros_like(capacity)
    used[:, 100:150] = 3.0
    tree = FreeTree(capacity - used)
    with tree.trial(capacity, used):
        tree.free[:, 10:200] -= 5.0
        tree.touched(10, 200)
        assert tree.find(0, 300, np.array([1.0, 0.0]), 1, None, 0) == 100
    assert np.array_equal(tree.free, capacity - used)
    assert tree.least_room(0, 300, np.array([1.0, 1.0]), 1, None) == 5


def _matches(plan: Plan) -> bool:
    """The plan's tree holds its free capacity, and block minima and maxima of it."""
    tree = plan.free_tree()
    fresh = FreeTree(plan.capacity - plan.used)
    return bool(np.array_equal(tree.free, fresh.free) and np.array_equal(tree.mins, fresh.mins)
                and np.array_equal(tree.maxs, fresh.maxs))


LEASES = st.tuples(st.integers(-5, 200), st.integers(1, 90), st.integers(1, 3))


@FAST
@given(held=st.lists(st.lists(LEASES, min_size=1, max_size=3), min_size=1, max_size=5),
       removed=st.integers(0, 4), rolled=st.integers(0, 100))
def test_the_plans_tree_follows_its_allocations(held: list[list[tuple[int, int, int]]], removed: int,
                                                rolled: int) -> None:
    cluster = make_cluster({"vcores": 8, "memory": "16GiB"}, steps=200, changes=[(120, {"vcores": 4})])
    bundle = Resources.of({"vcores": 1.0, "memory": 1024.0})
    plan = Plan(cluster)
    plan.free_tree()  # built first: every change after this is one it must follow
    for index, leases in enumerate(held):
        allocations = [Allocation("x", start, start + length, count, bundle) for start, length, count in leases]
        plan.add(Accepted(replace(one("reservation r { atom(b={vcores: 1}, w=1m) }"), name=f"r{index}"), START,
                          allocations))
        assert _matches(plan)
    twin = plan.copy()
    plan.remove(f"r{removed % len(held)}")
    assert _matches(plan) and _matches(twin)  # the copy's tree is its own: the removal did not reach it
    plan.roll(instant(rolled))
    assert _matches(plan)
    plan.used = plan.used + 1.0  # a caller setting the arrays: the tree is laid again from them
    assert _matches(plan)


@st.composite
def deep_trees(draw: st.DrawFn) -> tuple[FreeTree, np.ndarray]:
    """A tree of many blocks (several levels) over free capacity made of long runs, as a plan at fine steps holds."""
    resources = draw(st.integers(1, 2))
    steps = draw(st.integers(1, 40 * treekernels.BLOCK))
    free = np.empty((resources, steps))
    t = 0
    while t < steps:
        run = draw(st.integers(1, 600))
        free[:, t:t + run] = np.array(draw(st.lists(st.integers(-1, 6), min_size=resources,
                                                    max_size=resources)), dtype=np.float64)[:, None]
        t += run
    return FreeTree(free), free


@FAST
@given(data=st.data(), built=deep_trees(), gang=st.integers(1, 2))
def test_searches_over_many_blocks_give_the_dense_answer(data: st.DataObject, built: tuple[FreeTree, np.ndarray],
                                                         gang: int) -> None:
    tree, free = built
    demand = data.draw(hnp.arrays(np.float64, free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    room = gang_room(free, demand, gang, None)
    steps = free.shape[1]
    lo = data.draw(st.integers(0, steps - 1))
    hi = data.draw(st.integers(lo + 1, steps))
    assert tree.least_room(lo, hi, demand, gang, None) == int(room[lo:hi].min())
    for bound in (0, 1, 2, 3):
        for at_least in (False, True):
            for from_right in (False, True):
                found = tree.find(lo, hi, demand, gang, None, bound, at_least=at_least, from_right=from_right)
                assert found == _dense_find(room, lo, hi, bound, at_least, from_right), (bound, at_least, from_right)


def _dense_summary(free: np.ndarray, lo: int, hi: int, demand: np.ndarray, gang: int,
                   parallelism: int | None) -> tuple[int, int]:
    bundles = gang_room(free[:, lo:hi], demand, 1, parallelism)
    return int(bundles.max()), int((bundles // gang).sum())


@FAST
@given(data=st.data(), built=st.one_of(trees(), deep_trees()), gang=st.integers(1, 3),
       parallelism=st.one_of(st.none(), st.integers(0, 12)))
def test_the_room_summary_counts_what_the_dense_room_counts(data: st.DataObject, built: tuple[FreeTree, np.ndarray],
                                                            gang: int, parallelism: int | None) -> None:
    """A rejection's reason reads the most bundles free at once and the whole gangs free over the window from the
    tree, a run of one value at a time: the same counts as the window's room step by step."""
    tree, free = built
    if free.shape[1] == 0:
        return
    demand = data.draw(hnp.arrays(np.float64, free.shape[0], elements=DEMANDS))
    lo = data.draw(st.integers(0, free.shape[1] - 1))
    hi = data.draw(st.integers(lo + 1, free.shape[1]))
    assert tree.room_summary(lo, hi, demand, gang, parallelism) == _dense_summary(free, lo, hi, demand, gang,
                                                                                  parallelism)


def test_the_tree_holds_the_plan_where_no_open_trial_wrote() -> None:
    capacity = np.full((1, 400), 8.0)
    used = np.zeros_like(capacity)
    tree = FreeTree(capacity - used)
    assert tree.holds_plan(0, 400)
    with tree.trial(capacity, used):
        tree.free[:, 100:150] -= 1.0
        tree.touched(100, 150)
        with tree.trial(capacity, used):
            tree.free[:, 300:320] -= 1.0
            tree.touched(300, 320)
            assert not tree.holds_plan(310, 311) and not tree.holds_plan(149, 151)
            assert tree.holds_plan(150, 300) and tree.holds_plan(0, 100)
        assert not tree.holds_plan(300, 320)  # the inner trial gave them back; the outer one still resets them
        assert tree.holds_plan(320, 400)
    assert tree.holds_plan(0, 400) and np.array_equal(tree.free, capacity - used)


@FAST
@given(data=st.data(), built=st.one_of(trees(), deep_trees()))
def test_taking_from_a_span_keeps_the_tree_as_a_fresh_build(data: st.DataObject,
                                                            built: tuple[FreeTree, np.ndarray]) -> None:
    """A placement laid on the tree moves the least and greatest of each block it covers whole by the same
    subtraction: after it (and its ancestors pulled), the tree is what building it afresh from the steps gives."""
    tree, free = built[0], built[1].copy()  # a deep tree's free is the array it was built on
    if free.shape[1] == 0:
        return
    lo = data.draw(st.integers(0, free.shape[1] - 1))
    hi = data.draw(st.integers(lo + 1, free.shape[1]))
    amounts = data.draw(hnp.arrays(np.float64, free.shape[0], elements=st.sampled_from([0.1, 0.5, 1 / 3, -2.0, 7.3])))
    treekernels.take_from(tree.free, tree.mins, tree.maxs, lo, hi, amounts)
    treekernels.pull_above(tree.mins, tree.maxs, lo, hi)
    expected = free.copy()
    expected[:, lo:hi] -= amounts[:, None]
    fresh = FreeTree(expected)
    assert np.array_equal(tree.free, expected)
    assert np.array_equal(tree.mins, fresh.mins) and np.array_equal(tree.maxs, fresh.maxs)


def test_an_answer_is_remembered_until_the_tree_is_next_written() -> None:
    capacity, used = np.full((1, 40), 4.0), np.zeros((1, 40))
    tree = FreeTree(capacity - used)
    asked: list[int] = []

    def ask() -> int:
        return tree.answer("question", lambda: asked.append(1) or len(asked))

    assert (ask(), ask()) == (1, 1)
    tree.reset(capacity, used, 40, 50)  # past the steps: nothing written
    assert ask() == 1
    tree.reset(capacity, used, 0, 5)
    assert (ask(), ask()) == (2, 2)
    with tree.trial(capacity, used):
        tree.free[:, 3] -= 1
        tree.touched(3, 4)
        assert (ask(), ask()) == (3, 3)
    assert ask() == 4  # the trial took its write back
    assert tree.copy().answer("question", lambda: 0) == 0  # a copy remembers nothing
    for n in range(freetree.ANSWERS_KEPT):  # no write for a long while: it remembers a bounded number of answers
        tree.answer(n, lambda: 0)
    assert len(tree._answers) <= freetree.ANSWERS_KEPT and ask() == 5
