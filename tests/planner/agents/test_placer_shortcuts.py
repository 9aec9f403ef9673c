"""The placer's shortcuts decide what the long way decides: `Placer.first` is the first of `search` without laying
it, an atom placement's held bundles are counted once as the sums give them, laying one block or many writes what
the outer product writes, the cost run by run is the sum step by step, and the stages of an order share its window
as numpy rounds their running sums."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.admission import Planner
from planner.agents.greedy.placer import Placer
from planner.agents.greedy.solution import AtomPlacement, searched_apart
from planner.core.compile import AtomTask, Clock, GroupTask, atoms_of, compile_reservation
from tests.planner.agents.placing import failure_data, solution_data
from tests.planner.agents.test_properties import Scenario, scenarios
from tests.planner.support import START, make_cluster, parse

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TENTHS = st.integers(-40, 400).map(lambda n: n / 10)
# CI's find: the `all` that cannot fit (a gang of 3 in 2 vcores) spends nearly the whole budget and takes it back, so
# the next alternative's `any` got a refund for its 40-minute atom the first time and none when searched again
REFUNDS_RUN_OUT = Scenario(
    capacity={"vcores": "2"}, steps=28, changes=((1, {"vcores": "2"}),),
    text="reservation r0 every=14m { any(all(atom(b={vcores: 1}, w=1m), atom(b={vcores: 1}, g=3, w=1m)), "
         "any(atom(b={vcores: 1}, w=1m), atom(b={vcores: 1}, w=40m))) }\n"
         "reservation r1 { atom(b={vcores: 1}, w=1m) }\n")


@FAST
@given(scenario=scenarios(), flat=st.booleans(), budget=st.sampled_from([0, 1, 2, 64]))
@example(scenario=REFUNDS_RUN_OUT, flat=True, budget=64)
def test_first_is_the_first_solution_and_lays_nothing(scenario: Scenario, flat: bool, budget: int) -> None:
    planner = Planner(scenario.cluster(), now=scenario.clock())
    plan = planner.plan
    for reservation in parse(scenario.text):
        free = plan.free()
        for instance in compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources):
            task = instance.task
            long_way = Placer(free.copy(), plan.capacity, flat, budget)
            search = long_way.search(task, task.lo, task.hi, (task.lo, task.hi))
            expected = solution_data(next(search, None))
            search.close()
            shortcut = Placer(free.copy(), plan.capacity, flat, budget)
            assert solution_data(shortcut.first(task, task.lo, task.hi, (task.lo, task.hi))) == expected
            assert failure_data(shortcut.failure) == failure_data(long_way.failure)
            assert shortcut.free.tobytes() == free.tobytes()  # nothing laid, or all of it taken back
            assert shortcut.budget == long_way.budget
        planner.submit(reservation, "gree")  # the next one meets a fuller plan


@FAST
@given(scenario=scenarios(), flat=st.booleans())
def test_a_task_searched_apart_finds_the_same_without_laying_anything(scenario: Scenario, flat: bool) -> None:
    """An atom, an order of such, or a group of one such child: no search of a piece reads a step another piece's
    candidate holds, so a placer that lays nothing finds what one that lays finds, and leaves the scratch as is."""
    planner = Planner(scenario.cluster(), now=scenario.clock())
    plan = planner.plan
    apart = 0
    for reservation in parse(scenario.text):
        free = plan.free()
        for instance in compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources):
            task = instance.task
            if not searched_apart(task):
                continue
            apart += 1
            laying = Placer(free.copy(), plan.capacity, flat)
            expected = solution_data(laying.first(task, task.lo, task.hi, (task.lo, task.hi)))
            apart_placer = Placer(free.copy(), plan.capacity, flat, lays=False)
            assert solution_data(apart_placer.first(task, task.lo, task.hi, (task.lo, task.hi))) == expected
            assert failure_data(apart_placer.failure) == failure_data(laying.failure)
            assert apart_placer.free.tobytes() == free.tobytes()
        planner.submit(reservation, "gree")


def test_which_tasks_are_searched_apart() -> None:
    planner = Planner(make_cluster({"vcores": 4}, steps=60))
    plan = planner.plan
    atom = "atom(b={vcores: 1}, l=1m, w=1m)"
    expected = {f"order(a: {atom}, b: {atom})": True, f"order(a: {atom}, b: {atom}, gap=2m)": True,
                f"all(a: {atom})": True, f"order(a: {atom}, b: order(c: {atom}, d: all(e: {atom})))": True,
                f"all(a: {atom}, b: {atom})": False, f"any(a: {atom}, b: {atom})": False,
                f"order(a: {atom}, b: any(c: {atom}, d: {atom}))": False}
    for body, apart in expected.items():
        reservation = parse(f"reservation r {{ {body} }}")[0]
        (instance,) = compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources)
        assert searched_apart(instance.task) is apart, body


def _task(length: int, gang: int, demand: np.ndarray) -> AtomTask:
    atom = parse("reservation r { atom(b={vcores: 1}, w=1m) }")[0].body
    return AtomTask("a", atom, demand, gang, None, length, 1, 0, 10**6)  # type: ignore[arg-type]


def _reference_held(starts: np.ndarray, gangs: np.ndarray, length: int, gang: int) -> tuple[int, np.ndarray]:
    """How the placer counted held bundles before it counted them once: per-step sums of the blocks."""
    base = int(starts.min())
    steps = np.zeros(int(starts.max()) + length - base + 1, dtype=np.int64)
    np.add.at(steps, starts - base, gangs)
    np.add.at(steps, starts - base + length, -gangs)
    return base, np.cumsum(steps[:-1]) * gang


@st.composite
def placements(draw: st.DrawFn, resources: int) -> AtomPlacement:
    count = draw(st.integers(1, 6))
    starts = np.array(draw(st.lists(st.integers(0, 30), min_size=count, max_size=count)), dtype=np.int64)
    gangs = np.array(draw(st.lists(st.integers(1, 5), min_size=count, max_size=count)), dtype=np.int64)
    demand = draw(hnp.arrays(np.float64, resources, elements=st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0, 4096.0])))
    return AtomPlacement(_task(draw(st.integers(1, 9)), draw(st.integers(1, 4)), demand), starts, gangs)


@FAST
@given(data=st.data(), resources=st.integers(1, 3))
def test_held_is_counted_once_as_the_sums_give_it(data: st.DataObject, resources: int) -> None:
    placement = data.draw(placements(resources))
    base, held = _reference_held(placement.starts, placement.gangs, placement.task.length, placement.task.gang)
    found = placement.held()
    assert found[0] == base and found[1].tolist() == held.tolist() and found[1].dtype == held.dtype
    assert placement.held() is found  # counted once
    assert placement.first_start == int(placement.starts.min())
    assert placement.last_end == int(placement.starts.max()) + placement.task.length


@FAST
@given(data=st.data(), resources=st.integers(1, 3), origin=st.integers(0, 5))
def test_laying_writes_what_the_outer_product_writes(data: st.DataObject, resources: int, origin: int) -> None:
    solution = [data.draw(placements(resources)) for _ in range(data.draw(st.integers(1, 3)))]
    solution = [AtomPlacement(p.task, p.starts + origin, p.gangs) for p in solution]  # on the plan's axis
    free = data.draw(hnp.arrays(np.float64, (resources, 50), elements=TENTHS))
    placer = Placer(free.copy(), np.ones((resources, 60)), flat=False, origin=origin)
    for sign in (1, -1):
        expected = placer.free.copy()
        for placement in solution:
            base, held = _reference_held(placement.starts, placement.gangs, placement.task.length,
                                         placement.task.gang)
            expected[:, base - origin:base - origin + held.shape[0]] -= np.outer(placement.task.demand * sign, held)
        placer.apply(solution, sign)
        assert placer.free.tobytes() == expected.tobytes()


@FAST
@given(data=st.data(), resources=st.integers(1, 3), empty_steps=st.booleans(), width=st.sampled_from([50, 80]))
def test_the_cost_run_by_run_is_the_sum_step_by_step(data: st.DataObject, resources: int, empty_steps: bool,
                                                      width: int) -> None:
    """One term times a run's length is the sum of the run's terms, but for rounding, on a short window (runcost.py,
    numpy) and a long one (treecost.py, compiled); steps without capacity add nothing."""
    solution = [data.draw(placements(resources))]
    capacity = data.draw(hnp.arrays(np.float64, (resources, width), elements=st.integers(1, 400).map(float)))
    if empty_steps:
        capacity[:, data.draw(st.integers(0, 49))] = 0.0
    free = data.draw(hnp.arrays(np.float64, (resources, width), elements=TENTHS))
    expected = 0.0
    for placement in solution:
        base, held = _reference_held(placement.starts, placement.gangs, placement.task.length, placement.task.gang)
        cap, left = capacity[:, base:base + held.shape[0]], free[:, base:base + held.shape[0]]
        amount = np.outer(placement.task.demand, held)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(cap > 0, amount / cap, 0.0)
            load = np.where(cap > 0, 1.0 - left / cap, 0.0)
        expected += float((share * (1.0 + load)).sum())
    assert math.isclose(Placer(free, capacity, flat=False).cost(solution), expected, rel_tol=1e-12, abs_tol=1e-12)


@FAST
@given(works=st.lists(st.one_of(st.just(0.0), st.floats(0.001, 1e6), st.integers(1, 10**5).map(float)), min_size=1,
                      max_size=6),
       start=st.integers(0, 10**6), span=st.integers(0, 10**6))
def test_an_orders_stages_share_its_window_as_numpy_rounds_the_running_sums(works: list[float], start: int,
                                                                            span: int) -> None:
    """GREE-L's preferred part of the window for each stage (Placer._shares), summed in floats: numpy's
    formulation, `round(start + span * cumsum(works) / total)`, to the step, halves to even."""
    request = parse("reservation r { order(a: atom(b={vcores: 1}, w=1m), b: atom(b={vcores: 1}, w=1m)) }")[0]
    task = compile_reservation(request, START, Clock(START, 60, 60), 0, ("vcores",))[0].task
    assert isinstance(task, GroupTask) and isinstance(task.children[0], AtomTask)
    stages = tuple(replace(task.children[0], atom=replace(task.children[0].atom, work=work)) for work in works)
    order = replace(task, children=stages)
    total = sum(works) or 1.0
    bounds = np.round(start + span * np.cumsum([0.0, *works]) / total).astype(int)
    expected = [(int(bounds[i]), int(bounds[i + 1])) for i in range(len(works))]
    placer = Placer(np.zeros((1, 1)), np.zeros((1, 1)), flat=True)
    assert placer._shares(order, (start, start + span)) == expected


@FAST
@given(scenario=scenarios(), flat=st.booleans(), lays=st.booleans(), budget=st.sampled_from([0, 1, 2, 64]),
       data=st.data())
def test_an_all_of_one_atom_offers_what_the_alls_own_search_offers(scenario: Scenario, flat: bool, lays: bool,
                                                                    budget: int, data: st.DataObject) -> None:
    """`Placer.solutions` and `first` take an `all` of one atom as that atom (solution.only_atom): every candidate, in
    order, the budget and the failure as `_all`'s own search gives them, the window the caller's, the `all`'s and the
    atom's together (fails on passing the atom the window of the `all` without its own, on giving it none of the
    preferred part, or on `first` leaving out the `all`'s window, tried)."""
    planner = Planner(scenario.cluster(), now=scenario.clock())
    plan = planner.plan
    for reservation in parse(scenario.text):
        free = plan.free()
        for instance in compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources):
            for atom in atoms_of(instance.task):
                steps = plan.clock.steps
                own = sorted(data.draw(st.lists(st.integers(0, steps), min_size=2, max_size=2)))  # the all's window
                lo = data.draw(st.integers(0, steps - 1))  # the caller's
                hi = data.draw(st.integers(lo + 1, steps))
                task = GroupTask("all", "g", (atom,), own[0], own[1])
                preferred = data.draw(st.sampled_from([None, (lo, (lo + hi) // 2), (atom.lo, atom.hi)]))
                inside = max(lo, task.lo), min(hi, task.hi)  # what `solutions` hands `_all`
                long_way = Placer(free.copy(), plan.capacity, flat, budget, lays=lays)
                expected = [solution_data(found) for found in long_way._all(task, *inside, preferred)]
                shortcut = Placer(free.copy(), plan.capacity, flat, budget, lays=lays)
                assert [solution_data(found) for found in shortcut.solutions(task, lo, hi, preferred)] == expected
                assert (shortcut.budget, failure_data(shortcut.failure)) == \
                    (long_way.budget, failure_data(long_way.failure))
                once = Placer(free.copy(), plan.capacity, flat, budget, lays=lays)
                search = once._all(task, *inside, preferred)
                head = solution_data(next(search, None))
                search.close()
                first = Placer(free.copy(), plan.capacity, flat, budget, lays=lays)
                assert solution_data(first.first(task, lo, hi, preferred)) == head
                assert (first.budget, failure_data(first.failure)) == (once.budget, failure_data(once.failure))
        planner.submit(reservation, "gree")
