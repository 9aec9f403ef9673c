"""The store's step axis and the plan's: lease rows, records, log rows and every answer count steps from the
cluster file's `start`, for ever; the cached plan counts them from its rolling window's origin (the step its
clock is in: planner.core.plan.roll). The Store converts at its edge, here, and nowhere else.
"""

from __future__ import annotations

from dataclasses import replace

from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.core.plan import Allocation, Plan, shifted
from planner.replan.adapt import Adaptation
from planner.store.records import CapacityReport, ReplanOutcome
from rdl.cluster import Cluster


def store_clock(cluster: Cluster) -> Clock:
    """The store's axis: step 0 at the cluster file's `start` (steps past its horizon count on)."""
    return Clock(cluster.start, cluster.step, cluster.steps)


def window_start(plan: Plan, cluster: Cluster) -> int:
    """The step of the store's axis at which the plan's window begins."""
    return round((plan.clock.origin - cluster.start).total_seconds()) // cluster.step


def _moved(held: dict[str, tuple[Allocation, ...]], steps: int) -> dict[str, tuple[Allocation, ...]]:
    return {name: tuple(shifted(list(allocations), steps)) for name, allocations in held.items()}


def decision_on_store(decision: Decision, steps: int) -> Decision:
    """A decision made on the plan's window, on the store's axis (`steps`: where the window begins)."""
    return decision if steps == 0 else replace(decision, allocations=tuple(shifted(list(decision.allocations), steps)))


def capacity_on_store(report: CapacityReport, steps: int) -> CapacityReport:
    """A capacity change's report made on the plan's window, on the store's axis."""
    if steps == 0:
        return report
    moves = report.adaptation
    return replace(report, adaptation=Adaptation(list(moves.affected), list(moves.kept), _moved(moves.moved, steps),
                                                 list(moves.dropped), _moved(moves.previous, steps),
                                                 dict(moves.missed)))


def replan_on_store(outcome: ReplanOutcome, steps: int) -> ReplanOutcome:
    """A re-planning's outcome made on the plan's window, on the store's axis."""
    if steps == 0:
        return outcome
    return replace(outcome, moved=_moved(outcome.moved, steps), previous=_moved(outcome.previous, steps))


def allocations_on_window(held: dict[int, list[Allocation]], steps: int) -> dict[int, list[Allocation]]:
    """Lease rows read from the store, on the plan's window (`steps`: where it begins on the store's axis)."""
    return held if steps == 0 else {key: shifted(allocations, -steps) for key, allocations in held.items()}
