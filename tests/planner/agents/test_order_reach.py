"""An `order` with a gap skips the starts of a stage that the stage before it cannot reach, as the search of that stage
would find, and a one-lease stage's next candidates go straight to where the stage before can reach: whatever the
long way finds, it finds too, with fewer placements and at least as much budget left; and, where the long way ran out
of budget first, sometimes a placement it never got to."""

from __future__ import annotations

import pytest

from planner.agents.greedy.placer import Placer
from planner.core.compile import compile_reservation
from tests.planner.agents.placing import failure_data, orders_on_plans, solution_data
from tests.planner.support import parse


def _searched(plan: object, task: object, flat: bool, budget: int, lays: bool,
              long_way: bool) -> tuple[object, object, int, int, bytes]:
    placer = Placer(plan.free(), plan.capacity, flat, budget, lays=lays)  # type: ignore[attr-defined]
    placed = 0
    original = placer.place_atom

    def counted(*args: object) -> object:
        nonlocal placed
        placed += 1
        return original(*args)  # type: ignore[arg-type]

    placer.place_atom = counted  # type: ignore[method-assign]
    with pytest.MonkeyPatch.context() as patch:
        if long_way:
            patch.setattr(Placer, "_passed_over", staticmethod(lambda *args: 0))
            patch.setattr(Placer, "_jumped", staticmethod(lambda *args: True))
        search = placer.search(task, task.lo, task.hi, (task.lo, task.hi))  # type: ignore[attr-defined]
        found = solution_data(next(search, None))
        search.close()
    return found, failure_data(placer.failure), placer.budget, placed, placer.free.tobytes()


def test_an_order_skips_the_starts_its_stage_before_cannot_reach() -> None:
    fewer = found_more = 0
    for planner, text in orders_on_plans(seed=8, count=150, gaps=["0m", "0m", "1m", "3m"]):
        plan = planner.plan
        (instance,) = compile_reservation(parse(text)[0], plan.now, plan.clock, plan.now_step, plan.resources)
        for flat in (False, True):
            for budget in (*range(1, 13), 16, 20, 24, 32, 64):  # every small budget: where a skip's charge shows
                for lays in (True, False):
                    short = _searched(plan, instance.task, flat, budget, lays, long_way=False)
                    long = _searched(plan, instance.task, flat, budget, lays, long_way=True)
                    case = (text, flat, budget, lays)
                    if long[0] is not None:
                        assert short[0] == long[0], case
                        assert short[3] <= long[3], case
                    elif short[0] is None and short[2] == long[2] > 0:  # both searched everything
                        assert short[1] == long[1], case
                    assert short[2] >= long[2], case
                    assert short[4] == long[4] == plan.free().tobytes()
                    fewer += short[3] < long[3]
                    found_more += long[0] is None and short[0] is not None
    assert fewer >= 50, fewer
    assert found_more >= 1, found_more
