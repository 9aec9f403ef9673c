"""The plan: capacity and use over time as dense arrays, and the accepted reservations' allocations.

Allocations are the unit of record; `used` is derived from them and kept in step by
`add` and `remove`, which are exact inverses (quantities are whole MiB and counts, so
float64 sums are exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from planner.core.compile import Clock
from planner.core.policy import check
from rdl.cluster import Cluster
from rdl.policy import parse_policy
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
        self.policy = parse_policy(cluster.policies, cluster.step)
        self.user_used: dict[str | None, np.ndarray] = {}  # kept only when the policy limits users

    @property
    def now_step(self) -> int:
        return max(0, step_ceil(self.clock.origin, self.now, self.clock.step))

    def free(self) -> np.ndarray:
        """Capacity not yet promised, per resource and step (a new array)."""
        return self.capacity - self.used

    def demand(self, bundle: Resources) -> np.ndarray:
        return np.array([bundle.get(name, 0.0) for name in self.resources], dtype=np.float64)

    def copy(self) -> Plan:
        """An independent plan to try things on (the cluster and clock are shared, being immutable)."""
        twin = Plan.__new__(Plan)
        twin.__dict__.update(self.__dict__)
        twin.used = self.used.copy()
        twin.accepted = dict(self.accepted)
        twin.user_used = {user: use.copy() for user, use in self.user_used.items()}
        return twin

    def used_by(self, user: str | None) -> np.ndarray:
        """What one user holds per resource and step (zeros for a user with nothing)."""
        found = self.user_used.get(user)
        return found if found is not None else np.zeros_like(self.capacity)

    def use_of(self, allocations: list[Allocation]) -> np.ndarray:
        """Resources × steps that these allocations hold (one vectorised pass per bundle shape)."""
        use = np.zeros_like(self.capacity)
        self._accumulate(use, allocations, +1)
        return use

    def within_policy(self, reservation: Reservation, allocations: list[Allocation]) -> bool:
        """Whether adding these allocations keeps the reservation's user within the sharing policy."""
        if not self.policy.limited:
            return True
        added = self.use_of(allocations)
        user = reservation.user
        return check(self.policy, user, self.capacity, self.used_by(user) + added, added=added) is None

    def add(self, accepted: Accepted) -> None:
        """Record an accepted reservation and its use; its name must be new."""
        name = accepted.reservation.name
        if name in self.accepted:
            raise ValueError(f"reservation `{name}` is already in the plan")
        self._apply(accepted, +1)
        self.accepted[name] = accepted

    def remove(self, name: str) -> Accepted:
        """Take a reservation out of the plan, returning its capacity."""
        accepted = self.accepted.pop(name)
        self._apply(accepted, -1)
        return accepted

    def _apply(self, accepted: Accepted, sign: int) -> None:
        self._accumulate(self.used, accepted.allocations, sign)
        if self.policy.limited:
            user = accepted.reservation.user
            self._accumulate(self.user_used.setdefault(user, np.zeros_like(self.capacity)), accepted.allocations,
                             sign)

    def _accumulate(self, into: np.ndarray, allocations: list[Allocation], sign: int) -> None:
        """Add (or take away) the use of allocations to `into`."""
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
            into[:, base:top] += np.outer(self.demand(bundle) * sign, np.cumsum(held[:-1]))
