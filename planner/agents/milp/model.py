"""Compile task trees into one MILP (PuLP), and read placements back out of its solution.

Formulation, per atom `a` and feasible lease start `s` (its window folded in by
`planner.core.compile`): an integer `x[a,s]` of gangs starting at `s`; `held[a,t]`, the gangs
held at `t`, is the sum of the starts of the last `L` steps for short leases (no variable
of its own: measured, this halves the LP's size and cuts HiGHS's dual simplex on
N=200/T=288 from 40 s to 12 s), and for leases longer than `DENSE_LEASE` steps a
variable following `held[a,t] = held[a,t-1] + x[a,t] - x[a,t-L]` (sparse, where the sum
would be dense); `h` bounds `held`; the lease count is `n * presence`.
Presence is the accept binary of the reservation, passed down unchanged through
`order`, `all` and windows, and split by one binary per child under `any`. An `order`
boundary is a split step `σ`, kept as monotone binaries `d[t] = [σ >= t]`: the earlier
stage's leases end by `σ`, the later stage's start from `σ`; with a gap, some earlier
lease ends exactly at `σ` and some later lease starts within the gap of it. Capacity
holds per resource and step against what the plan leaves free; a resource's row is left
out where another resource's row at that step implies it (bundles of one shape: memory
in proportion to vcores) or where everything that could run there fits anyway.

Every variable is named after its reservation, instance, RDL label and step, and the
dictionaries here map back from variables to those (the way back to what users wrote).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pulp

from planner.core.compile import AtomTask, GroupTask, Instance, Task, compile_reservation, most_gangs
from planner.core.plan import Accepted, Allocation, Plan

AtomKey = tuple[str, int, str]  # reservation, instance, atom label
Linear: TypeAlias = pulp.LpVariable | pulp.LpAffineExpression
DENSE_LEASE = 8  # leases up to this many steps: `held` is a sum of starts rather than a variable


@dataclass
class Item:
    """One reservation to decide: its instances, its value, and whether it must stay accepted."""

    name: str
    value: float
    instances: list[Instance]
    fixed: bool = False


def fixed_item(plan: Plan, accepted: Accepted) -> Item:
    """An accepted reservation as an item that must stay accepted, compiled against the plan's clock."""
    reservation = accepted.reservation
    instances = compile_reservation(reservation, accepted.submitted, plan.clock, plan.now_step, plan.resources)
    return Item(reservation.name, reservation.value, instances, fixed=True)


@dataclass
class Model:
    """The PuLP problem and the maps back from its variables to reservations, atoms and steps."""

    problem: pulp.LpProblem
    accept: dict[str, pulp.LpVariable] = field(default_factory=dict)
    starts: dict[AtomKey, dict[int, pulp.LpVariable]] = field(default_factory=dict)
    held: dict[AtomKey, dict[int, Linear]] = field(default_factory=dict)
    tasks: dict[AtomKey, AtomTask] = field(default_factory=dict)
    choices: dict[tuple[str, int, str, int], tuple[pulp.LpVariable, list[AtomKey]]] = field(default_factory=dict)
    splits: list[tuple[list[AtomKey], dict[int, pulp.LpVariable]]] = field(default_factory=list)
    usage: dict[int, list[tuple[np.ndarray, Linear, int]]] = field(default_factory=lambda: defaultdict(list))
    value_terms: list[tuple[float, pulp.LpVariable]] = field(default_factory=list)
    cost: pulp.LpAffineExpression | None = None  # the load-weighted cost, unscaled
    cost_slack: float = 0.0  # the cost term never exceeds this: value <= objective + cost_slack


class _Builder:
    """Adds one reservation instance's tasks to the model (a dispatch table per task kind)."""

    def __init__(self, model: Model, reservation: str, instance: int):
        self.model, self.reservation, self.instance = model, reservation, instance
        self.problem = model.problem

    def name(self, *parts: object) -> str:
        text = "_".join(str(p) for p in (self.reservation, self.instance, *parts))
        return "".join(c if c.isalnum() else "_" for c in text)

    def add(self, task: Task, presence: pulp.LpAffineExpression | pulp.LpVariable) -> None:
        kind = "atom" if isinstance(task, AtomTask) else task.kind
        COMPILERS[kind](self, task, presence)


