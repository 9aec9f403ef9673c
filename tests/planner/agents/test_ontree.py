"""GREE's latest search on the free-capacity tree against the dense one (pack.latest over pack.gang_room), on the
plan's axis and mirrored, with the tree changed in place as a placer changes it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.agents.greedy import pack
from planner.agents.greedy.ontree import TreeView, tree_tiles
from planner.core import treekernels
from planner.core.compile import AtomTask
from planner.core.freetree import FreeTree, cap
from tests.planner.support import numpy_kernels

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVELS = st.integers(-2, 12).map(float)


@st.composite
def views(draw: st.DrawFn) -> TreeView:
    """A tree over free capacity made of runs (as a plan's is), a few spans then changed in place, maybe mirrored."""
    resources = draw(st.integers(1, 2))
    steps = draw(st.integers(1, 9 * treekernels.BLOCK + 9))
    free = np.empty((resources, steps))
    t = 0
    while t < steps:
        run = draw(st.one_of(st.integers(1, 40), st.integers(treekernels.BLOCK, 4 * treekernels.BLOCK)))
        free[:, t:t + run] = np.array(draw(st.lists(LEVELS, min_size=resources, max_size=resources)))[:, None]
        t += run
    view = TreeView(FreeTree(free), mirrored=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 2))):
        lo = draw(st.integers(0, steps - 1))
        hi = draw(st.integers(lo + 1, steps))
        view.free[:, lo:hi] -= draw(st.integers(0, 3))
        view.touched(lo, hi)
    return view


@FAST
@given(data=st.data(), view=views(), length=st.integers(1, 30), leases=st.integers(1, 40), gang=st.integers(1, 2),
       parallelism=st.one_of(st.none(), st.integers(1, 9)))
def test_latest_on_the_tree_gives_the_dense_leases(data: st.DataObject, view: TreeView, length: int, leases: int,
                                                    gang: int, parallelism: int | None) -> None:
    demand = data.draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    steps = view.free.shape[1]
    lo = data.draw(st.integers(0, steps - 1))
    hi = data.draw(st.integers(lo + 1, steps))
    room = pack.gang_room(np.ascontiguousarray(view.free[:, lo:hi]), demand, gang, parallelism)
    with pytest.MonkeyPatch.context() as patch:  # the numpy path, whatever the window's length
        numpy_kernels(patch)
        expected = pack.latest(room, length, leases) if hi - lo >= length else None
    found = view.latest(demand, gang, parallelism, lo, hi, length, leases)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert found[0].tolist() == expected[0].tolist() and found[1].tolist() == expected[1].tolist()



@FAST
@given(data=st.data(), view=views(), length=st.integers(1, 80), leases=st.integers(1, 40), gang=st.integers(1, 2),
       parallelism=st.one_of(st.none(), st.integers(1, 9)))
def test_flattest_on_the_tree_gives_the_dense_leases(data: st.DataObject, view: TreeView, length: int, leases: int,
                                                      gang: int, parallelism: int | None) -> None:
    demand = data.draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    steps = view.free.shape[1]
    lo = data.draw(st.integers(0, steps - 1))
    hi = data.draw(st.integers(lo + 1, steps))
    task = AtomTask("a", None, demand, gang, parallelism, length, leases, lo, hi)  # type: ignore[arg-type]
    room = pack.gang_room(np.ascontiguousarray(view.free[:, lo:hi]), demand, gang, parallelism)
    expected = pack.flattest(room, length, leases)
    found = view.blocks(True, task, lo, hi)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert found[0].tolist() == expected[0].tolist() and found[1].tolist() == expected[1].tolist()


@FAST
@given(data=st.data(), view=views(), length=st.integers(1, 30), gang=st.integers(1, 3))
def test_laying_a_placement_on_the_tree_writes_what_the_placer_writes(data: st.DataObject, view: TreeView,
                                                                      length: int, gang: int) -> None:
    steps = view.free.shape[1]
    if steps < length:
        return
    demand = data.draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    starts = np.array(data.draw(st.lists(st.integers(0, steps - length), min_size=1, max_size=5, unique=True)))
    gangs = np.array(data.draw(st.lists(st.integers(1, 4), min_size=starts.size, max_size=starts.size)))
    task = AtomTask("a", None, demand, gang, None, length, 1, 0, steps)  # type: ignore[arg-type]
    expected = view.free.copy()
    held = np.zeros(steps + 1, dtype=np.int64)
    np.add.at(held, starts, gangs)
    np.add.at(held, starts + length, -gangs)
    expected -= np.outer(demand, np.cumsum(held[:-1]) * gang)
    view.lay(starts, gangs, task, +1)
    assert np.array_equal(view.free, expected)
    fresh = FreeTree(view.tree.free)
    assert np.array_equal(view.tree.mins, fresh.mins) and np.array_equal(view.tree.maxs, fresh.maxs)


