"""A whole request's `order` stops once a stage finds no room even alone in the widest stretch the other stages leave
it, and that decides what the long search decides: no placement of the stage exists there (GREE's latest placement
finds room whenever any has it: test_all_alone.py), so none of the order does; the search stops only after the
failure the long search would record first is recorded, so the reason is the same too."""

from __future__ import annotations

import random
from typing import Any

import pytest

from planner.admission import Planner
from planner.agents.greedy.ontree import TreeView
from planner.agents.greedy.placer import Placer
from planner.core.compile import compile_reservation
from tests.planner.agents.placing import atom_text, failure_data, requests_on_plans, solution_data
from tests.planner.support import parse


def _plans(seed: int, count: int) -> list[tuple[Planner, str]]:
    """Small plans with some capacity taken, each with an `order` of two to four atoms (no gap, gap 0, or a gap of
    a few minutes) to search on it."""
    def body(rng: random.Random, steps: int) -> str:
        stages = ", ".join(atom_text(rng, f"s{stage}", steps) for stage in range(rng.randint(2, 4)))
        return f"order({stages}{rng.choice(['', '', ', gap=0m', f', gap={rng.randint(1, 5)}m'])})"

    return requests_on_plans(seed, count, holds=8, longest=10, body=body)


def _first(placer: Placer, task: Any, whole: bool) -> tuple[Any, Any]:
    """The first solution of the whole request's search (`search`) or of the long one (`solutions`), and the failure."""
    run = placer.search if whole else placer.solutions
    search = run(task, task.lo, task.hi, (task.lo, task.hi))
    found = solution_data(next(search, None))
    search.close()
    return found, failure_data(placer.failure)


@pytest.mark.parametrize("flat", [False, True], ids=["gree", "gree-l"])
def test_an_order_given_up_alone_decides_what_the_long_search_decides(flat: bool) -> None:
    """`search` against `solutions` on the same plans, searched apart as the agents search an order of atoms
    (nothing laid): the same first solution and failure; the short way spends no more of the budget, and on some
    plans less. Fails if the stages' stretches were too narrow (a stage refused room it has), if the check came
    before the failure was recorded, or if it never came."""
    shorter = rejected = 0
    for planner, text in _plans(seed=11, count=400):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        long_way = Placer(plan.free(), plan.capacity, flat, lays=False)
        short_way = Placer(plan.free(), plan.capacity, flat, lays=False)
        assert _first(short_way, task, whole=True) == _first(long_way, task, whole=False), text
        assert short_way.budget >= long_way.budget
        shorter += short_way.budget > long_way.budget
        rejected += long_way.failure is not None
    assert shorter >= 20 and rejected >= 60, (shorter, rejected)


@pytest.mark.parametrize(("lays", "refutes"), [(True, True), (False, False)], ids=["laying", "not-refuting"])
def test_an_order_is_never_given_up_early_while_it_lays_or_without_refutes(lays: bool, refutes: bool) -> None:
    """With candidates laid while it searches, the scratch is not as the order found it: no stage is tested. Nor
    without `refutes` (GREE-L's earliest-deadline probes)."""
    for planner, text in _plans(seed=12, count=120):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        long_way = Placer(plan.free(), plan.capacity, False, lays=lays, refutes=refutes)
        short_way = Placer(plan.free(), plan.capacity, False, lays=lays, refutes=refutes)
        assert _first(short_way, task, whole=True) == _first(long_way, task, whole=False), text
        assert short_way.budget == long_way.budget


def test_an_order_on_the_tree_is_given_up_as_on_a_copy() -> None:
    """The same on the plan's free-capacity tree, which the stages' tests only read."""
    for planner, text in _plans(seed=13, count=150):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        copy = Placer(plan.free(), plan.capacity, False, lays=False)
        expected = _first(copy, task, whole=True), copy.budget
        tree = plan.free_tree()
        before = tree.free.tobytes(), tree.mins.tobytes(), tree.maxs.tobytes()
        with tree.trial(plan.capacity, plan.used):
            on_tree = Placer(tree.free, plan.capacity, False, tree=TreeView(tree), lays=False)
            assert (_first(on_tree, task, whole=True), on_tree.budget) == expected, text
        assert (tree.free.tobytes(), tree.mins.tobytes(), tree.maxs.tobytes()) == before
