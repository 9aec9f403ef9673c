"""Upper bounds on the value a batch can have accepted: how far from optimal a plan is.

- `lp_bound`: the LP relaxation of the acceptance model at the plan step, for comparison
  (it keeps `order`, but is slow on large batches: N=1000/T=1440 not solved in 300 s).
- `volume_bound`: a relaxation every plan satisfies and that stays small: per atom, the
  gang-steps it holds in each slot of `k` plan steps. An atom holds `n * L` gang-steps
  inside its window, at most `h` gangs at a step (so at most `h` times the steps of its
  window a slot covers), and a slot's use of each resource is at most what its steps
  leave free in total; `any` chooses fractions of its children that add up to its
  presence; `order` precedence is dropped. Any plan's (and any LP solution's) held gangs,
  summed per slot, satisfy these rows, so its optimum is an upper bound of accepted
  value. Its parallelism rows hold `h` times the atom's presence (the acceptance model
  bounds held gangs by `h` alone), which makes it as tight as the LP bound or tighter
  where that matters (N=50/T=96: 188.5 against 210.4; N=200/T=288: 922.9 against 923.4;
  N=1000/T=96: 4,787 against 4,785). `k` is the fewest steps that keep it under
  `columns` columns; on slots of 4 it is within 0.1% of itself at the plan step on the
  benchmark's batches, in a tenth of the time.
The LP bound is solved with HiGHS's interior point method without crossover (4-9 s where
dual simplex took 40-83 s); the volume LP with dual simplex (interior point without
crossover ends "unknown" on it). Each is reported only when HiGHS says optimal.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import highspy
import numpy as np
import pulp

from planner.agents.milp.model import Item, build
from planner.core.compile import AtomTask, Task, atoms_of, most_gangs

VOLUME_COLUMNS = 25_000  # a volume LP this large builds and solves in seconds


@dataclass(frozen=True)
class Bound:
    """An upper bound of accepted value (None when its LP was not solved in time) and how it was had."""

    value: float | None
    seconds: float
    kind: str  # "lp" or "volume"
    step: int = 1  # plan steps per slot (the volume bound)


def lp_bound(items: list[Item], free: np.ndarray, capacity: np.ndarray, time_limit: float = 300.0) -> Bound:
    """The acceptance model's LP relaxation at the plan step (building the model is not bounded by `time_limit`)."""
    started = time.perf_counter()
    model = build(items, free, capacity, cost_weight=0.0)
    left = max(1.0, time_limit - (time.perf_counter() - started))
    model.problem.solve(pulp.HiGHS(mip=False, msg=False, timeLimit=left, solver="ipm", run_crossover="off"))
    solved = model.problem.status == pulp.LpStatusOptimal
    value = float(pulp.value(model.problem.objective) or 0.0) if solved else None
    return Bound(value, time.perf_counter() - started, "lp")


def volume_bound(items: list[Item], free: np.ndarray, time_limit: float = 60.0,
                 columns: int = VOLUME_COLUMNS, step: int | None = None) -> Bound:
    """The volume relaxation of deciding `items` against `free` (resources x steps), on slots of `step` plan
    steps (default: the fewest that keep it under `columns` columns)."""
    started = time.perf_counter()
    k = step or volume_step(items, columns)
    lp = _VolumeLp(free, k)
    for item in items:
        accept = lp.column(item.value, 1.0 if item.fixed else 0.0, 1.0)
        for instance in item.instances:
            lp.add(instance.task, accept)
    value = lp.solve(max(0.5, time_limit - (time.perf_counter() - started))) if lp.cost else 0.0  # nothing to accept
    return Bound(value, time.perf_counter() - started, "volume", k)


def volume_step(items: list[Item], columns: int = VOLUME_COLUMNS) -> int:
    """The fewest plan steps per slot that keep the volume LP under `columns` columns (found by bisection: the
    columns shrink, give or take a slot per atom, as slots grow; one slot per atom at the most)."""
    atoms = [atom for item in items for instance in item.instances for atom in atoms_of(instance.task)]
    low, high = 1, max([1, *(atom.hi for atom in atoms)])
    while low < high:
        middle = (low + high) // 2
        if sum(_slots(atom.lo, atom.hi, middle) for atom in atoms) <= columns:
            high = middle
        else:
            low = middle + 1
    return low


