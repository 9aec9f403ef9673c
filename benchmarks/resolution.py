"""What benchmarks/admission.py's resolution sweep measures beside the agents: a bare compiled earliest-fit pass,
the plan's memory, and the roll of a plan holding many reservations.

The bare pass is the floor of an admission on a dense grid: each reservation's atoms in order (an `any` by its first
alternative), each one block of `h` bundles (or its gang) for as long as its work takes, at the earliest start in
its window where every resource has room, booked at once; no search, no backtracking, no reasons.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from datetime import timedelta

import numpy as np
from numba import njit

from planner.agents.deadline import earliest_deadline
from planner.agents.greedy.agent import GreedyAgent
from planner.core.compile import Clock, compile_reservation
from planner.core.decision import Decision
from planner.core.plan import Accepted, Allocation, Plan, capacity_over_time
from rdl import parse_text
from rdl.cluster import Cluster
from rdl.shape import step_ceil, step_floor
from rdl.tree import Any, Atom, Expr, Order, Reservation, Resources, Window


@njit(cache=True)
def earliest_fit(free: np.ndarray, need: np.ndarray, lo: int, hi: int, length: int) -> int:  # pragma: no cover
    """The first start in [lo, hi - length] whose whole block has `need` free, or -1; jumps past a short step."""
    start = lo
    while start + length <= hi:
        blocked = -1
        for t in range(start + length - 1, start - 1, -1):  # from the end: the latest short step jumps furthest
            for r in range(free.shape[0]):
                if free[r, t] < need[r]:
                    blocked = t
                    break
            if blocked >= 0:
                break
        if blocked < 0:
            return start
        start = blocked + 1
    return -1


def _blocks(expr: Expr) -> list[Atom]:
    """The atoms the bare pass books, in order."""
    if isinstance(expr, Atom):
        return [expr]
    if isinstance(expr, Window):
        return _blocks(expr.child)
    if isinstance(expr, Any):
        return _blocks(expr.children[0])
    assert isinstance(expr, Order)
    return [atom for child in expr.children for atom in _blocks(child)]


def bare_pass(cluster: Cluster, reservations: list[Reservation]) -> tuple[int, list[float], int]:
    """(accepted, CPU seconds per admission, bytes of its dense array) of the bare pass over the stream."""
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    free = capacity_over_time(cluster, clock)
    names = cluster.resource_names
    times, accepted = [], 0
    for reservation in reservations:
        began = time.process_time()
        arrival = reservation.arrival_at(cluster.start)
        lo = max(0, step_ceil(clock.origin, arrival, clock.step))
        end = reservation.deadline.resolve(arrival) if reservation.deadline is not None else clock.at(clock.steps)
        hi = min(clock.steps, step_floor(clock.origin, end, clock.step))
        booked: list[tuple[np.ndarray, int, int]] = []
        for atom in _blocks(reservation.body):
            bundles = atom.parallelism or atom.gang
            length = max(1, math.ceil(atom.work / (bundles * clock.step)))
            need = np.array([atom.bundle.get(n, 0.0) * bundles for n in names])
            start = earliest_fit(free, need, lo, hi, length)
            if start < 0:
                break
            free[:, start:start + length] -= need[:, None]
            booked.append((need, start, length))
            lo = start + length
        else:
            accepted += 1
            booked = []
        for need, start, length in booked:  # a reservation that did not fit whole gives its blocks back
            free[:, start:start + length] += need[:, None]
        times.append(time.process_time() - began)
    return accepted, times, free.nbytes


def plan_memory(plan: Plan) -> int:
    """Bytes of the plan's arrays: capacity, use, each limited user's use, and the free-capacity tree once built."""
    return plan.nbytes


def roll_time(cluster: Cluster, count: int, rolls: int = 5) -> float:
    """Wall seconds of an hourly roll of a plan holding `count` reservations, each a two-hour lease somewhere in
    the week: the median of `rolls` rolls in a row, hour after hour (one roll alone swings with the memory it is
    handed: 2 to 16 ms where the median is under 1)."""
    plan = Plan(cluster)
    bundle = Resources.of({"vcores": 1.0, "memory": 1024.0})
    hour = 3600 // cluster.step
    template = parse_text("reservation r { atom(b={vcores: 1, memory: 1GiB}, w=2h) }", "roll.rdl")[0]
    for index in range(count):
        start = (index * 37) % (cluster.steps - 4 * hour)
        allocations = [Allocation("main", start, start + 2 * hour, 1, bundle)]
        plan.add(Accepted(replace(template, name=f"r{index}"), cluster.start, allocations))
    times = []
    for hours in range(1, rolls + 1):
        began = time.perf_counter()
        plan.roll(cluster.start + timedelta(hours=hours))
        times.append(time.perf_counter() - began)
    return float(np.median(times))


PARTS = ("compile", "search", "explain", "record")


def admission_parts(cluster: Cluster, reservations: list[Reservation], agent: GreedyAgent) -> dict[str, list[float]]:
    """CPU seconds per admission of each part of a greedy agent's `Planner.submit`, the same steps in the same order:
    compiling the request, the search, the earliest-deadline search of a capacity rejection, and recording an
    acceptance (adding it to the plan, building its decision). A part lists only the admissions that do it."""
    plan = Plan(cluster)
    parts: dict[str, list[float]] = {part: [] for part in PARTS}
    for reservation in reservations:
        began = time.process_time()
        instances = compile_reservation(reservation, plan.now, plan.clock, plan.now_step, plan.resources)
        compiled = time.process_time()
        outcome = agent.place_compiled(plan, reservation, instances)
        searched = time.process_time()
        parts["compile"].append(compiled - began)
        parts["search"].append(searched - compiled)
        if outcome.allocations is None:
            if outcome.reason is None or outcome.reason.code == "capacity":
                earliest_deadline(plan, agent, reservation, plan.now)
            parts["explain"].append(time.process_time() - searched)
        else:
            plan.add(Accepted(reservation, plan.now, list(outcome.allocations)))
            Decision(reservation.name, True, outcome.allocations, extra={"agent": agent.name})
            parts["record"].append(time.process_time() - searched)
    return parts
