"""The plan: capacity and use over time as dense arrays, and the accepted reservations' allocations.

Allocations are the unit of record; `used` is derived from them and kept in step by
`add` and `remove`, which are exact inverses (quantities are whole MiB and counts, so
float64 sums are exact).

The arrays cover the plan's window, steps [0, horizon) from its clock's origin. A plan that runs
for months rolls (`roll`): the window's origin moves with the clock (by whole `roll_steps`), the arrays shift,
and the steps that come into the horizon get the capacity the cluster file gives them. Allocations
of running reservations may then begin before the window (a negative start): only the part inside
the window is counted in the arrays; the rest is history.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import TYPE_CHECKING, cast

import numpy as np

from planner.core.compile import Clock, demand_of
from planner.core.held import Accepted, Allocation, Held, shifted
from planner.core.policy import Violation, check_span
from rdl.cluster import Cluster
from rdl.policy import parse_policy
from rdl.shape import step_ceil, step_floor
from rdl.tree import Reservation, Resources

if TYPE_CHECKING:
    from planner.core.freetree import FreeTree

__all__ = ["Accepted", "Allocation", "Plan", "capacity_over_time", "shifted", "window_cluster", "window_offset"]


def window_cluster(cluster: Cluster, now: datetime) -> Cluster:
    """The cluster as a rolling plan sees it with its clock at `now`: the window starts at the last whole
    `roll_steps` of the cluster file's grid at or before `now` (never before the file's `start`) and reaches
    `horizon` from there."""
    offset = window_offset(cluster, now)
    return cluster if offset == 0 else replace(cluster, start=cluster.start + timedelta(seconds=offset * cluster.step))


def window_offset(cluster: Cluster, now: datetime) -> int:
    """Steps from the cluster file's `start` to the origin of the rolling window at `now`."""
    step = max(0, step_floor(cluster.start, now, cluster.step))
    return step - step % cluster.roll_steps


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
    for window in cluster.windows:  # recurring changes override what they name while they last
        rows = [names.index(n) for n in window.capacity]
        values = np.array([window.capacity[n] for n in window.capacity])[:, None]
        for begins, ends in window.occurrences(clock.origin, clock.at(clock.steps)):
            first, last = step_ceil(clock.origin, begins, clock.step), step_floor(clock.origin, ends, clock.step)
            if first < last:
                capacity[rows, max(first, 0):max(min(last, clock.steps), 0)] = values
            # Steps it covers in part: the least the cluster has at any moment of them.
            for partial in {step_floor(clock.origin, begins, clock.step), last}:
                if first <= partial < last:
                    continue  # covered whole, above
                if 0 <= partial < clock.steps and clock.at(partial) < ends and clock.at(partial + 1) > begins:
                    capacity[rows, partial] = np.minimum(capacity[rows, partial], values[:, 0])
    return capacity


