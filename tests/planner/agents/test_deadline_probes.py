"""The earliest-deadline search compiles a one-off request once and moves its deadline by clipping the tasks
(deadline.Probes): the same instances as compiling the request with each deadline, on random plans and requests."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.admission import Planner
from planner.agents.deadline import Probes, with_deadline
from planner.core.compile import AtomTask, Instance, Task, compile_reservation
from tests.planner.agents.test_properties import Scenario, parse, scenarios


def _same_task(a: Task, b: Task) -> bool:
    if isinstance(a, AtomTask) or isinstance(b, AtomTask):
        return (isinstance(a, AtomTask) and isinstance(b, AtomTask) and a.demand.tolist() == b.demand.tolist()
                and (a.label, a.atom, a.gang, a.parallelism, a.length, a.leases, a.lo, a.hi)
                == (b.label, b.atom, b.gang, b.parallelism, b.length, b.leases, b.lo, b.hi))
    return ((a.kind, a.label, a.lo, a.hi, a.gap, len(a.children)) == (b.kind, b.label, b.lo, b.hi, b.gap,
                                                                         len(b.children))
            and all(_same_task(x, y) for x, y in zip(a.children, b.children, strict=True)))


def _same(a: Instance, b: Instance) -> bool:
    return ((a.index, a.arrival, a.declared, a.expr) == (b.index, b.arrival, b.declared, b.expr)
            and _same_task(a.task, b.task))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), data=st.data())
def test_probes_compile_as_each_deadline_would(scenario: Scenario, data: st.DataObject) -> None:
    planner = Planner(scenario.cluster(), now=scenario.clock())
    plan, clock = planner.plan, planner.plan.clock
    for reservation in parse(scenario.text):
        probes = Probes(plan, reservation, plan.now)
        for step in data.draw(st.lists(st.integers(0, clock.steps), min_size=1, max_size=4)):
            moved = with_deadline(reservation, clock.at(step))
            found = probes.instances(step)
            if moved is None:
                assert found is None
                continue
            assert found is not None and found[0] == moved
            expected = compile_reservation(moved, plan.now, clock, plan.now_step, plan.resources)
            assert len(found[1]) == len(expected)
            assert all(_same(a, b) for a, b in zip(found[1], expected, strict=True))
        planner.submit(reservation, "gree")  # later requests meet a fuller plan and a later clock
