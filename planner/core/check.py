"""An independent checker of plans: given the cluster, the reservations and the decision records
(the JSON of decisions.md), list every broken promise.

It shares no placement code with the agents: it rebuilds capacity from the cluster file,
reads allocations back from their ISO times, and walks each reservation's tree to check
gang multiples, lease lengths and counts, parallelism, windows, order and gaps, `any`
exactly one, `all` every child, every recurring instance, and capacity per step.

A plan store's plan rolls (`rolled_to`: its clock now): its horizon runs `horizon` from the last whole
`roll_steps` at or before its clock (never before the cluster's `start`). A reservation must place
every instance inside the horizon as it was when it was submitted; an instance of a recurring one
beyond that may be placed too (once the plan rolled on: re-placing it, or the series going on) and
is then checked like the others, up to the horizon at `rolled_to`. Capacity is checked over every
step any of them reaches. A one-shot plan (`rayon plan`, the simulator's) covers the cluster file's
horizon from its `start`, whatever its clock.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any as AnyType

import numpy as np

from planner.core.policy import average_violation, instantaneous_violation
from rdl import units
from rdl.cluster import Cluster
from rdl.policy import parse_policy
from rdl.shape import lease_count, lease_steps
from rdl.tree import Atom, Expr, Order, Reservation, Window, atom_label, child_path, labelled_atoms

TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Lease:
    """One allocation entry read back onto the step grid."""

    start: int
    end: int
    bundles: int


class _Grid:
    def __init__(self, cluster: Cluster, steps: int):
        self.origin, self.step, self.steps = cluster.start, cluster.step, steps

    def exact(self, at: datetime) -> int | None:
        seconds = (at - self.origin) / timedelta(seconds=1)
        index = round(seconds / self.step)
        return index if abs(index * self.step - seconds) < 1e-6 else None

    def up(self, at: datetime) -> int:
        return math.ceil((at - self.origin) / timedelta(seconds=1) / self.step - 1e-9)

    def down(self, at: datetime) -> int:
        return math.floor((at - self.origin) / timedelta(seconds=1) / self.step + 1e-9)


def check_plan(cluster: Cluster, reservations: Iterable[Reservation], decisions: Iterable[Mapping[str, AnyType]],
               submitted: datetime | Mapping[str, datetime] | None = None, now: datetime | None = None,
               rolled_to: datetime | None = None) -> list[str]:
    """Every violation found (empty when the plan keeps all its promises); `rolled_to`: a plan store's plan, rolled
    with its clock to this time. A series' decision may list `missed_instances`: instances rejected as decisions of
    their own (the log's), which must hold nothing."""
    by_name = {r.name: r for r in reservations}
    decisions = list(decisions)
    horizon = cluster.horizon // cluster.step

    def when(name: str) -> datetime:
        found = submitted.get(name) if isinstance(submitted, Mapping) else submitted
        return found or cluster.start

    # Each reservation's horizon ends `horizon` after the step its submission fell in (the plan rolls).
    def horizon_end(at: datetime) -> int:
        if rolled_to is None:
            return horizon
        step = max(0, _Grid(cluster, 0).down(at))
        return step - step % cluster.roll_steps + horizon

    ends = {d["reservation"]: horizon_end(when(d["reservation"])) for d in decisions}
    grid = _Grid(cluster, max([horizon_end(rolled_to or cluster.start), *ends.values()]))
    problems: list[str] = []
    decided: dict[str, Mapping[str, AnyType]] = {}
    for decision in decisions:
        name = decision["reservation"]
        if name in decided:
            problems.append(f"{name}: decided twice")
        decided[name] = decision
    for name in by_name:
        if name not in decided:
            problems.append(f"{name}: no decision")
    use = np.zeros((len(cluster.resource_names), grid.steps))
    by_user: dict[str | None, np.ndarray] = {}
    for name, decision in decided.items():
        reservation = by_name.get(name)
        if reservation is None:
            problems.append(f"{name}: decision for an unknown reservation")
            continue
        if not decision["accepted"]:
            if decision.get("allocations"):
                problems.append(f"{name}: rejected but holds allocations")
            continue
        mine = np.zeros_like(use)
        problems += _check_reservation(reservation, decision, grid, cluster, mine, when(name), now or cluster.start,
                                       ends[name])
        use += mine
        by_user[reservation.user] = by_user.get(reservation.user, np.zeros_like(use)) + mine
    problems += _check_capacity(cluster, grid, use)
    problems += _check_policy(cluster, grid, by_user)
    return problems


def _leases(reservation: Reservation, decision: Mapping[str, AnyType], grid: _Grid, cluster: Cluster,
            use: np.ndarray) -> tuple[dict[tuple[int, str], list[Lease]], list[str]]:
    """Allocations grouped by (instance, atom), added to `use`; with the problems found reading them."""
    found: dict[tuple[int, str], list[Lease]] = defaultdict(list)
    problems = []
    bundles_of = {label: atom for _, label, atom in labelled_atoms(reservation.expr)}
    for entry in decision.get("allocations", []):
        label = entry["atom"]
        start, end = grid.exact(units.read_instant(entry["start"])), grid.exact(units.read_instant(entry["end"]))
        if label not in bundles_of:
            problems.append(f"{reservation.name}: allocation for unknown atom `{label}`")
            continue
        if start is None or end is None or not 0 <= start < end <= grid.steps:
            problems.append(f"{reservation.name}/{label}: allocation {entry['start']}–{entry['end']} is off the grid")
            continue
        bundles = int(entry["bundles"])
        expected = {r: q * bundles for r, q in bundles_of[label].bundle.items()}
        if any(abs(float(entry["resources"].get(r, 0)) - q) > TOLERANCE for r, q in expected.items()):
            problems.append(f"{reservation.name}/{label}: resources {entry['resources']} are not {bundles} bundles")
        for index, resource in enumerate(cluster.resource_names):
            use[index, start:end] += expected.get(resource, 0.0)
        found[(int(entry.get("instance", 0)), label)].append(Lease(start, end, bundles))
    return found, problems


def _check_reservation(reservation: Reservation, decision: Mapping[str, AnyType], grid: _Grid, cluster: Cluster,
                       use: np.ndarray, submitted: datetime, now: datetime, horizon_end: int) -> list[str]:
    leases, problems = _leases(reservation, decision, grid, cluster, use)
    first_arrival = reservation.arrival_at(submitted)
    required = len(_instances(reservation, first_arrival, grid, horizon_end))
    instances = _instances(reservation, first_arrival, grid, grid.steps)  # placed later, as the plan rolled on
    for key in leases:
        if key[0] >= len(instances):
            problems.append(f"{reservation.name}: allocations for instance {key[0]}, beyond the horizon")
    missed = {int(i) for i in decision.get("missed_instances", ())}  # decided apart, each its own rejection
    for index, (arrival, shift) in enumerate(instances):
        if index in missed:
            if any(key[0] == index for key in leases):
                problems.append(f"{reservation.name}: instance {index} was rejected but holds allocations")
            continue
        if index >= required and not any(key[0] == index for key in leases):
            continue
        walker = _Walker(reservation.name, index, leases, grid, arrival, shift, cluster.step, reservation.tz)
        lower = max(grid.up(arrival), grid.up(now))
        upper = grid.steps
        if reservation.every is not None:  # an instance lives in its own period
            upper = min(upper, grid.down(reservation.instance_arrival(first_arrival, index + 1)))
        used = walker.check(reservation.expr, "0", None, (lower, upper))
        if used is None:
            problems.append(f"{reservation.name}: instance {index} accepted but not placed in full")
        problems += walker.problems
    return problems


def _instances(reservation: Reservation, arrival: datetime, grid: _Grid, horizon: int) -> list[tuple[datetime, float]]:
    """(arrival, shift in seconds) of each instance that must be placed inside a horizon ending at step `horizon`."""
    if reservation.every is None:
        return [(arrival, 0.0)]
    horizon_end = grid.origin + timedelta(seconds=horizon * grid.step)
    found = [(arrival, 0.0)]
    while True:
        shift = reservation.every * len(found)
        moved = reservation.instance_arrival(arrival, len(found))
        if moved >= horizon_end or not reservation.repeats_at(arrival, moved):
            return found
        expr = reservation.expr
        period_end = grid.down(reservation.instance_arrival(arrival, len(found) + 1))
        end = grid.down(_shift(expr.end, shift, reservation.tz).resolve(moved)) if isinstance(expr, Window) \
            else period_end
        end = min(end, period_end)
        if end > horizon:
            return found
        found.append((moved, shift))


def _shift(value: AnyType, seconds: float, zone: str | None) -> AnyType:
    return value.shifted(seconds, zone)


class _Walker:
    """Walks one instance's tree; returns (first start, last end) of what is placed, None if nothing."""

    def __init__(self, name: str, instance: int, leases: Mapping[tuple[int, str], list[Lease]], grid: _Grid,
                 arrival: datetime, shift: float, step: int, zone: str | None = None):
        self.name, self.instance, self.leases, self.grid = name, instance, leases, grid
        self.arrival, self.shift, self.step, self.zone = arrival, shift, step, zone
        self.problems: list[str] = []

    def fail(self, where: str, message: str) -> None:
        suffix = f" (instance {self.instance})" if self.instance else ""
        self.problems.append(f"{self.name}/{where}{suffix}: {message}")

    def check(self, node: Expr, path: str, parent: Expr | None, bounds: tuple[int, int]) -> tuple[int, int] | None:
        if isinstance(node, Atom):
            return self.atom(node, atom_label(node, path, parent), bounds)
        if isinstance(node, Window):
            start = _shift(node.start, self.shift, self.zone).resolve(self.arrival) if node.start is not None \
                else self.arrival
            end = _shift(node.end, self.shift, self.zone).resolve(self.arrival)
            inner = (max(bounds[0], self.grid.up(start)), min(bounds[1], self.grid.down(end)))
            return self.check(node.child, child_path(node, path, 0), node, inner)
        spans = [self.check(child, f"{path}.{i}", node, bounds) for i, child in enumerate(node.children)]
        placed = [s for s in spans if s is not None]
        kind = type(node).__name__.lower()
        if kind == "any":
            if len(placed) > 1:
                self.fail(path, f"`any` placed {len(placed)} alternatives, not one")
        elif placed and len(placed) != len(spans):
            self.fail(path, f"`{kind}` placed {len(placed)} of its {len(spans)} children")
        if kind == "order" and len(placed) == len(spans):
            self.order(node, path, placed)  # type: ignore[arg-type]
        if not placed:
            return None
        return min(s[0] for s in placed), max(s[1] for s in placed)

    def order(self, node: Order, path: str, spans: list[tuple[int, int]]) -> None:
        gap = None if node.gap is None else math.floor(node.gap / self.step + 1e-9)
        for (_, end), (start, _) in itertools.pairwise(spans):
            if start < end:
                self.fail(path, f"a stage starts at step {start}, before the previous one ends at {end}")
            if gap is not None and start - end > gap:
                self.fail(path, f"a stage starts {start - end} steps after the previous one, more than the gap {gap}")

    def atom(self, atom: Atom, label: str, bounds: tuple[int, int]) -> tuple[int, int] | None:
        leases = self.leases.get((self.instance, label), [])
        if not leases:
            return None
        length, count = lease_steps(atom, self.step), lease_count(atom, self.step)
        total = 0
        for lease in leases:
            if lease.bundles <= 0 or lease.bundles % atom.gang:
                self.fail(label, f"{lease.bundles} bundles is not a positive multiple of the gang {atom.gang}")
            if lease.end - lease.start != length:
                self.fail(label, f"a lease lasts {lease.end - lease.start} steps, not {length}")
            if lease.start < bounds[0] or lease.end > bounds[1]:
                self.fail(label, f"lease [{lease.start}, {lease.end}) is outside its window [{bounds[0]}, {bounds[1]})")
            total += lease.bundles // max(atom.gang, 1)
        if total != count:
            self.fail(label, f"{total} leases placed, {count} needed")
        if atom.parallelism is not None:
            held = np.zeros(self.grid.steps + 1, dtype=np.int64)
            for lease in leases:
                held[lease.start:lease.end] += lease.bundles
            if held.max() > atom.parallelism:
                self.fail(label, f"holds {held.max()} bundles at once, more than h={atom.parallelism}")
        return min(x.start for x in leases), max(x.end for x in leases)


def _check_policy(cluster: Cluster, grid: _Grid, by_user: dict[str | None, np.ndarray]) -> list[str]:
    """Each user's share of the plan against the cluster file's sharing policy."""
    policy = parse_policy(cluster.policies, cluster.step)
    if not policy.limited:
        return []
    capacity = _capacity(cluster, grid)
    found = []
    for user, use in by_user.items():
        for violation in (instantaneous_violation(policy, user, capacity, use),
                          average_violation(policy, user, capacity, use)):
            if violation is not None:
                found.append(f"policy: {violation.message(cluster.resource_names, grid.origin, grid.step)}")
    return found


def _check_capacity(cluster: Cluster, grid: _Grid, use: np.ndarray) -> list[str]:
    capacity = _capacity(cluster, grid)
    over = np.argwhere(use > capacity + TOLERANCE)
    return [f"capacity: {cluster.resource_names[r]} at step {t} uses {use[r, t]:g} of {capacity[r, t]:g}"
            for r, t in over[:20]]


def _capacity(cluster: Cluster, grid: _Grid) -> np.ndarray:
    """Capacity per resource and step, rebuilt from the cluster file."""
    capacity = np.empty((len(cluster.resource_names), grid.steps))
    for index, name in enumerate(cluster.resource_names):
        capacity[index, :] = cluster.capacity[name]
    for change in sorted(cluster.changes, key=lambda c: c.at):
        for index, name in enumerate(cluster.resource_names):
            new = change.capacity.get(name, 0.0)
            # The least capacity at any moment of a step is what the step may use.
            exact = grid.exact(change.at)
            first = grid.up(change.at) if exact is not None else grid.down(change.at)
            if 0 <= first < grid.steps and exact is None:
                capacity[index, first] = min(capacity[index, first], new)
                first += 1
            capacity[index, max(first, 0):] = new
    end = grid.origin + timedelta(seconds=grid.steps * grid.step)
    for window in cluster.windows:  # a recurring change holds what it names while it lasts
        for begins, ends in window.occurrences(grid.origin, end):
            for index, name in enumerate(cluster.resource_names):
                if name not in window.capacity:
                    continue
                for step in range(max(grid.down(begins), 0), min(grid.up(ends), grid.steps)):
                    moment = grid.origin + timedelta(seconds=step * grid.step)
                    whole = moment >= begins and moment + timedelta(seconds=grid.step) <= ends
                    value = window.capacity[name]
                    capacity[index, step] = value if whole else min(capacity[index, step], value)
    return capacity
