"""Decisions and leases as JSON with memoised instants: what the log keeps and the API answers."""

from __future__ import annotations

from typing import Any as AnyType

from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.core.plan import Allocation
from rdl import units


class Instants(dict[int, str]):
    """ISO text of plan steps, memoised: formatting instants was most of a decision record's cost."""

    def __init__(self, clock: Clock):
        super().__init__()
        self.clock = clock

    def __missing__(self, step: int) -> str:
        text = self[step] = units.format_instant(self.clock.at(step))
        return text


def decision_json(decision: Decision, instants: Instants) -> dict[str, AnyType]:
    """`decision.to_json(clock)` with memoised instants (the tests hold the two equal)."""
    data = Decision(decision.reservation, decision.accepted, (), decision.reason,
                    decision.extra).to_json(instants.clock)
    if decision.accepted:
        data["allocations"] = [allocation_json(a, instants) for a in decision.allocations]
    return data


def allocation_json(allocation: Allocation, instants: Instants) -> dict[str, AnyType]:
    """`planner.core.decision.allocation_json` with memoised instants."""
    data: dict[str, AnyType] = {
        "atom": allocation.atom, "start": instants[allocation.start], "end": instants[allocation.end],
        "bundles": allocation.bundles,
        "resources": {k: _number(q * allocation.bundles) for k, q in allocation.bundle.items()},
    }
    if allocation.instance:
        data["instance"] = allocation.instance
    return data


def _number(value: float) -> int | float:
    return int(value) if value == int(value) else value
