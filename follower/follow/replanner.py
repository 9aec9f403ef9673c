"""Re-planning from a follower round: the store is told the cluster's real capacity, which adapts the plan."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from follower.follow.rounds import Round
from planner.agents.registry import DEFAULT_AGENT

if TYPE_CHECKING:
    from planner.store.facade import CapacityReport, Store


def store_replanner(store: Store, agent: str = DEFAULT_AGENT) -> Callable[[Round], CapacityReport]:
    """A `replan` callback: tell the store what the cluster really has from the round on, which adapts the plan.

    The store keeps the reservations that still fit, moves those it can and only then drops some,
    lowest priority first (`Store.set_capacity`). Follow the re-loaded plan afterwards.
    """

    def replan(round: Round) -> CapacityReport:
        return store.set_capacity(max(round.time, store.now()), dict(round.capacity.items()), agent=agent)

    return replan
