"""Adapting to a capacity drop reads only the steps a placement holds (`adapt._fits`): on random plans and drops it
decides what the whole-horizon test decided, and the plan it leaves is within its new capacity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.admission import Planner
from planner.core.held import Accepted, Allocation
from planner.core.plan import Plan
from planner.replan import adapt
from tests.planner.agents.test_properties import Scenario, parse, scenarios


def _whole_horizon_fits(plan: Plan, allocations: Sequence[Allocation], accepted: Accepted) -> bool:
    """The test as it was: the plan's use plus these allocations' over every step."""
    if not allocations:
        return True
    if (plan.used + plan.use_of(list(allocations)) > plan.capacity + adapt.TOLERANCE).any():
        return False
    return plan.within_policy(accepted.reservation, list(allocations))


def _adapted(scenario: Scenario, drop: tuple[int, int, float], whole: bool) -> tuple[adapt.Adaptation, np.ndarray]:
    planner = Planner(scenario.cluster(), now=scenario.clock())
    acceptance = [r.name for r in parse(scenario.text) if planner.submit(r, "gree").accepted]
    lo, length, keep = drop
    capacity = planner.plan.capacity.copy()
    capacity[:, lo:lo + length] = np.floor(capacity[:, lo:lo + length] * keep)
    with pytest.MonkeyPatch.context() as patch:
        if whole:
            patch.setattr(adapt, "_fits", _whole_horizon_fits)
        report = planner.adapt(capacity, acceptance, "gree")
    assert (planner.plan.used <= planner.plan.capacity + adapt.TOLERANCE).all()
    return report, planner.plan.used


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), data=st.data())
def test_a_capacity_drop_adapts_the_same_reading_only_the_steps_each_placement_holds(scenario: Scenario,
                                                                                     data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, scenario.steps - 1))
    drop = lo, data.draw(st.integers(1, scenario.steps - lo)), data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.75]))
    span, span_used = _adapted(scenario, drop, whole=False)
    whole, whole_used = _adapted(scenario, drop, whole=True)
    assert span == whole
    assert np.array_equal(span_used, whole_used)