@FAST
@given(room=hnp.arrays(np.float64, st.integers(2, 60), elements=st.integers(0, 5).map(float)),
       length=st.integers(2, 6), leases=st.integers(1, 40), mirrored=st.booleans())
def test_latest_on_the_tree_holds_every_piece_between_laid_starts(room: np.ndarray, length: int, leases: int,
                                                                   mirrored: bool) -> None:
    """Room that changes at every step: leases laid start by start leave pieces between their starts whose room
    left binds a later lease (the tree's sliding minimum over those pieces)."""
    view = TreeView(FreeTree((room[::-1] if mirrored else room)[None, :].copy()), mirrored=mirrored)
    with pytest.MonkeyPatch.context() as patch:
        numpy_kernels(patch)
        expected = pack.latest(room.astype(np.int64), length, leases) if room.size >= length else None
    found = view.latest(np.array([1.0]), 1, None, 0, room.size, length, leases)
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:
        assert found[0].tolist() == expected[0].tolist() and found[1].tolist() == expected[1].tolist()


@FAST
@given(data=st.data(), view=views(), length=st.integers(1, 80), gang=st.integers(1, 2),
       parallelism=st.one_of(st.none(), st.integers(1, 9)), enough=st.integers(0, 12))
def test_each_tiles_room_on_the_tree_is_the_dense_one(data: st.DataObject, view: TreeView, length: int, gang: int,
                                                      parallelism: int | None, enough: int) -> None:
    """Every tile's, or (with `enough`) the last tiles' up to the one that makes that many with room."""
    demand = data.draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    steps = view.free.shape[1]
    lo = data.draw(st.integers(0, steps - 1))
    hi = data.draw(st.integers(lo + 1, steps))
    room = pack.gang_room(np.ascontiguousarray(view.free[:, lo:hi]), demand, gang, parallelism)
    tree = view.tree
    found = tree_tiles(tree.free, tree.mins, tree.maxs, view.mirrored, lo, hi, length, demand, gang,
                       cap(parallelism), enough)
    expected = pack.tile_room(room, length)
    with_room = np.cumsum(expected > 0)
    if enough > 0 and with_room.size and with_room[-1] >= enough:
        expected = expected[:int(np.argmax(with_room >= enough)) + 1]
    assert found.tolist() == expected.tolist()


@FAST
@given(data=st.data(), view=views(), length=st.integers(1, 12), leases=st.integers(1, 12), gang=st.integers(1, 2))
def test_an_answer_asked_again_is_the_dense_one_after_any_write(data: st.DataObject, view: TreeView, length: int,
                                                                leases: int, gang: int) -> None:
    """The same questions asked again and again, between placements laid, taken back and a trial closed: every
    answer is the one a dense read of the free capacity at that moment gives (a remembered answer never outlives a
    write to the tree)."""
    steps = view.free.shape[1]
    demand = data.draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    windows = data.draw(st.lists(st.tuples(st.integers(0, steps - 1), st.integers(1, steps)), min_size=1,
                                 max_size=3))
    windows = [(lo, max(lo + 1, hi)) for lo, hi in windows]
    task = AtomTask("a", None, demand, gang, None, length, leases, 0, steps)  # type: ignore[arg-type]
    plan_free = view.tree.free.copy()
    laid = []

    def answers_are_dense() -> None:
        for lo, hi in windows:
            room = pack.gang_room(np.ascontiguousarray(view.free[:, lo:hi]), demand, gang, None)
            with pytest.MonkeyPatch.context() as patch:
                numpy_kernels(patch)
                latest = pack.latest(room, length, leases) if hi - lo >= length else None
            for spread, expected in ((False, latest), (True, pack.flattest(room, length, leases))):
                found = view.blocks(spread, task, lo, hi)
                assert (found is None) == (expected is None)
                if found is not None and expected is not None:
                    assert found[0].tolist() == expected[0].tolist() and found[1].tolist() == expected[1].tolist()
                    found[1][:] = 99  # a caller's copy: writing it changes no later answer

    capacity = np.full_like(plan_free, 50.0)
    with view.tree.trial(capacity, capacity - plan_free):  # the plan's use, on the tree's own axis
        for _ in range(data.draw(st.integers(1, 4))):
            answers_are_dense()
            if steps >= length and data.draw(st.booleans()):
                starts = np.array([data.draw(st.integers(0, steps - length))])
                view.lay(starts, np.array([1]), task, +1)
                laid.append(starts)
            elif laid:
                view.lay(laid.pop(), np.array([1]), task, -1)
        answers_are_dense()
    assert np.array_equal(view.tree.free, plan_free)  # the trial closed: the plan's own free capacity again
    answers_are_dense()
