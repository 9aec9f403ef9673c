"""A brute-force oracle for tiny instances: every valid placement, enumerated from rdl.md's semantics alone.

Shares no code with the planner: an instance is described here (one resource, one-minute
steps), printed as RDL for the planner, and enumerated directly for the oracle.

Semantics enumerated (rdl.md):
- atom: ceil(w / (g*l)) leases of g bundles held for exactly l steps, each inside the atom's
  window; at every step at most h bundles of the atom are held;
- order: child i+1's first lease starts at or after child i's last lease ends, and with a gap
  no more than `gap` steps after it;
- all: every child placed; any: exactly one child placed;
- windows intersect; and the use of every step stays within the free capacity.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.planner.support import at

Span = tuple[int, int, tuple[int, ...]]  # first start, last end, use per step
Leases = list[tuple[str, int, int]]  # (atom, start, bundles)
Placed = tuple[Leases, int, int, tuple[int, ...]]  # leases, first start, last end, use per step


@dataclass(frozen=True)
class AtomSpec:
    name: str
    b: int  # vcores per bundle
    g: int
    h: int | None
    length: int  # lease length l, in steps (= minutes)
    w: int  # work, bundle-minutes
    window: tuple[int, int] | None = None

    @property
    def leases(self) -> int:
        return math.ceil(self.w / (self.g * self.length))

    def text(self) -> str:
        h = f", h={self.h}" if self.h is not None else ""
        atom = f"atom(b={{vcores: {self.b}}}, g={self.g}{h}, l={self.length}m, w={self.w}m)"
        if self.window is None:
            return f"{self.name}: {atom}"
        return f"{self.name}: window(s={at(self.window[0])}, e={at(self.window[1])}, {atom})"


@dataclass(frozen=True)
class GroupSpec:
    kind: str  # order | all | any
    children: tuple[Node, ...]
    gap: int | None = None  # steps; order only

    def text(self) -> str:
        inner = ", ".join(child.text() for child in self.children)
        gap = f", gap={self.gap}m" if self.gap is not None else ""
        return f"{self.kind}({inner}{gap})"


Node = AtomSpec | GroupSpec


@dataclass(frozen=True)
class Blocker:
    start: int
    length: int
    bundles: int

    def text(self, name: str) -> str:
        return (f"reservation {name} {{ window(s={at(self.start)}, e={at(self.start + self.length)}, "
                f"atom(b={{vcores: 1}}, g={self.bundles}, h={self.bundles}, l={self.length}m, "
                f"w={self.bundles * self.length}m)) }}")


@dataclass(frozen=True)
class Instance:
    steps: int
    capacity: int
    changes: tuple[tuple[int, int], ...]  # (step, new vcores)
    blockers: tuple[Blocker, ...]
    body: Node
    window: tuple[int, int] | None = None  # an outer window around the body
    deadline: int | None = None  # `deadline=+Nm` header
    label: str = field(default="", compare=False)

    def capacity_profile(self) -> list[int]:
        profile = [self.capacity] * self.steps
        for step, value in sorted(self.changes):
            for t in range(step, self.steps):
                profile[t] = value
        return profile

    def cluster_args(self) -> tuple[dict[str, int], int, list[tuple[int, dict[str, int]]]]:
        return {"vcores": self.capacity}, self.steps, [(s, {"vcores": v}) for s, v in self.changes]

    def reservation_text(self, name: str = "r") -> str:
        body = self.body.text()
        if self.window is not None:
            body = f"window(s={at(self.window[0])}, e={at(self.window[1])}, {body})"
        header = f" deadline=+{self.deadline}m" if self.deadline is not None else ""
        return f"reservation {name}{header} {{ {body} }}"

    def bounds(self) -> tuple[int, int]:
        lo, hi = 0, self.steps
        if self.window is not None:
            lo, hi = max(lo, self.window[0]), min(hi, self.window[1])
        if self.deadline is not None:
            hi = min(hi, self.deadline)
        return lo, hi

    def describe(self) -> str:
        blockers = "\n".join(b.text(f"blocker{i}") for i, b in enumerate(self.blockers))
        return (f"capacity vcores={self.capacity} steps={self.steps} changes={list(self.changes)}\n"
                f"{blockers}\n{self.reservation_text()}")


# -- the oracle ------------------------------------------------------------------------------------


def _fits(use: tuple[int, ...], free: list[int]) -> bool:
    return all(u <= f for u, f in zip(use, free, strict=True))


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def atom_spans(atom: AtomSpec, bounds: tuple[int, int], free: list[int]) -> set[Span]:
    lo, hi = bounds
    if atom.window is not None:
        lo, hi = max(lo, atom.window[0]), min(hi, atom.window[1])
    starts = range(lo, hi - atom.length + 1)
    found: set[Span] = set()
    for chosen in itertools.combinations_with_replacement(starts, atom.leases):
        held = [0] * len(free)
        for start in chosen:
            for t in range(start, start + atom.length):
                held[t] += atom.g
        if atom.h is not None and max(held) > atom.h:
            continue
        use = tuple(x * atom.b for x in held)
        if _fits(use, free):
            found.add((min(chosen), max(chosen) + atom.length, use))
    return found


def spans(node: Node, bounds: tuple[int, int], free: list[int]) -> set[Span]:
    """Every (first start, last end, use) of a valid placement of the node inside bounds on `free`."""
    if isinstance(node, AtomSpec):
        return atom_spans(node, bounds, free)
    children = [spans(child, bounds, free) for child in node.children]
    if node.kind == "any":
        return set().union(*children)
    combined = children[0]
    for child in children[1:]:
        step: set[Span] = set()
        for first, end, use in combined:
            for c_first, c_end, c_use in child:
                if node.kind == "order" and (c_first < end or (node.gap is not None and c_first - end > node.gap)):
                    continue
                total = _add(use, c_use)
                if _fits(total, free):
                    step.add((min(first, c_first), max(end, c_end), total))
        combined = step
    return combined


def feasible(instance: Instance, free: list[int]) -> bool:
    """Whether any valid placement of the reservation exists on `free` (vcores per step)."""
    return bool(spans(instance.body, instance.bounds(), free))


def witness(instance: Instance, free: list[int]) -> Leases | None:
    """One valid placement as (atom name, lease start, bundles), for reports; None when there is none."""
    for leases, _, _, _ in _raw(instance.body, instance.bounds(), free):
        return sorted(leases)
    return None


def _raw(node: Node, bounds: tuple[int, int], free: list[int]) -> Iterable[Placed]:
    if isinstance(node, AtomSpec):
        lo, hi = bounds
        if node.window is not None:
            lo, hi = max(lo, node.window[0]), min(hi, node.window[1])
        for chosen in itertools.combinations_with_replacement(range(lo, hi - node.length + 1), node.leases):
            held = [0] * len(free)
            for start in chosen:
                for t in range(start, start + node.length):
                    held[t] += node.g
            if node.h is not None and max(held) > node.h:
                continue
            use = tuple(x * node.b for x in held)
            if _fits(use, free):
                yield [(node.name, s, node.g) for s in chosen], min(chosen), max(chosen) + node.length, use
        return
    if node.kind == "any":
        for child in node.children:
            yield from _raw(child, bounds, free)
        return

    def rest(index: int, use: tuple[int, ...], first: int, end: int, leases: Leases) -> Iterable[Placed]:
        if index == len(node.children):
            yield leases, first, end, use
            return
        for c_leases, c_first, c_end, c_use in _raw(node.children[index], bounds, free):
            if node.kind == "order" and index > 0 and (
                    c_first < end or (node.gap is not None and c_first - end > node.gap)):
                continue
            total = _add(use, c_use)
            if _fits(total, free):
                yield from rest(index + 1, total, min(first, c_first), max(end, c_end), leases + c_leases)

    yield from rest(0, (0,) * len(free), 10**9, -1, [])


# -- random tiny instances ---------------------------------------------------------------------------


def random_atom(rng: random.Random, name: str, steps: int, capacity: int) -> AtomSpec:
    b = rng.choice([1, 1, 1, 2]) if capacity >= 2 else 1
    g = rng.randint(1, max(1, capacity // b))
    h = rng.choice([None, None, g, g + 1, 2 * g])
    length = rng.choice([1, 1, 1, 2, 2, 3])
    leases = rng.choice([1, 1, 2, 2, 3])
    w = leases * g * length - rng.randrange(g * length)  # anywhere in ((leases-1)·g·l, leases·g·l]
    window = None
    if rng.random() < 0.25:
        lo = rng.randrange(steps - length + 1)
        window = (lo, rng.randint(lo + length, steps))
    return AtomSpec(name, b, g, h, length, w, window)


def random_body(rng: random.Random, steps: int, capacity: int) -> Node:
    count = rng.choice([1, 2, 2, 3, 3])
    atoms = [random_atom(rng, f"a{i}", steps, capacity) for i in range(count)]
    if count == 1:
        return atoms[0]
    kind = rng.choice(["order", "order", "all", "any"])
    gap = rng.choice([None, None, 0, 1, 2]) if kind == "order" else None
    if count == 3 and rng.random() < 0.4:  # one level of nesting: kind(a0, inner(a1, a2))
        inner_kind = rng.choice(["order", "all", "any"])
        inner_gap = rng.choice([None, 0, 1]) if inner_kind == "order" else None
        return GroupSpec(kind, (atoms[0], GroupSpec(inner_kind, tuple(atoms[1:]), inner_gap)), gap)
    return GroupSpec(kind, tuple(atoms), gap)


def random_instance(rng: random.Random) -> Instance:
    steps = rng.randint(4, 8)
    capacity = rng.randint(1, 4)
    changes: tuple[tuple[int, int], ...] = ()
    if rng.random() < 0.2:
        changes = ((rng.randrange(1, steps), rng.randint(1, 4)),)
    blockers = []
    for _ in range(rng.choice([0, 1, 1, 2, 2])):
        start = rng.randrange(steps)
        length = rng.randint(1, steps - start)
        blockers.append(Blocker(start, length, rng.randint(1, capacity)))
    body = random_body(rng, steps, capacity)
    window = deadline = None
    roll = rng.random()
    if roll < 0.25:
        lo = rng.randrange(steps // 2)
        window = (lo, rng.randint(lo + 2, steps))
    elif roll < 0.4:
        deadline = rng.randint(steps // 2, steps)
    return Instance(steps, capacity, changes, tuple(blockers), body, window, deadline)