def compile_atom(builder: _Builder, task: AtomTask, presence: pulp.LpAffineExpression) -> None:
    model, key = builder.model, (builder.reservation, builder.instance, task.label)
    starts = range(task.lo, task.hi - task.length + 1)
    if len(starts) == 0:
        builder.problem += (presence == 0, builder.name(task.label, "no_room"))
        return
    most = most_gangs(task)
    prefix = builder.name(task.label)
    x = {s: builder.problem.add_variable(f"{prefix}_x_{s}", 0, most, cat="Integer") for s in starts}
    builder.problem += (pulp.LpAffineExpression([(v, 1) for v in x.values()]) == task.leases * presence,
                        f"{prefix}_leases")
    held = _dense_held(builder, task, x, most) if task.length <= DENSE_LEASE else _flow_held(builder, task, x, most)
    demand = task.demand * task.gang
    for t, expr in held.items():
        model.usage[t].append((demand, expr, most))
    model.starts[key], model.held[key], model.tasks[key] = x, held, task


def _dense_held(builder: _Builder, task: AtomTask, x: dict[int, pulp.LpVariable], most: int) -> dict[int, Linear]:
    """Gangs held at each step as the sum of the last `L` starts; `h` as a row only where one start cannot break it."""
    prefix = builder.name(task.label)
    held: dict[int, Linear] = {}
    for t in range(task.lo, task.hi):
        running = [x[s] for s in range(t - task.length + 1, t + 1) if s in x]
        if len(running) == 1:
            held[t] = running[0]
            continue
        held[t] = pulp.LpAffineExpression([(v, 1) for v in running])
        if most < task.leases:
            builder.problem += (held[t] <= most, f"{prefix}_h_{t}")
    return held


def _flow_held(builder: _Builder, task: AtomTask, x: dict[int, pulp.LpVariable], most: int) -> dict[int, Linear]:
    """Gangs held at each step as a variable that follows the starts and ends (long leases: sparse)."""
    prefix = builder.name(task.label)
    held: dict[int, Linear] = {t: builder.problem.add_variable(f"{prefix}_held_{t}", 0, most)
                               for t in range(task.lo, task.hi)}
    for t, var in held.items():
        flow = [(var, -1)]
        if t - 1 in held:
            flow.append((held[t - 1], 1))
        if t in x:
            flow.append((x[t], 1))
        if t - task.length in x:
            flow.append((x[t - task.length], -1))
        builder.problem += (pulp.LpAffineExpression(flow) == 0, f"{prefix}_flow_{t}")
    return held


def compile_all(builder: _Builder, task: GroupTask, presence: pulp.LpAffineExpression) -> None:
    for child in task.children:
        builder.add(child, presence)


def compile_any(builder: _Builder, task: GroupTask, presence: pulp.LpAffineExpression) -> None:
    choices = []
    for index, child in enumerate(task.children):
        choice = builder.problem.add_variable(builder.name(task.label, "choose", index), cat="Binary")
        builder.add(child, choice)
        builder.model.choices[(builder.reservation, builder.instance, task.label, index)] = (
            choice, _atom_keys(builder, child))
        choices.append(choice)
    builder.problem += (pulp.lpSum(choices) == presence, builder.name(task.label, "one_of"))


def compile_order(builder: _Builder, task: GroupTask, presence: pulp.LpAffineExpression) -> None:
    for child in task.children:
        builder.add(child, presence)
    for index in range(len(task.children) - 1):
        _boundary(builder, task, index, presence)


def _boundary(builder: _Builder, task: GroupTask, index: int, presence: pulp.LpAffineExpression) -> None:
    """Stage `index` ends by the split step σ, stage `index + 1` starts from it (and within the gap)."""
    model, problem = builder.model, builder.problem
    if task.lo > task.hi:  # the order's window holds no step (its stages have no room either): it cannot be placed
        problem += (presence == 0, builder.name(task.label, "no_room", index))
        return
    steps = range(task.lo, task.hi + 1)
    split = {t: builder.problem.add_variable(builder.name(task.label, "split", index, t), cat="Binary") for t in steps}
    problem += (split[task.lo] == presence, builder.name(task.label, "split_on", index))
    for t in steps[:-1]:
        problem += (split[t] >= split[t + 1], builder.name(task.label, "split_down", index, t))
    earlier = [k for k in _atom_keys(builder, task.children[index])]
    later = [k for k in _atom_keys(builder, task.children[index + 1])]
    for key in earlier:
        atom = model.tasks[key]
        most = most_gangs(atom)
        for s, x in model.starts[key].items():
            end = s + atom.length
            problem += (x <= most * split.get(end, 0), builder.name(task.label, key[2], "ends_by", index, s))
    for key in later:
        atom = model.tasks[key]
        for s, x in model.starts[key].items():
            problem += (x <= most_gangs(atom) * (presence - split.get(s + 1, 0)),
                        builder.name(task.label, key[2], "starts_from", index, s))
    if task.gap is not None:
        _gap(builder, task, index, split, earlier, later)
    model.splits.append((earlier, split))


