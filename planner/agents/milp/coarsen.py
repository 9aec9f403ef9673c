"""Time coarsening for the MILP: the batch on slots of `k` plan steps, and the way back to the plan step.

A coarse plan always maps to a feasible plan at the plan step:
- a slot's free capacity is the least free capacity of its steps, and windows shrink
  inward to whole slots;
- a lease of `L <= k` steps becomes a *lane*: one gang held for the whole slot, which runs
  `q = k // L` leases back to back from the slot's start. An atom of `n` leases needs
  `ceil(n / q)` lanes; its last lane runs what is left (at least one lease). A lease of
  `L > k` steps holds `ceil(L / k)` slots and starts at its first slot's start;
- an `order` gap shrinks to `floor((gap - (k - 1)) / k)` slots, since the earlier stage's
  last lease may end up to `k - 1` steps before its slot boundary; an order whose gap is
  under `k - 1` steps cannot be held, and its reservation is left to the greedy repair.
Use at any plan step is then at most the coarse use of its slot, so capacity and `h` hold;
leases start within their slot's span, so windows and `order` hold.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from planner.agents.greedy.agent import to_allocations
from planner.agents.greedy.placer import Placer
from planner.agents.greedy.solution import Solution
from planner.agents.milp.model import AtomKey, Item
from planner.core.compile import AtomTask, GroupTask, Instance, Task, atoms_of
from planner.core.plan import Allocation

MAX_STEP = 60  # never coarser than this many plan steps per slot


@dataclass(frozen=True, slots=True)
class Coarse:
    """The batch on slots of `k` steps: the items the coarse model can hold, and the names it cannot."""

    k: int
    items: list[Item]
    left_out: list[str]
    atoms: dict[AtomKey, AtomTask]  # the fine atom of every coarse one


def lanes_per_slot(length: int, k: int) -> int:
    """Leases one lane runs back to back in a slot (1 for leases longer than a slot)."""
    return max(1, k // length)


def coarse_task(task: Task, k: int) -> Task | None:
    """The task on slots of `k` steps, or None when the coarse model cannot hold it (a gap under `k - 1`)."""
    lo, hi = math.ceil(task.lo / k), task.hi // k
    if isinstance(task, AtomTask):
        q = lanes_per_slot(task.length, k)
        return replace(task, length=math.ceil(task.length / k), leases=math.ceil(task.leases / q), lo=lo,
                       hi=max(lo, hi))
    children = [coarse_task(child, k) for child in task.children]
    if any(child is None for child in children):
        return None
    gap = task.gap
    if gap is not None:
        if gap < k - 1:
            return None
        gap = (gap - (k - 1)) // k
    return GroupTask(task.kind, task.label, tuple(c for c in children if c is not None), lo, max(lo, hi), gap)


def coarsen(items: list[Item], k: int) -> Coarse:
    """Every item on slots of `k` steps (those the coarse model cannot hold are named in `left_out`)."""
    held: list[Item] = []
    left_out: list[str] = []
    atoms: dict[AtomKey, AtomTask] = {}
    for item in items:
        tasks = [coarse_task(instance.task, k) for instance in item.instances]
        if any(task is None for task in tasks):
            left_out.append(item.name)
            continue
        instances = [replace(i, task=t) for i, t in zip(item.instances, tasks, strict=True) if t is not None]
        held.append(replace(item, instances=instances))
        for instance in item.instances:
            for atom in atoms_of(instance.task):
                atoms[(item.name, instance.index, atom.label)] = atom
    return Coarse(k, held, left_out, atoms)


def coarse_free(free: np.ndarray, k: int) -> np.ndarray:
    """Free capacity per resource and slot: the least of the slot's steps (a trailing part slot is dropped)."""
    slots = free.shape[1] // k
    return free[:, :slots * k].reshape(free.shape[0], slots, k).min(axis=2)


