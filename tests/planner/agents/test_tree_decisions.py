"""Decisions on the plan's free-capacity tree against the dense ones, on whole random plans: the same records
(earliest deadlines included), and after every decision the tree holds the plan's free capacity exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from planner.admission import Planner
from planner.agents.greedy import ontree, pack
from planner.core import treekernels
from rdl import parse_cluster
from tests.planner.agents.test_properties import Scenario, parse, scenarios
from tests.planner.support import START, at, numpy_kernels, pinned


def _records(scenario: Scenario, agent: str, tree: bool) -> list[dict]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pack, "TREE_FROM", 0 if tree else 10**9)
        if tree:
            patch.setattr(pack, "COMPILED_FROM", 0)
        else:
            numpy_kernels(patch)
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


def _reasons_at_seconds(tree: bool) -> list[str]:
    """Rejections on a day at one-second steps (86,400 steps: the agents search the tree), their reasons' words."""
    text = "\n".join([f"start: {at(0)}", "step: 1s", "horizon: 1d", "capacity: {vcores: 8}"]) + "\n"
    rdl = "\n".join([pinned("morning", 0, 200, 5), pinned("noon", 230, 90, 7), pinned("late", 400, 33, 3),
                     f"reservation long {{ window(s={at(0)}, e={at(600)}, "
                     "run: atom(b={vcores: 1}, g=1, h=8, l=600m, w=4800m)) }",
                     f"reservation wide {{ window(s={at(0)}, e={at(500)}, "
                     "run: atom(b={vcores: 1}, g=2, h=2, l=400m, w=800m)) }"])
    with pytest.MonkeyPatch.context() as patch:
        if not tree:
            patch.setattr(pack, "TREE_FROM", 10**9)
        planner = Planner(parse_cluster(text, "seconds.yaml"), now=START)
        decisions = [planner.submit(reservation, "gree") for reservation in parse(rdl)]
        assert (planner.plan.built_tree is not None) == tree
    return [decision.reason.message for decision in decisions if decision.reason is not None]


def test_a_reason_at_fine_steps_counts_the_room_left_as_the_window_does() -> None:
    """The bundle-hours a rejection names are read from the tree, one run of one value at a time, where the search
    read the tree: the same words as from a copy of the window."""
    reasons = _reasons_at_seconds(tree=True)
    assert len(reasons) == 2 and all("bundle-hours" in reason for reason in reasons), reasons
    assert reasons == _reasons_at_seconds(tree=False)