class Plan:
    """Capacity, use and accepted reservations over the horizon."""

    def __init__(self, cluster: Cluster, now: datetime | None = None):
        self.cluster = cluster
        self.clock = Clock(cluster.start, cluster.step, cluster.steps)
        self.resources = cluster.resource_names
        self._tree: FreeTree | None = None
        self.capacity = capacity_over_time(cluster, self.clock)
        self.used = np.zeros_like(self.capacity)
        self.accepted = Held()
        self.now = now or cluster.start
        self.policy = parse_policy(cluster.policies, cluster.step)
        self.user_used: dict[str | None, np.ndarray] = {}  # kept only when the policy limits users

    # Setting either array (`plan.used += ...` included) drops the free-capacity tree: it is built again when asked.
    @property
    def capacity(self) -> np.ndarray:
        return self._capacity

    @capacity.setter
    def capacity(self, value: np.ndarray) -> None:
        self._capacity, self._tree = value, None

    @property
    def used(self) -> np.ndarray:
        return self._used

    @used.setter
    def used(self, value: np.ndarray) -> None:
        self._used, self._tree = value, None

    def free_tree(self) -> FreeTree:
        """Free capacity as a searchable tree (freetree.py), built on first use and kept in step by `add`/`remove`."""
        if self._tree is None:
            from planner.core.freetree import FreeTree  # loads the compiler: only plans with long windows need it

            self._tree = FreeTree(self.capacity - self.used)
        return self._tree

    @property
    def built_tree(self) -> FreeTree | None:
        """The free-capacity tree if a search has built it, else None: for a reader that would not build it."""
        return self._tree

    @property
    def nbytes(self) -> int:
        """Bytes of the plan's arrays: capacity, use, each limited user's use, and the free-capacity tree if built."""
        tree = 0 if self._tree is None else self._tree.nbytes
        return self.capacity.nbytes + self.used.nbytes + sum(use.nbytes for use in self.user_used.values()) + tree

    def roll(self, now: datetime) -> int:
        """Move the clock to `now` (never back) and the window with it, by whole `roll_steps`; the steps it moved.

        The arrays shift by the steps moved and the new steps at the front get the cluster file's capacity
        (its `changes:` included); the allocations are re-based on the new origin as they are next read (`Held`).
        The cost is one pass over the arrays, whatever the distance and however many reservations are held, paid
        once every `roll_steps` steps.
        """
        moved = max(0, step_floor(self.clock.origin, now, self.clock.step))
        moved -= moved % self.cluster.roll_steps
        self.now = max(now, self.now)
        if moved == 0:
            return 0
        self.cluster = replace(self.cluster, start=self.clock.at(moved))
        self.clock = Clock(self.cluster.start, self.clock.step, self.clock.steps)
        self.capacity = capacity_over_time(self.cluster, self.clock)
        self.used = _shift_left(self.used, moved)
        self.user_used = {user: _shift_left(use, moved) for user, use in self.user_used.items()}
        self.accepted.roll(moved)
        return moved

    @property
    def now_step(self) -> int:
        return max(0, step_ceil(self.clock.origin, self.now, self.clock.step))

    def free(self) -> np.ndarray:
        """Capacity not yet promised, per resource and step (a new array)."""
        return self.capacity - self.used

    def free_in(self, lo: int, hi: int) -> np.ndarray:
        """Capacity not yet promised over steps [lo, hi) only (a new array): what one decision reads."""
        return self.capacity[:, lo:hi] - self.used[:, lo:hi]

    def demand(self, bundle: Resources) -> np.ndarray:
        """One bundle per plan resource (read-only: shared, compile.demand_of)."""
        return demand_of(bundle, self.resources)

    def copy(self) -> Plan:
        """An independent plan to try things on (the cluster and clock are shared, being immutable)."""
        twin = Plan.__new__(Plan)
        twin.__dict__.update(self.__dict__)
        twin.used = self.used.copy()
        twin._tree = None if self._tree is None else self._tree.copy()
        twin.accepted = self.accepted.copy()
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

    def use_over(self, allocations: list[Allocation]) -> tuple[np.ndarray, int]:
        """What these allocations hold over the steps they reach inside the window only: (use, its first step)."""
        steps = self.clock.steps
        inside = [a for a in allocations if a.end > 0 and a.start < steps]
        lo = min((max(a.start, 0) for a in inside), default=0)
        hi = max((min(a.end, steps) for a in inside), default=0)
        use = np.zeros((len(self.resources), max(hi - lo, 0)))
        self._accumulate(use, shifted(inside, -lo), +1)
        return use, lo

    def policy_violation(self, reservation: Reservation, allocations: list[Allocation]) -> Violation | None:
        """The sharing policy's limit these allocations would make the reservation's user break, or None; read
        over the steps they hold (and the average's window around them), not the horizon (`check_span`)."""
        if not self.policy.limited:
            return None
        added, lo = self.use_over(allocations)
        return check_span(self.policy, reservation.user, self.capacity, self.used_by(reservation.user), added, lo)

    def within_policy(self, reservation: Reservation, allocations: list[Allocation]) -> bool:
        """Whether adding these allocations keeps the reservation's user within the sharing policy."""
        return self.policy_violation(reservation, allocations) is None

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
        written = self._accumulate(self.used, accepted.allocations, sign)
        if self._tree is not None and written is not None:
            self._tree.reset(self.capacity, self.used, *written)
        if self.policy.limited:
            user = accepted.reservation.user
            self._accumulate(self.user_used.setdefault(user, np.zeros_like(self.capacity)), accepted.allocations,
                             sign)

    def _accumulate(self, into: np.ndarray, allocations: list[Allocation], sign: int) -> tuple[int, int] | None:
        """Add (or take away) the use of allocations to `into`: the part of each inside the window; the steps
        [lo, hi) that holds, None if nothing.

        Per bundle shape, in the order the shapes first appear: the bundles held at each step summed as integers,
        then one product per resource and step (laying.py lays them). Many allocations (a decision at one-second
        steps brings hundreds) are read into arrays in one pass; a few, one by one (the arrays cost more there)."""
        steps = into.shape[1]
        gathered = (_shapes_of_few if len(allocations) <= FEW else _shapes_of_many)(allocations, steps)
        if gathered is None:
            return None
        shapes, written = gathered
        for bundle, (starts, ends, bundles) in shapes.items():
            if len(starts) == 1:  # one allocation: the product the outer one below makes at each of its steps
                into[:, int(starts[0]):int(ends[0])] += (self.demand(bundle) * sign)[:, None] * float(bundles[0])
                continue
            from planner.core.laying import lay  # the counting pass, compiled (laying.py)

            begins = np.asarray(starts, dtype=np.int64)
            base = int(begins.min())
            lay(into, base, begins - base, np.asarray(ends, dtype=np.int64) - base,
                np.ascontiguousarray(bundles, dtype=np.int64), -(self.demand(bundle) * sign))
        return written


