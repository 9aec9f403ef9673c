"""The demand vectors compile hands out: one per bundle shape and resource tuple, shared, read-only."""

from __future__ import annotations

import pytest

from planner.core.compile import demand_of
from rdl import Resources


def test_demand_vectors_are_shared_and_read_only() -> None:
    bundle = Resources.of({"memory": 2048.0, "vcores": 1.0})
    demand = demand_of(bundle, ("gpu", "memory", "vcores"))
    assert demand.tolist() == [0.0, 2048.0, 1.0]
    assert demand_of(Resources.of({"vcores": 1.0, "memory": 2048.0}), ("gpu", "memory", "vcores")) is demand
    assert demand_of(bundle, ("memory", "vcores")).tolist() == [2048.0, 1.0]
    with pytest.raises(ValueError):
        demand[0] = 1.0
