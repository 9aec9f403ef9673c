"""A whole request's `all` is given up as soon as one child finds no room even alone, and that decides what the long
search decides: GREE's latest placement finds room whenever any arrangement of the leases has it (brute force), and
laying siblings only takes room away."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np

from planner.admission import Planner
from planner.agents.deadline import _first_end
from planner.agents.greedy import pack
from planner.agents.greedy.ontree import TreeView
from planner.agents.greedy.placer import Placer
from planner.agents.greedy.solution import first_start
from planner.core.compile import compile_reservation
from tests.planner.agents.placing import atom_text, failure_data, requests_on_plans, solution_data
from tests.planner.support import parse


def _most_leases(room: np.ndarray, length: int) -> int:
    """The most leases of `length` steps the room holds, over every way of placing them (brute force)."""
    starts = room.shape[0] - length + 1
    best = 0

    def place(start: int, left: np.ndarray, count: int) -> None:
        nonlocal best
        if start >= starts:
            best = max(best, count)
            return
        for more in range(int(left[start:start + length].min()) + 1):
            taken = left.copy()
            taken[start:start + length] -= more
            place(start + 1, taken, count + more)

    place(0, room.copy(), 0)
    return best


def test_latest_finds_room_whenever_some_arrangement_has_it() -> None:
    rng = random.Random(5)
    for _ in range(1500):
        steps = rng.randint(1, 8)
        length = rng.randint(1, min(4, steps))
        room = np.array([rng.randint(0, 3) for _ in range(steps)], dtype=np.int64)
        most = _most_leases(room, length)
        for leases in range(1, most + 2):
            assert (pack.latest(room.copy(), length, leases) is not None) == (leases <= most), (room, length, leases)


def _plans(seed: int, count: int) -> list[tuple[Planner, str]]:
    """Small plans with some capacity taken, each with an `all` of two to four atoms to search on it."""
    def body(rng: random.Random, steps: int) -> str:
        return "all(" + ", ".join(atom_text(rng, f"c{child}", steps) for child in range(rng.randint(2, 4))) + ")"

    return requests_on_plans(seed, count, holds=6, longest=8, body=body)


def test_an_all_given_up_alone_decides_what_the_long_search_decides() -> None:
    """`search` (the whole request: may give up) against `solutions` (never does), on the same plans, GREE and
    GREE-L: the same first solution and the same failure; the short way spends no more of the budget, and on some
    plans less. Fails if a child were tested with its siblings' candidates still laid, or never tested."""
    shorter = succeeded_after_a_failure = 0
    for planner, text in _plans(seed=3, count=300):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        for flat in (False, True):
            long_way = Placer(plan.free(), plan.capacity, flat)
            search = long_way.solutions(task, task.lo, task.hi, (task.lo, task.hi))
            expected = solution_data(next(search, None))
            search.close()
            short_way = Placer(plan.free(), plan.capacity, flat)
            search = short_way.search(task, task.lo, task.hi, (task.lo, task.hi))
            assert solution_data(next(search, None)) == expected, text
            search.close()
            assert failure_data(short_way.failure) == failure_data(long_way.failure), text
            assert short_way.free.tobytes() == plan.free().tobytes()
            assert short_way.budget >= long_way.budget
            shorter += short_way.budget > long_way.budget
            succeeded_after_a_failure += expected is not None and long_way.failure is not None
    assert shorter >= 20 and succeeded_after_a_failure >= 5, (shorter, succeeded_after_a_failure)


def test_an_all_on_the_tree_is_given_up_as_on_a_copy() -> None:
    """The same on the plan's free-capacity tree: the siblings' candidates are taken off the tree for the test and
    laid again, so the tree is as it was after the search."""
    for planner, text in _plans(seed=4, count=120):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        expected = solution_data(Placer(plan.free(), plan.capacity, False).first(task, task.lo, task.hi))
        tree = plan.free_tree()
        before = tree.free.tobytes(), tree.mins.tobytes(), tree.maxs.tobytes()
        with tree.trial(plan.capacity, plan.used):
            on_tree = Placer(tree.free, plan.capacity, False, tree=TreeView(tree))
            assert solution_data(on_tree.first(task, task.lo, task.hi)) == expected, text
        assert (tree.free.tobytes(), tree.mins.tobytes(), tree.maxs.tobytes()) == before


def test_the_alternatives_of_an_any_in_the_deadline_guess_are_not_whole_searches() -> None:
    """The earliest-deadline guess searches an `any`'s alternatives one after another with one budget: an `all`
    among them must not stop early, or the next alternative would start with more budget than before."""
    rng = random.Random(6)
    for planner, text in _plans(seed=7, count=150):
        plan = planner.plan
        body = text.split("{ ", 1)[1].rsplit(" }", 1)[0]
        other = ", ".join(atom_text(rng, f"d{child}", plan.clock.steps) for child in range(rng.randint(2, 3)))
        reservation = parse(f"reservation r {{ any(a: {body}, b: all({other})) }}")[0]
        (instance,) = compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources)
        task = instance.task
        for budget in (2, 4, 8, 64):
            guessed = Placer(plan.free(), plan.capacity, False, budget)
            end = _first_end(guessed, task, plan.clock.steps)
            long_way = Placer(plan.free(), plan.capacity, False, budget)
            ends = []
            for child in task.children:  # type: ignore[union-attr]
                child = replace(child, lo=max(child.lo, task.lo), hi=min(child.hi, task.hi))
                search = long_way.solutions(child, child.lo, child.hi)
                found = next(search, None)
                search.close()
                if found is not None:
                    ends.append(plan.clock.steps - first_start(found))
            assert (end, guessed.budget) == (min(ends) if ends else None, long_way.budget), (text, budget)
