"""Compile a reservation into placement tasks on the plan's step grid.

Windows disappear here: each node carries the intersection of every window above it,
in plan steps, rounded inwards. A recurring reservation compiles to one task tree per
instance inside the horizon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache

import numpy as np

from rdl.shape import lease_count, lease_steps, step_ceil, step_floor
from rdl.tree import (
    Absolute,
    All,
    Any,
    Atom,
    Expr,
    Order,
    Reservation,
    Resources,
    Window,
    atom_label,
    child_path,
    label,
)


@dataclass(frozen=True, slots=True)
class Clock:
    """The plan's step grid: step 0 at `origin`, `steps` steps of `step` seconds."""

    origin: datetime
    step: int
    steps: int

    def at(self, index: int) -> datetime:
        return self.origin + timedelta(seconds=index * self.step)


@dataclass(frozen=True, slots=True)
class AtomTask:
    """An atom to place: `leases` gangs of `gang` bundles, each held `length` steps, inside [lo, hi)."""

    label: str
    atom: Atom
    demand: np.ndarray  # one bundle, per plan resource
    gang: int
    parallelism: int | None
    length: int
    leases: int
    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class GroupTask:
    """`order`, `all` or `any` over child tasks inside [lo, hi)."""

    kind: str
    label: str
    children: tuple[Task, ...]
    lo: int
    hi: int
    gap: int | None = None


Task = AtomTask | GroupTask


@lru_cache(maxsize=4096)
def demand_of(bundle: Resources, resources: tuple[str, ...]) -> np.ndarray:
    """One bundle per plan resource, read-only: a stream of requests asks for a handful of bundle shapes, so each
    vector is built once and shared by every task and allocation of that shape (no caller writes into it)."""
    demand = np.array([bundle.get(r, 0.0) for r in resources], dtype=np.float64)
    demand.flags.writeable = False
    return demand


def mirrored(task: Task, steps: int) -> Task:
    """The task on a reversed time axis (step t becomes steps - t): "as late as possible" there is
    "as early as possible" here, so one placer serves both directions. Built field by field, as `clipped` is: every
    rejection's earliest-deadline search mirrors its request."""
    if isinstance(task, AtomTask):
        return _atom_within(task, steps - task.hi, steps - task.lo)
    children = tuple(mirrored(child, steps) for child in task.children)
    if task.kind == "order":
        children = children[::-1]
    return GroupTask(kind=task.kind, label=task.label, children=children, lo=steps - task.hi, hi=steps - task.lo,
                     gap=task.gap)


def clipped(task: Task, hi: int) -> Task:
    """The task with every node ending by step `hi`: what compiling it under a window ending at `hi` gives, when its
    windows were compiled under one ending at the horizon or later. Built field by field rather than by
    `dataclasses.replace` (17 -> 9 us for a four-stage order): the earliest-deadline search clips the request per
    probe."""
    if isinstance(task, AtomTask):
        return _atom_within(task, task.lo, min(task.hi, hi))
    return GroupTask(kind=task.kind, label=task.label, children=tuple(clipped(child, hi) for child in task.children),
                     lo=task.lo, hi=min(task.hi, hi), gap=task.gap)


def _atom_within(task: AtomTask, lo: int, hi: int) -> AtomTask:
    """The atom task inside [lo, hi) instead of its own window (mirrored and clipped: field by field, not by
    `dataclasses.replace`)."""
    return AtomTask(label=task.label, atom=task.atom, demand=task.demand, gang=task.gang,
                    parallelism=task.parallelism, length=task.length, leases=task.leases, lo=lo, hi=hi)


def ungapped(task: Task) -> Task:
    """The task with every `order`'s gap dropped: its stages still in turn, each as long after the last as it goes.
    Every placement of the task is one of this."""
    if isinstance(task, AtomTask):
        return task
    return replace(task, children=tuple(ungapped(child) for child in task.children), gap=None)


def atoms_of(task: Task) -> list[AtomTask]:
    """Every atom under a task, in tree order."""
    if isinstance(task, AtomTask):
        return [task]
    return [atom for child in task.children for atom in atoms_of(child)]


