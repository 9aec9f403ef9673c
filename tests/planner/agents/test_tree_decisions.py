"""Decisions on the plan's free-capacity tree against the dense ones, on whole random plans: the same records
(earliest deadlines included), and after every decision the tree holds the plan's free capacity exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from planner.admission import Planner
from planner.agents.greedy import ontree, pack
from planner.core import treekernels
from tests.planner.agents.test_properties import Scenario, parse, scenarios


def _records(scenario: Scenario, agent: str, tree: bool) -> list[dict]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pack, "TREE_FROM", 0 if tree else 10**9)
        patch.setattr(pack, "COMPILED_FROM", 0 if tree else 10**9)
        patch.setattr(ontree, "FLAT_FROM", 0)  # GREE-L's flat tiles from the tree too, whatever the lease's length
        planner = Planner(scenario.cluster(), now=scenario.clock())
        plan = planner.plan
        records = []
        for reservation in parse(scenario.text):
            records.append(planner.submit(reservation, agent).to_json(plan.clock))
            if tree and not plan.policy.limited:
                held = plan.free_tree()
                assert np.array_equal(held.free, plan.capacity - plan.used)
                fresh = np.empty_like(held.mins), np.empty_like(held.maxs)
                treekernels.build(held.free, *fresh)
                assert np.array_equal(held.mins, fresh[0]) and np.array_equal(held.maxs, fresh[1])
        return records


@pytest.mark.parametrize("agent", ["gree", "gree-l"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_random_plans_decide_the_same_on_the_tree(agent: str, scenario: Scenario) -> None:
    assert _records(scenario, agent, tree=True) == _records(scenario, agent, tree=False)


def test_only_plans_of_fine_steps_search_windows_shorter_than_tree_from_on_the_tree() -> None:
    week_of_minutes, week_of_seconds = 7 * 24 * 60, 7 * 24 * 3600
    assert not pack.on_tree(week_of_minutes, week_of_minutes)  # a week at one-minute steps: always copies
    assert pack.on_tree(pack.TREE_FROM, pack.TREE_FROM)
    assert pack.on_tree(pack.TREE_WINDOW, week_of_seconds) and not pack.on_tree(pack.TREE_WINDOW - 1, week_of_seconds)