def _gap(builder: _Builder, task: GroupTask, index: int, split: dict[int, pulp.LpVariable],
         earlier: list[AtomKey], later: list[AtomKey]) -> None:
    """With a gap: some earlier lease ends exactly at σ, and some later lease starts within the gap after σ."""
    model, problem = builder.model, builder.problem
    assert task.gap is not None
    for t in split:
        at_split = split[t] - split.get(t + 1, 0)
        ending = [model.starts[k][t - model.tasks[k].length] for k in earlier
                  if t - model.tasks[k].length in model.starts[k]]
        problem += (pulp.lpSum(ending) >= at_split, builder.name(task.label, "ends_at", index, t))
        starting = [model.starts[k][s] for k in later for s in range(t, t + task.gap + 1) if s in model.starts[k]]
        problem += (pulp.lpSum(starting) >= at_split, builder.name(task.label, "starts_within", index, t))


def _atom_keys(builder: _Builder, task: Task) -> list[AtomKey]:
    if isinstance(task, AtomTask):
        key = (builder.reservation, builder.instance, task.label)
        return [key] if key in builder.model.starts else []
    return [k for child in task.children for k in _atom_keys(builder, child)]


COMPILERS: dict[str, Callable[..., None]] = {
    "atom": compile_atom, "all": compile_all, "any": compile_any, "order": compile_order,
}


def build(items: list[Item], free: np.ndarray, capacity: np.ndarray, cost_weight: float) -> Model:
    """The acceptance model: maximise accepted value, then (a little) prefer lightly loaded steps."""
    model = Model(pulp.LpProblem("reservations", pulp.LpMaximize))
    for item in items:
        accept = model.problem.add_variable(_safe(f"accept_{item.name}"), 0, 1, cat="Binary")
        if item.fixed:
            model.problem += (accept == 1, _safe(f"keep_{item.name}"))
        model.accept[item.name] = accept
        model.value_terms.append((item.value, accept))
        for instance in item.instances:
            _Builder(model, item.name, instance.index).add(instance.task, accept)
    _capacity(model, free)
    cost = model.cost = _cost_terms(model, free, capacity)
    values = [v for v, _ in model.value_terms if v > 0] or [1.0]
    scale = cost_weight * min(values) / max(1.0, _cost_ceiling(model, capacity))
    model.cost_slack = scale * max(1.0, _cost_ceiling(model, capacity))
    model.problem += pulp.lpSum(v * a for v, a in model.value_terms) - scale * cost
    return model


def _capacity(model: Model, free: np.ndarray) -> None:
    for t, uses in model.usage.items():
        demands = np.array([demand for demand, _, _ in uses])  # terms x resources
        most = np.array([bound for _, _, bound in uses], dtype=np.float64)
        room = np.maximum(0.0, free[:, t])
        for r in needed_rows(demands, most, room):
            terms = [(float(demand[r]), expr) for demand, expr, _ in uses if demand[r] > 0]
            model.problem += (weighted_sum(terms) <= float(room[r]), f"cap_{r}_{t}")


def needed_rows(demands: np.ndarray, most: np.ndarray, room: np.ndarray) -> list[int]:
    """Resources whose capacity row at a step can bind: not when all that could run fits, nor when a kept row
    implies it (every term takes no larger a share of this resource's room than of that one's)."""
    rows = [r for r in range(room.shape[0])
            if (demands[:, r] > 0).any() and float(demands[:, r] @ most) > room[r] + 1e-9]
    kept = list(rows)
    for r in rows:
        if any(o != r and room[o] > 0 and bool(np.all(demands[:, r] * room[o] <= demands[:, o] * room[r] + 1e-9))
               for o in kept):
            kept.remove(r)
    return kept


def weighted_sum(terms: list[tuple[float, Linear]]) -> pulp.LpAffineExpression:
    """`sum(c * e)` over variables and expressions, accumulated in one dict (PuLP's operators copy at each step)."""
    total: dict[pulp.LpVariable, float] = defaultdict(float)
    for coefficient, expr in terms:
        if isinstance(expr, pulp.LpVariable):
            total[expr] += coefficient
        else:
            for var, c in expr.items():
                total[var] += coefficient * c
    return pulp.LpAffineExpression(list(total.items()))