FEW = 16  # allocations read one by one up to this many (Plan._accumulate)
Column = list[int] | np.ndarray
Shapes = dict[Resources, tuple[Column, Column, Column]]  # per bundle shape: starts, ends, bundles


def _shapes_of_few(allocations: list[Allocation], steps: int) -> tuple[Shapes, tuple[int, int]] | None:
    """The allocations' parts inside [0, steps) per bundle shape, in the order the shapes first appear, and the
    steps they reach; None if none is inside."""
    shapes: dict[Resources, tuple[list[int], list[int], list[int]]] = {}
    lo, hi = steps, 0
    for allocation in allocations:
        if allocation.end > 0 and allocation.start < steps:
            begin, finish = max(allocation.start, 0), min(allocation.end, steps)
            lists = shapes.setdefault(allocation.bundle, ([], [], []))
            lists[0].append(begin)
            lists[1].append(finish)
            lists[2].append(allocation.bundles)
            lo, hi = min(lo, begin), max(hi, finish)
    return (cast(Shapes, shapes), (lo, hi)) if shapes else None  # lists are Columns; the dict type is invariant


def _shapes_of_many(allocations: list[Allocation], steps: int) -> tuple[Shapes, tuple[int, int]] | None:
    """_shapes_of_few, read into arrays in one pass."""
    spans = np.array(list(map(_SPAN, allocations)), dtype=np.int64)  # start, end, bundles per allocation
    inside = (spans[:, 1] > 0) & (spans[:, 0] < steps)
    if not inside.all():
        allocations = [allocations[i] for i in np.flatnonzero(inside)]
        spans = spans[inside]
    if not allocations:
        return None
    begins, finishes = np.maximum(spans[:, 0], 0), np.minimum(spans[:, 1], steps)
    first = allocations[0].bundle
    if all(allocation.bundle is first for allocation in allocations):  # one atom's: one shape
        shapes: Shapes = {first: (begins, finishes, spans[:, 2])}
    else:
        index: dict[Resources, int] = {}
        of_shape = np.array([index.setdefault(a.bundle, len(index)) for a in allocations], dtype=np.int64)
        shapes = {}
        for number, bundle in enumerate(index):
            chosen = of_shape == number
            shapes[bundle] = (begins[chosen], finishes[chosen], spans[chosen, 2])
    return shapes, (int(begins.min()), int(finishes.max()))


_SPAN = attrgetter("start", "end", "bundles")


def _shift_left(values: np.ndarray, steps: int) -> np.ndarray:
    """The array `steps` columns on (the first ones dropped), zeros after what it held."""
    shifted_values = np.zeros_like(values)
    if steps < values.shape[1]:
        shifted_values[:, :values.shape[1] - steps] = values[:, steps:]
    return shifted_values
