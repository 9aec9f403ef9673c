"""GREE's candidates that an `order` without a gap cannot use are counted, not placed (passover.py): the count is
what placing them one by one spends, on a copy and on the tree, and the order's search finds what the long way
finds, with the same budget left and, mostly, fewer placements (where the tries run out before the budget, finding
the last one halves)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.agents.greedy import pack
from planner.agents.greedy import placer as placer_module
from planner.agents.greedy.ontree import TreeView
from planner.agents.greedy.passover import tries_left
from planner.agents.greedy.placer import Ceiling, Placer
from planner.agents.greedy.room import AtomRoom
from planner.agents.greedy.solution import Solution, last_end
from planner.core.compile import AtomTask, Task, compile_reservation
from planner.core.plan import Plan
from tests.planner.agents.placing import failure_data, orders_on_plans, solution_data
from tests.planner.agents.test_ontree import views
from tests.planner.support import parse

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def atoms_in_views(draw: st.DrawFn) -> tuple[TreeView, AtomTask]:
    """A tree view (test_ontree's) and an atom with a window inside it."""
    view = draw(views())
    demand = draw(hnp.arrays(np.float64, view.free.shape[0], elements=st.sampled_from([0.0, 1.0, 2.0])))
    steps = view.free.shape[1]
    lo = draw(st.integers(0, steps - 1))
    hi = draw(st.integers(lo + 1, steps))
    task = AtomTask("a", None, demand, draw(st.integers(1, 2)),  # type: ignore[arg-type]
                    draw(st.one_of(st.none(), st.integers(1, 9))), draw(st.integers(1, 30)),
                    draw(st.integers(1, 40)), lo, hi)
    return view, task


@FAST
@given(case=atoms_in_views(), count=st.integers(0, 70))
def test_open_starts_on_the_tree_are_the_dense_ones(case: tuple[TreeView, AtomTask], count: int) -> None:
    view, task = case
    room = pack.gang_room(np.ascontiguousarray(view.free[:, task.lo:task.hi]), task.demand, task.gang,
                          task.parallelism)
    expected = pack.open_starts(room, task.length, count) + task.lo
    assert view.open_starts(task, task.lo, task.hi, count).tolist() == expected.tolist()


def _placed_one_by_one(placer: Placer, task: AtomTask, lo: int, bound: int, room: AtomRoom, limit: int) -> int:
    """What GREE's candidates spend, placed one by one from the window [lo, bound) on (Placer._atom_candidates)."""
    spent = 0
    while spent < limit:
        spent += 1
        placed = placer.place_atom(task, lo, bound, False, room)
        if placed is None:
            break
        bound = last_end(placed) - 1
    return spent


@FAST
@given(case=atoms_in_views(), tree=st.booleans(), limit=st.integers(0, 70))
def test_tries_left_is_what_placing_them_one_by_one_spends(case: tuple[TreeView, AtomTask], tree: bool,
                                                           limit: int) -> None:
    view, task = case
    free = np.ascontiguousarray(view.free)
    placer = Placer(free, np.zeros_like(free), flat=False, tree=view if tree else None)
    room = AtomRoom(placer, task, task.lo, task.hi)
    expected = _placed_one_by_one(placer, task, task.lo, task.hi, room, limit)
    assert tries_left(placer, task, task.lo, task.hi, room, limit) == expected
    assert np.array_equal(placer.free, free)


class _Unheeded(Ceiling):
    """A ceiling whose `after` the atom's search never sees: every GREE candidate is placed and offered."""

    @property  # type: ignore[override]
    def after(self) -> None:
        return None

    @after.setter
    def after(self, value: int | None) -> None:
        pass


Searched = tuple[object, object, int, int, bytes]  # solution, failure, budget left, placements made, scratch after


def _searched(plan: Plan, task: Task, budget: int, lays: bool, long_way: bool) -> Searched:
    placer = Placer(plan.free(), plan.capacity, True, budget, lays=lays)
    placed = 0
    original = placer.place_atom

    def counted(task: AtomTask, lo: int, hi: int, spread: bool, room: AtomRoom) -> Solution | None:
        nonlocal placed
        placed += 1
        return original(task, lo, hi, spread, room)

    placer.place_atom = counted  # type: ignore[method-assign]
    with pytest.MonkeyPatch.context() as patch:
        if long_way:
            patch.setattr(placer_module, "Ceiling", _Unheeded)
        search = placer.search(task, task.lo, task.hi, (task.lo, task.hi))
        found = solution_data(next(search, None))
        search.close()
    return found, failure_data(placer.failure), placer.budget, placed, placer.free.tobytes()


def test_an_order_passes_over_the_candidates_its_stages_before_cannot_use() -> None:
    fewer = 0
    for planner, text in orders_on_plans(seed=11, count=120, gaps=None):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        for budget in (*range(1, 13), 16, 24, 32, 64):  # every small budget: where a charge that is off shows
            for lays in (True, False):
                short = _searched(plan, instance.task, budget, lays, long_way=False)
                long = _searched(plan, instance.task, budget, lays, long_way=True)
                case = (text, budget, lays)
                assert short[:3] == long[:3], case  # the same solution, failure and budget left
                assert short[3] <= long[3] + budget.bit_length(), case  # one placement, or a halving's
                assert short[4] == long[4] == plan.free().tobytes()
                fewer += short[3] < long[3]
    assert fewer >= 50, fewer