def _cost_terms(model: Model, free: np.ndarray, capacity: np.ndarray) -> pulp.LpAffineExpression:
    """Each bundle-step costs its share of capacity times (1 + how loaded the step already is)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(capacity > 0, 1.0 - free / capacity, 1.0)
        share = np.where(capacity > 0, 1.0 / capacity, 0.0)
    terms = []
    for t, uses in model.usage.items():
        weight = share[:, t] * (1.0 + load[:, t])
        for demand, expr, _ in uses:
            terms.append((float(demand @ weight), expr))
    return weighted_sum([(c, e) for c, e in terms if c])


def _cost_ceiling(model: Model, capacity: np.ndarray) -> float:
    """An upper bound of the cost term: every resource full at every step the model touches."""
    return 2.0 * capacity.shape[0] * max(1, len(model.usage))


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


def smoothness(model: Model) -> pulp.LpAffineExpression:
    """Total change of every atom's held gangs from step to step (fewer changes, fewer preemptions)."""
    terms = []
    for key, held in model.held.items():
        steps = sorted(held)
        for before, after in itertools.pairwise(steps):
            change = model.problem.add_variable(_safe(f"change_{key[0]}_{key[1]}_{key[2]}_{after}"), 0)
            model.problem += (change >= held[after] - held[before], _safe(f"up_{key}_{after}"))
            model.problem += (change >= held[before] - held[after], _safe(f"down_{key}_{after}"))
            terms.append(change)
    return pulp.lpSum(terms)


# -- to and from the solver ------------------------------------------------------------------


def warm_start(model: Model, placed: dict[str, list[Allocation]]) -> None:
    """Set every variable to the incumbent plan's values (what the backends start from)."""
    for variable in model.problem.variables():
        variable.setInitialValue(0)
    gangs: dict[tuple[str, int, str, int], int] = {}
    for name, allocations in placed.items():
        for a in allocations:
            lease = (name, a.instance, a.atom, a.start)
            task = model.tasks.get((name, a.instance, a.atom))
            if task is not None:
                gangs[lease] = gangs.get(lease, 0) + a.bundles // task.gang
    for name, var in model.accept.items():
        var.setInitialValue(1 if name in placed else 0)
    for key, starts in model.starts.items():
        running = 0
        task = model.tasks[key]
        for s, x in starts.items():
            x.setInitialValue(gangs.get((*key, s), 0))
        for t, held in model.held[key].items():
            running += gangs.get((*key, t), 0) - gangs.get((*key, t - task.length), 0)
            if isinstance(held, pulp.LpVariable):  # short leases hold a sum of starts, set above
                held.setInitialValue(running)
    _warm_choices(model, gangs)
    _warm_splits(model, gangs)


def _warm_choices(model: Model, gangs: dict[tuple[str, int, str, int], int]) -> None:
    """An `any` child is chosen when some atom under it holds leases."""
    used = {(k[0], k[1], k[2]) for k, v in gangs.items() if v}
    for choice, keys in model.choices.values():
        choice.setInitialValue(1 if any(k in used for k in keys) else 0)


def _warm_splits(model: Model, gangs: dict[tuple[str, int, str, int], int]) -> None:
    """An order's split sits where its earlier stage's last lease ends."""
    last_end: dict[tuple[str, int, str], int] = {}
    for (name, instance, label, start), count in gangs.items():
        key = (name, instance, label)
        if count and key in model.tasks:
            last_end[key] = max(last_end.get(key, 0), start + model.tasks[key].length)
    for earlier, split in model.splits:
        ends = [last_end[k] for k in earlier if k in last_end]
        sigma = max(ends) if ends else None
        for t, var in split.items():
            var.setInitialValue(1 if sigma is not None and t <= sigma else 0)


def read_back(model: Model, accepted: set[str]) -> dict[str, list[Allocation]]:
    """Allocations from the solver's values: one per atom, instance and start with gangs > 0."""
    placed: dict[str, list[Allocation]] = {name: [] for name in accepted}
    for (name, instance, label), starts in model.starts.items():
        if name not in accepted:
            continue
        task = model.tasks[(name, instance, label)]
        for s, x in starts.items():
            count = round(x.varValue or 0)
            if count > 0:
                placed[name].append(Allocation(label, s, s + task.length, count * task.gang, task.atom.bundle,
                                               instance))
    return {name: sorted(a, key=lambda x: (x.instance, x.start, x.atom)) for name, a in placed.items()}
