"""compile_reservation's one-instance shortcut (a reservation that does not recur) against the period-by-period
loop it skips, and the shared demand vectors it hands out."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.core import compile as compiling
from planner.core.compile import AtomTask, Clock, GroupTask, Instance, Task, compile_reservation, demand_of
from rdl import Resources
from tests.rdl.test_roundtrip import INSTANT, reservations

ORIGIN = datetime(2026, 11, 23, tzinfo=UTC)


def same_task(a: Task, b: Task) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, AtomTask):
        assert isinstance(b, AtomTask)
        return np.array_equal(a.demand, b.demand) and all(
            getattr(a, f.name) == getattr(b, f.name) for f in fields(a) if f.name != "demand")
    assert isinstance(a, GroupTask) and isinstance(b, GroupTask)
    return ((a.kind, a.label, a.lo, a.hi, a.gap) == (b.kind, b.label, b.lo, b.hi, b.gap)
            and len(a.children) == len(b.children)
            and all(same_task(x, y) for x, y in zip(a.children, b.children, strict=True)))


def same_instance(a: Instance, b: Instance) -> bool:
    return ((a.index, a.arrival, a.declared, a.expr) == (b.index, b.arrival, b.declared, b.expr)
            and a.arrival.utcoffset() == b.arrival.utcoffset() and same_task(a.task, b.task))


@given(reservations("r"), INSTANT, st.sampled_from([1, 10, 60, 3600]), st.integers(1, 20_000), st.integers(0, 50),
       st.sampled_from([("vcores",), ("memory", "vcores"), ("gpu", "memory", "vcores")]))
def test_one_instance_is_what_the_loop_gives(reservation, submitted, step, steps, now_step, resources) -> None:
    reservation = replace(reservation, every=None, until=None)
    clock = Clock(ORIGIN, step, steps)
    try:
        looped = compiling._series(reservation, reservation.arrival_at(submitted), clock, now_step, resources)
    except (OverflowError, ValueError) as error:  # a time far outside what a datetime holds fails both ways
        with pytest.raises(type(error)):
            compile_reservation(reservation, submitted, clock, now_step, resources)
        return
    single = compile_reservation(reservation, submitted, clock, now_step, resources)
    assert len(looped) == len(single) == 1
    assert same_instance(looped[0], single[0])


def test_demand_vectors_are_shared_and_read_only() -> None:
    bundle = Resources.of({"memory": 2048.0, "vcores": 1.0})
    demand = demand_of(bundle, ("gpu", "memory", "vcores"))
    assert demand.tolist() == [0.0, 2048.0, 1.0]
    assert demand_of(Resources.of({"vcores": 1.0, "memory": 2048.0}), ("gpu", "memory", "vcores")) is demand
    assert demand_of(bundle, ("memory", "vcores")).tolist() == [2048.0, 1.0]
    with pytest.raises(ValueError):
        demand[0] = 1.0
