"""The placer's cost of a placement laid on the free-capacity tree (treecost.py) against the one on a copy
(runcost.py, or treecost.py's on a long copy), to the last bit: the same runs, the same terms, added in the same
order; and costed as laid, without laying it, the same as laid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.agents.greedy import pack
from planner.agents.greedy.ontree import TreeView
from planner.agents.greedy.placer import Placer
from planner.agents.greedy.runcost import runs_cost
from planner.agents.greedy.solution import AtomPlacement
from planner.agents.greedy.treecost import pieces, solution_cost
from planner.core.compile import AtomTask
from planner.core.freetree import FreeTree
from tests.planner.support import numpy_kernels

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVELS = st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.5, 16.0, 1024.0, 3.0e6])


@st.composite
def placements(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, list[AtomPlacement], bool]:
    """Capacity (zero in places) and use on a plan of up to a few thousand steps, and a solution of one to three
    atoms whose leases are spread thin over it."""
    resources = draw(st.integers(1, 3))
    steps = draw(st.sampled_from([40, 300, 2_000, 5_000]))
    capacity = np.repeat(draw(hnp.arrays(np.float64, (resources, 1), elements=LEVELS)), steps, axis=1)
    for _ in range(draw(st.integers(0, 3))):
        lo = draw(st.integers(0, steps - 1))
        capacity[:, lo:draw(st.integers(lo + 1, steps))] = draw(LEVELS)
    used = np.minimum(capacity, draw(hnp.arrays(np.float64, (resources, steps), elements=LEVELS)))
    solution = []
    for index in range(draw(st.integers(1, 3))):
        length = draw(st.integers(1, min(steps, 200)))
        starts = np.array(draw(st.lists(st.integers(0, steps - length), min_size=1, max_size=12, unique=True)))
        gangs = np.array(draw(st.lists(st.integers(1, 5), min_size=starts.size, max_size=starts.size)))
        demand = draw(hnp.arrays(np.float64, resources, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 1024.0])))
        task = AtomTask(f"a{index}", None, demand, draw(st.integers(1, 3)), None, length, 1, 0,  # type: ignore[arg-type]
                        steps)
        solution.append(AtomPlacement(task, starts, gangs))
    return capacity, used, solution, draw(st.booleans())


def _numpy_cost(solution: list[AtomPlacement], capacity: np.ndarray, free: np.ndarray, laid: bool = True) -> float:
    """The placer's cost in numpy (runcost.py), placement by placement, whatever the window's length: `free` on the
    plan's axis from step 0."""
    total = 0.0
    for placement in solution:
        base, held = placement.held()
        span = slice(base, base + held.shape[0])
        total += runs_cost(capacity[:, span], free[:, span], placement.task.demand, held, laid)
    return total


@FAST
@given(drawn=placements())
def test_the_cost_on_the_tree_is_the_numpy_cost_to_the_bit(
        drawn: tuple[np.ndarray, np.ndarray, list[AtomPlacement], bool]) -> None:
    capacity, used, solution, mirrored = drawn
    view = TreeView(FreeTree(capacity - used), mirrored=mirrored)
    axis = capacity[:, ::-1] if mirrored else capacity  # the placer's capacity is on the view's axis
    dense = _numpy_cost(solution, axis, np.ascontiguousarray(view.free))
    assert Placer(view.free, axis, flat=False, tree=view).cost(solution) == dense


@FAST
@given(drawn=placements(), laid=st.booleans(), origin=st.integers(0, 70), numpy=st.booleans())
def test_the_placers_cost_on_a_copy_is_the_numpy_cost_to_the_bit(
        drawn: tuple[np.ndarray, np.ndarray, list[AtomPlacement], bool], laid: bool, origin: int,
        numpy: bool) -> None:
    """A placer's copy is costed compiled where pack's kernels run compiled (pack.compiled_for), else in numpy
    (runcost.py): the same, to the bit, laid or not, on a copy that starts `origin` steps into the plan."""
    capacity, used, solution, _ = drawn
    expected = _numpy_cost(solution, capacity, capacity - used, laid)
    later = [AtomPlacement(p.task, p.starts + origin, p.gangs) for p in solution]  # on the plan's axis
    plan_capacity = np.concatenate([np.ones((capacity.shape[0], origin)), capacity], axis=1)
    placer = Placer(capacity - used, plan_capacity, flat=False, origin=origin)
    with pytest.MonkeyPatch.context() as patch:
        if numpy:
            numpy_kernels(patch)
        else:
            patch.setattr(pack, "COMPILED_FROM", 0)
        assert placer.cost(later, laid=laid) == expected
    assert solution_cost(later, plan_capacity, capacity - used, origin, laid) == expected


@FAST
@given(drawn=placements(), tree=st.booleans())
def test_an_atom_costed_as_laid_costs_what_it_does_laid(
        drawn: tuple[np.ndarray, np.ndarray, list[AtomPlacement], bool], tree: bool) -> None:
    """An `any` ranks its atoms without laying them (Placer._ranked): read as laying would leave each step."""
    capacity, used, solution, mirrored = drawn
    axis = capacity[:, ::-1] if mirrored else capacity
    for placement in solution:
        view = TreeView(FreeTree(capacity - used), mirrored=mirrored)
        placer = Placer(view.free if tree else np.ascontiguousarray(view.free), axis, flat=False,
                        tree=view if tree else None)
        before = placer.free.tobytes()
        unlaid = placer.cost([placement], laid=False)
        assert placer.free.tobytes() == before
        placer.apply([placement], +1)
        assert placer.cost([placement]) == unlaid


@FAST
@given(length=st.integers(1, 50), leases=st.lists(st.tuples(st.integers(0, 400), st.integers(1, 4)), min_size=1,
                                                     max_size=10))
def test_pieces_are_the_runs_where_the_leases_hold_something(length: int, leases: list[tuple[int, int]]) -> None:
    starts = np.array([start for start, _ in leases])
    gangs = np.array([count for _, count in leases])
    held = np.zeros(starts.max() + length + 1, dtype=np.int64)
    np.add.at(held, starts, gangs)
    np.add.at(held, starts + length, -gangs)
    held = np.cumsum(held)
    los, his, counts = pieces(starts, gangs, length)
    rebuilt = np.zeros_like(held)
    for lo, hi, count in zip(los, his, counts, strict=True):
        assert count != 0 and lo < hi
        rebuilt[lo:hi] = count
    assert np.array_equal(rebuilt, held)
    assert np.all(his[:-1] <= los[1:])