def most_gangs(atom: AtomTask) -> int:
    """Gangs the atom may hold at once: its `h` in gangs, and never more than its leases."""
    return atom.leases if atom.parallelism is None else min(atom.leases, atom.parallelism // atom.gang)


def task_work(task: Task) -> float:
    """Bundle-seconds a task needs at the least (`any`: its lightest alternative)."""
    if isinstance(task, AtomTask):
        return task.atom.work
    works = [task_work(child) for child in task.children]
    return min(works) if task.kind == "any" else sum(works)


@dataclass(frozen=True, slots=True)
class Instance:
    """One placement problem: a reservation (or one period of a recurring one)."""

    index: int
    task: Task
    arrival: datetime
    declared: tuple[int, int]  # the outermost window before clipping to the plan, in steps
    expr: Expr  # the instance's expression (times shifted to its period)


def compile_expr(expr: Expr, path: str, arrival: datetime, clock: Clock, resources: tuple[str, ...],
                 bounds: tuple[int, int], parent: Expr | None = None) -> Task:
    """The task tree of an expression under the given step bounds."""
    if isinstance(expr, Window):
        start = expr.start.resolve(arrival) if expr.start is not None else arrival
        inner = (max(bounds[0], step_ceil(clock.origin, start, clock.step)),
                 min(bounds[1], step_floor(clock.origin, expr.end.resolve(arrival), clock.step)))
        task = compile_expr(expr.child, child_path(expr, path, 0), arrival, clock, resources, inner, expr)
        return task if expr.name is None or isinstance(task, AtomTask) else _renamed(task, expr.name)
    if isinstance(expr, Atom):
        return AtomTask(atom_label(expr, path, parent), expr, demand_of(expr.bundle, resources), expr.gang,
                        expr.parallelism, lease_steps(expr, clock.step), lease_count(expr, clock.step), bounds[0],
                        bounds[1])
    children = tuple(compile_expr(c, f"{path}.{i}", arrival, clock, resources, bounds)
                     for i, c in enumerate(expr.children))
    gap = None
    if isinstance(expr, Order) and expr.gap is not None:
        gap = math.floor(expr.gap / clock.step + 1e-9)
    kind = "order" if isinstance(expr, Order) else "all" if isinstance(expr, All) else "any"
    assert isinstance(expr, Order | All | Any)
    return GroupTask(kind, label(expr, path), children, bounds[0], bounds[1], gap)


def _renamed(task: GroupTask, name: str) -> GroupTask:
    return GroupTask(task.kind, name, task.children, task.lo, task.hi, task.gap)


def outer_window(expr: Expr, arrival: datetime, clock: Clock, horizon: int) -> tuple[int, int]:
    """The declared outermost window in steps (unclipped); the horizon end when the body has none."""
    if isinstance(expr, Window):
        start = expr.start.resolve(arrival) if expr.start is not None else arrival
        return step_ceil(clock.origin, start, clock.step), step_floor(clock.origin, expr.end.resolve(arrival),
                                                                     clock.step)
    return step_ceil(clock.origin, arrival, clock.step), horizon


def compile_reservation(reservation: Reservation, submitted: datetime, clock: Clock, now_step: int,
                        resources: tuple[str, ...]) -> list[Instance]:
    """Every instance to place: the reservation, or each period of `every` whose window ends in the horizon.

    An instance of a recurring reservation lives in its own period: it ends by the next one's arrival. The first
    instance is always compiled (a past one rejects a new series), then the periods that end before the plan's
    step 0 are skipped, not enumerated: their cost would grow with the series' age.
    """
    first_arrival = reservation.arrival_at(submitted)
    instances = []
    horizon_end = clock.at(clock.steps)
    index = 0
    while True:
        if index == 1:
            index = first_period_in(reservation, first_arrival, clock.origin)
        shift = (reservation.every or 0.0) * index
        arrival = reservation.instance_arrival(first_arrival, index)
        if index > 0 and (reservation.every is None or arrival >= horizon_end
                          or not reservation.repeats_at(first_arrival, arrival)):
            break
        expr = _shifted(reservation.expr, shift, reservation.tz)
        period_end = clock.steps
        if reservation.every is not None:
            period_end = step_floor(clock.origin, reservation.instance_arrival(first_arrival, index + 1), clock.step)
        declared = outer_window(expr, arrival, clock, period_end)
        if reservation.every is not None:
            declared = (declared[0], min(declared[1], period_end))
        if index > 0 and declared[1] > clock.steps:
            break
        lower = max(now_step, step_ceil(clock.origin, arrival, clock.step))
        task = compile_expr(expr, "0", arrival, clock, resources, (lower, min(clock.steps, period_end)))
        instances.append(Instance(index, task, arrival, declared, expr))
        index += 1
    return instances


def first_period_in(reservation: Reservation, first_arrival: datetime, origin: datetime) -> int:
    """The index, at least 1, of a series' instance whose period ends after `origin` (or one before: float noise, or
    the hour a calendar day in `tz` differs from `every`)."""
    if reservation.every is None or origin <= first_arrival:
        return 1
    return max(1, math.floor((origin - first_arrival).total_seconds() / reservation.every) - 1)


def series_instance(reservation: Reservation, submitted: datetime, index: int) -> Reservation:
    """Instance `index` of a recurring reservation as a series of one: its arrival, absolute times and deadline
    moved to its period, and `until` just after its arrival, so that it compiles to that one instance, still
    bounded by its own period (how a series goes on once the plan rolls: planner/store/series.py). With `tz`, its
    `every` is its own period's length in seconds (a calendar day there may be 23 or 25 hours)."""
    assert reservation.every is not None
    shift, zone = reservation.every * index, reservation.tz
    first = reservation.arrival_at(submitted)
    arrival = reservation.instance_arrival(first, index)
    period = (reservation.instance_arrival(first, index + 1) - arrival).total_seconds()
    deadline = reservation.deadline.shifted(shift, zone) if reservation.deadline is not None else None
    return replace(reservation, arrival=Absolute(arrival), body=_shifted(reservation.body, shift, zone),
                   deadline=deadline, until=Absolute(arrival + timedelta(seconds=1)), every=period, tz=None)


def _shifted(expr: Expr, seconds: float, zone: str | None = None) -> Expr:
    """The expression with its absolute times moved by `seconds` (in `zone`: by wall-clock time there; relative
    times follow the arrival)."""
    if seconds == 0:
        return expr
    if isinstance(expr, Window):
        start = expr.start.shifted(seconds, zone) if expr.start is not None else None
        return replace(expr, child=_shifted(expr.child, seconds, zone), end=expr.end.shifted(seconds, zone),
                       start=start)
    if isinstance(expr, Atom):
        return expr
    children = tuple(_shifted(c, seconds, zone) for c in expr.children)
    if isinstance(expr, Order):
        return Order(children, expr.gap, expr.name, expr.span)
    return type(expr)(children, expr.name, expr.span)