def refine(coarse: Coarse, placed: dict[str, list[Allocation]]) -> dict[str, list[Allocation]]:
    """Coarse allocations as allocations at the plan step (lanes unrolled, the last lane cut to what is left)."""
    fine: dict[str, list[Allocation]] = {}
    for name, allocations in placed.items():
        lanes: dict[tuple[int, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for a in allocations:
            atom = coarse.atoms[(name, a.instance, a.atom)]
            lanes[(a.instance, a.atom)][a.start] += a.bundles // atom.gang
        out = [allocation for (instance, label), by_slot in lanes.items()
               for allocation in _unroll(coarse.atoms[(name, instance, label)], instance, by_slot, coarse.k)]
        fine[name] = sorted(out, key=lambda x: (x.instance, x.start, x.atom))
    return fine


def _unroll(atom: AtomTask, instance: int, by_slot: dict[int, int], k: int) -> Iterator[Allocation]:
    q = lanes_per_slot(atom.length, k)
    excess = sum(by_slot.values()) * q - atom.leases  # 0 <= excess < q: the model asks for the fewest lanes
    last = max(by_slot)
    for slot, lanes in sorted(by_slot.items()):
        for j in range(q if atom.length <= k else 1):
            count = lanes - (1 if slot == last and j >= q - excess else 0)
            if count > 0:
                start = slot * k + j * atom.length
                yield Allocation(atom.label, start, start + atom.length, count * atom.gang, atom.atom.bundle, instance)


def choose_step(items: list[Item], budget: int, steps: int) -> int:
    """The slot length: the fewest plan steps that keep the model's lease starts within `budget`, then (up to
    twice that) the one that wastes least capacity in lanes and rounded-up leases."""
    atoms = [atom for item in items for instance in item.instances for atom in atoms_of(instance.task)]
    least = max(1, math.ceil(lease_starts(items) / max(1, budget)))
    if least == 1:
        return 1
    top = min(max(least, 2 * least), MAX_STEP, max(1, steps // 4))
    candidates = range(min(least, top), top + 1)
    return min(candidates, key=lambda k: (_waste(atoms, k), k))


def atom_count(items: list[Item]) -> int:
    """Atoms to place, every instance counted."""
    return sum(1 for item in items for instance in item.instances for _ in atoms_of(instance.task))


def lease_starts(items: list[Item]) -> int:
    """Lease-start variables the model of these items has at the plan step (what its size grows with)."""
    return sum(max(0, atom.hi - atom.lo - atom.length + 1)
               for item in items for instance in item.instances for atom in atoms_of(instance.task))


def _waste(atoms: list[AtomTask], k: int) -> float:
    """Bundle-steps held but not used, over all atoms, on slots of `k` steps."""
    total = 0.0
    for atom in atoms:
        q = lanes_per_slot(atom.length, k)
        held = math.ceil(atom.leases / q) * (k if atom.length <= k else math.ceil(atom.length / k) * k)
        total += (held - atom.leases * atom.length) * atom.gang * float(atom.demand.sum())
    return total


# -- a greedy start for the coarse model ------------------------------------------------------------------------


def coarse_greedy(items: list[Item], free: np.ndarray, capacity: np.ndarray) -> dict[str, list[Allocation]]:
    """The better of GREE and GREE-L on the coarse grid, most valuable first: the coarse model's warm start."""
    best: tuple[float, dict[str, list[Allocation]]] = (-1.0, {})
    ordered = sorted(items, key=lambda item: -item.value)
    for flat in (False, True):
        scratch = free.copy()
        placed: dict[str, list[Allocation]] = {}
        for item in ordered:
            found = _place_item(scratch, capacity, flat, item.instances)
            if found is not None:
                placed[item.name] = found
        value = sum(item.value for item in items if item.name in placed)
        if value > best[0]:
            best = (value, placed)
    return best[1]


def _place_item(free: np.ndarray, capacity: np.ndarray, flat: bool,
                instances: list[Instance]) -> list[Allocation] | None:
    """Every instance placed on `free` (which keeps their use), or None and `free` as it was."""
    placer = Placer(free.copy(), capacity, flat)
    searches: list[Iterator[Solution]] = []  # open searches keep their placements applied
    placed: list[tuple[Instance, Solution]] = []
    for instance in instances:
        placer.begin(16)
        search = placer.search(instance.task, instance.task.lo, instance.task.hi,
                               (instance.task.lo, instance.task.hi))
        solution: Solution | None = next(search, None)
        if solution is None:
            return None
        searches.append(search)
        placed.append((instance, solution))
    free[:] = placer.free
    return to_allocations(placed)