def _slots(lo: int, hi: int, k: int) -> int:
    return 0 if hi <= lo else (hi - 1) // k - lo // k + 1


class _VolumeLp:
    """The volume relaxation's columns and rows, gathered as triplets and handed to HiGHS in one go."""

    def __init__(self, free: np.ndarray, k: int):
        self.k = k
        steps = free.shape[1]
        slots = math.ceil(steps / k)
        padded = np.zeros((free.shape[0], slots * k))
        padded[:, :steps] = np.maximum(0.0, free)
        self.room = padded.reshape(free.shape[0], slots, k).sum(axis=2)  # resources x slots
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.entries: tuple[list[int], list[int], list[float]] = ([], [], [])
        self.use: dict[tuple[int, int], list[tuple[int, float]]] = {}  # (resource, slot) -> (column, per unit)

    def column(self, cost: float, lower: float, upper: float) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], lower: float, upper: float) -> None:
        index = len(self.row_lower)
        self.row_lower.append(lower)
        self.row_upper.append(upper)
        rows, cols, values = self.entries
        for column, value in terms:
            rows.append(index)
            cols.append(column)
            values.append(value)

    def add(self, task: Task, presence: int) -> None:
        if isinstance(task, AtomTask):
            self._atom(task, presence)
        elif task.kind == "any":
            choices = [self.column(0.0, 0.0, 1.0) for _ in task.children]
            for child, choice in zip(task.children, choices, strict=True):
                self.add(child, choice)
            self.row([(c, 1.0) for c in choices] + [(presence, -1.0)], 0.0, 0.0)
        else:  # all, order: every child with the parent's presence; order's precedence relaxed away
            for child in task.children:
                self.add(child, presence)

    def _atom(self, atom: AtomTask, presence: int) -> None:
        if atom.hi - atom.lo < atom.length:
            self.row([(presence, 1.0)], 0.0, 0.0)  # no lease fits its window
            return
        total = atom.leases * atom.length  # gang-steps
        most = most_gangs(atom)
        demand = atom.demand * atom.gang
        held = []
        for slot in range(atom.lo // self.k, (atom.hi - 1) // self.k + 1):
            overlap = min(atom.hi, (slot + 1) * self.k) - max(atom.lo, slot * self.k)
            ceiling = most * overlap
            column = self.column(0.0, 0.0, min(ceiling, total))
            if ceiling < total:
                self.row([(column, 1.0), (presence, -float(ceiling))], -math.inf, 0.0)
            for r in np.flatnonzero(demand > 0):
                self.use.setdefault((int(r), slot), []).append((column, float(demand[r])))
            held.append((column, 1.0))
        self.row([*held, (presence, -float(total))], 0.0, 0.0)

    def solve(self, time_limit: float) -> float | None:
        for (r, slot), terms in self.use.items():
            room = float(self.room[r, slot])
            if sum(per * self.upper[column] for column, per in terms) > room + 1e-9:
                self.row(terms, -math.inf, room)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.cost), len(self.row_lower)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = (np.array(x, dtype=np.float64)
                                                     for x in (self.cost, self.lower, self.upper))
        lp.row_lower_, lp.row_upper_ = (np.array(x, dtype=np.float64) for x in (self.row_lower, self.row_upper))
        rows, cols, values = (np.array(x) for x in self.entries)
        order = np.lexsort((rows, cols))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.searchsorted(cols[order], np.arange(lp.num_col_ + 1)).astype(np.int32)
        lp.a_matrix_.index_ = rows[order].astype(np.int32)
        lp.a_matrix_.value_ = values[order].astype(np.float64)
        highs = highspy.Highs()
        for option, value in (("output_flag", False), ("time_limit", float(time_limit)), ("solver", "simplex"),
                              ("threads", 1)):
            highs.setOptionValue(option, value)
        highs.passModel(lp)
        highs.run()
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return float(highs.getInfo().objective_function_value)
