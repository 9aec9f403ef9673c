"""The task trees the earliest-deadline search builds field by field (compile.mirrored, compile.clipped) are the
ones `dataclasses.replace` gives: every field copied, none forgotten when a task grows one."""

from __future__ import annotations

from dataclasses import fields, replace

from hypothesis import given
from hypothesis import strategies as st

from planner.core.compile import AtomTask, GroupTask, Task, clipped, compile_reservation, mirrored
from planner.core.plan import Plan
from tests.planner.agents.test_properties import FAST, Scenario, scenarios
from tests.planner.support import parse


def _mirrored_by_replace(task: Task, steps: int) -> Task:
    if isinstance(task, AtomTask):
        return replace(task, lo=steps - task.hi, hi=steps - task.lo)
    children = tuple(_mirrored_by_replace(child, steps) for child in task.children)
    return replace(task, children=children[::-1] if task.kind == "order" else children, lo=steps - task.hi,
                   hi=steps - task.lo)


def _clipped_by_replace(task: Task, hi: int) -> Task:
    if isinstance(task, AtomTask):
        return replace(task, hi=min(task.hi, hi))
    return replace(task, children=tuple(_clipped_by_replace(child, hi) for child in task.children),
                   hi=min(task.hi, hi))


def _data(task: Task) -> tuple:
    """Every field of every node (the demand as a tuple: arrays do not compare as one value)."""
    if isinstance(task, AtomTask):
        return tuple(tuple(task.demand.tolist()) if f.name == "demand" else getattr(task, f.name)
                     for f in fields(AtomTask))
    return tuple(tuple(_data(child) for child in task.children) if f.name == "children" else getattr(task, f.name)
                 for f in fields(GroupTask))


@FAST
@given(scenario=scenarios(), data=st.data())
def test_mirrored_and_clipped_copy_every_field(scenario: Scenario, data: st.DataObject) -> None:
    plan = Plan(scenario.cluster(), scenario.clock())
    for reservation in parse(scenario.text):
        for instance in compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources):
            task, steps = instance.task, plan.clock.steps
            assert _data(mirrored(task, steps)) == _data(_mirrored_by_replace(task, steps))
            assert _data(mirrored(mirrored(task, steps), steps)) == _data(task)
            hi = data.draw(st.integers(0, steps))
            assert _data(clipped(task, hi)) == _data(_clipped_by_replace(task, hi))
