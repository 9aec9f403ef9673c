"""What the plan counts for a set of allocations is, bit for bit, the per-shape sum it always counted: the bundles held
at each step summed as integers per bundle shape (shapes in the order they first appear), then one product per
resource and step; parts outside the window are not counted. Adding and removing give the same arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.core.plan import Accepted, Allocation, Plan
from rdl.tree import Resources
from tests.planner.support import make_cluster, parse

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STEPS = 40
SHAPES = [Resources.of({"vcores": 1.0, "memory": 1024.0}), Resources.of({"vcores": 0.1, "memory": 0.5}),
          Resources.of({"vcores": 3.0})]


def _reference(plan: Plan, allocations: list[Allocation], sign: int, into: np.ndarray | None = None) -> np.ndarray:
    """`into` (zeros if None) with the use added as the plan added it before it gathered allocations in one pass."""
    into = np.zeros_like(plan.capacity) if into is None else into.copy()
    shapes: dict[Resources, list[Allocation]] = {}
    for allocation in allocations:
        if allocation.end > 0 and allocation.start < STEPS:
            shapes.setdefault(allocation.bundle, []).append(allocation)
    for bundle, group in shapes.items():
        starts = np.array([max(a.start, 0) for a in group], dtype=np.int64)
        ends = np.array([min(a.end, STEPS) for a in group], dtype=np.int64)
        counts = np.array([a.bundles for a in group], dtype=np.int64)
        base, top = int(starts.min()), int(ends.max())
        held = np.zeros(top - base + 1, dtype=np.int64)
        np.add.at(held, starts - base, counts)
        np.add.at(held, ends - base, -counts)
        into[:, base:top] += np.outer(plan.demand(bundle) * sign, np.cumsum(held[:-1]))
    return into


@st.composite
def allocation_lists(draw: st.DrawFn) -> list[Allocation]:
    found = []
    for index in range(draw(st.integers(1, 8))):
        start = draw(st.integers(-10, STEPS + 5))
        shape = SHAPES[draw(st.integers(0, len(SHAPES) - 1))]
        # A copy now and then: a bundle equal to another one but not the same object is still the same shape.
        bundle = Resources(tuple(shape.items())) if draw(st.booleans()) else shape
        found.append(Allocation(f"a{index}", start, start + draw(st.integers(1, 12)), draw(st.integers(1, 9)), bundle))
    return found


@FAST
@given(allocations=allocation_lists())
def test_the_use_of_allocations_is_the_per_shape_sum(allocations: list[Allocation]) -> None:
    plan = Plan(make_cluster({"vcores": "64", "memory": "64GiB"}, STEPS, ()))
    assert plan.use_of(allocations).tobytes() == _reference(plan, allocations, +1).tobytes()
    reservation = parse("reservation r { atom(b={vcores: 1}, w=1m) }")[0]
    plan.add(Accepted(reservation, plan.now, allocations))
    assert plan.used.tobytes() == _reference(plan, allocations, +1).tobytes()
    plan.remove("r")
    assert plan.used.tobytes() == _reference(plan, allocations, -1, _reference(plan, allocations, +1)).tobytes()
