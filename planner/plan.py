"""The plan: capacity and use over time as dense arrays, and the accepted reservations' allocations.

Allocations are the unit of record; `used` is derived from them and kept in step by
`add` and `remove`, which are exact inverses (quantities are whole MiB and counts, so
float64 sums are exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from planner.compile import Clock
from rdl.cluster import Cluster
from rdl.shape import step_ceil, step_floor
from rdl.tree import Reservation, Resources


@dataclass(frozen=True, slots=True)
class Allocation:
    """`bundles` bundles of `bundle` held over steps [start, end) for one atom (of one recurring instance)."""

    atom: str
    start: int
    end: int
    bundles: int
    bundle: Resources
    instance: int = 0

    def resources(self) -> dict[str, float]:
        return {name: quantity * self.bundles for name, quantity in self.bundle.items()}


@dataclass
class Accepted:
    """A reservation the plan guarantees, with when it was submitted and what it holds."""

    reservation: Reservation
    submitted: datetime
    allocations: list[Allocation] = field(default_factory=list)


def capacity_over_time(cluster: Cluster, clock: Clock) -> np.ndarray:
    """Capacity per resource and step, with the known changes applied.

    A change inside a step counts for that whole step when it lowers capacity and from the next
    step when it raises it: a step's capacity is the least the cluster has at any moment of it.
    """
    names = cluster.resource_names
    capacity = np.empty((len(names), clock.steps), dtype=np.float64)
    capacity[:] = np.array([cluster.capacity[n] for n in names])[:, None]
    for change in cluster.changes:
        new = np.array([change.capacity.get(n, 0.0) for n in names])
        whole = max(0, step_ceil(clock.origin, change.at, clock.step))
        capacity[:, whole:] = new[:, None]
        partial = step_floor(clock.origin, change.at, clock.step)
        if 0 <= partial < min(whole, clock.steps):
            capacity[:, partial] = np.minimum(capacity[:, partial], new)
    return capacity


class Plan:
    """Capacity, use and accepted reservations over the horizon."""

    def __init__(self, cluster: Cluster, now: datetime | None = None):
        self.cluster = cluster
        self.clock = Clock(cluster.start, cluster.step, cluster.steps)
        self.resources = cluster.resource_names
        self.capacity = capacity_over_time(cluster, self.clock)
        self.used = np.zeros_like(self.capacity)
        self.accepted: dict[str, Accepted] = {}
        self.now = now or cluster.start

    @property
    def now_step(self) -> int:
        return max(0, step_ceil(self.clock.origin, self.now, self.clock.step))

    def free(self) -> np.ndarray:
        """Capacity not yet promised, per resource and step (a new array)."""
        return self.capacity - self.used

    def demand(self, bundle: Resources) -> np.ndarray:
        return np.array([bundle.get(name, 0.0) for name in self.resources], dtype=np.float64)

    def add(self, accepted: Accepted) -> None:
        """Record an accepted reservation and its use; its name must be new."""
        name = accepted.reservation.name
        if name in self.accepted:
            raise ValueError(f"reservation `{name}` is already in the plan")
        self._apply(accepted.allocations, +1)
        self.accepted[name] = accepted

    def remove(self, name: str) -> Accepted:
        """Take a reservation out of the plan, returning its capacity."""
        accepted = self.accepted.pop(name)
        self._apply(accepted.allocations, -1)
        return accepted

    def _apply(self, allocations: list[Allocation], sign: int) -> None:
        """Add (or take away) the use of allocations, one vectorised pass per bundle shape."""
        shapes: dict[Resources, list[Allocation]] = {}
        for allocation in allocations:
            shapes.setdefault(allocation.bundle, []).append(allocation)
        for bundle, group in shapes.items():
            starts = np.fromiter((a.start for a in group), dtype=np.int64, count=len(group))
            ends = np.fromiter((a.end for a in group), dtype=np.int64, count=len(group))
            counts = np.fromiter((a.bundles for a in group), dtype=np.int64, count=len(group))
            base, top = int(starts.min()), int(ends.max())
            held = np.zeros(top - base + 1, dtype=np.int64)
            np.add.at(held, starts - base, counts)
            np.add.at(held, ends - base, -counts)
            self.used[:, base:top] += np.outer(self.demand(bundle) * sign, np.cumsum(held[:-1]))
