"""What a greedy search finds: an atom's leases (`AtomPlacement`), a task's placement (`Solution`, one per atom),
and where the first atom that found no room was looking (`AtomFailure`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.core.compile import AtomTask, GroupTask, Task


@dataclass(frozen=True, slots=True, eq=False)
class AtomPlacement:
    """Where one atom's leases go: `gangs[i]` leases of `task.gang` bundles start at step `starts[i]`.

    Its first start, last end and held bundles are worked out once, when it is made: a candidate is laid on the
    scratch, taken back and compared many times, and each of those asked for them again."""

    task: AtomTask
    starts: np.ndarray
    gangs: np.ndarray
    first_start: int = field(init=False)
    last_end: int = field(init=False)
    _held: tuple[int, np.ndarray] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        starts = self.starts
        if starts.shape[0] == 1:
            first = last = int(starts[0])
        else:
            first, last = int(starts.min()), int(starts.max())
        object.__setattr__(self, "first_start", first)
        object.__setattr__(self, "last_end", last + self.task.length)

    def held(self) -> tuple[int, np.ndarray]:
        """(first step, bundles held at each step from there to the last end)."""
        if self._held is None:
            object.__setattr__(self, "_held", self._count())
        assert self._held is not None
        return self._held

    def _count(self) -> tuple[int, np.ndarray]:
        base = self.first_start
        if self.starts.shape[0] == 1:  # one block: the same held count at every step (what the sums below give)
            return base, np.full(self.task.length, int(self.gangs[0]) * self.task.gang, dtype=np.int64)
        steps = np.zeros(self.last_end - base + 1, dtype=np.int64)
        offsets = self.starts - base
        np.add.at(steps, offsets, self.gangs)
        np.add.at(steps, offsets + self.task.length, -self.gangs)
        return base, np.cumsum(steps[:-1]) * self.task.gang

    def key(self) -> tuple[bytes, bytes]:
        return self.starts.tobytes(), self.gangs.tobytes()


Solution = list[AtomPlacement]


def first_start(solution: Solution) -> int:
    return min(p.first_start for p in solution)


def last_end(solution: Solution) -> int:
    return max(p.last_end for p in solution)


def searched_apart(task: Task) -> bool:
    """Whether no search of the task's pieces reads a step another piece's candidate holds, so that a placer need not
    lay candidates while it searches (`Placer(lays=False)`): an atom, or an `order` of such (the last stage is placed
    first, and each one before it only in the steps before the first of the one after it), or an `all` or `order`
    of one such child."""
    if isinstance(task, AtomTask):
        return True
    if task.kind == "order" or (task.kind == "all" and len(task.children) == 1):
        return all(searched_apart(child) for child in task.children)
    return False


def only_atom(task: Task) -> AtomTask | None:
    """The atom of an `all` of one atom (a YARN request of one gang), searched as that atom: the `all`'s generators
    around it change nothing there and cost more than the atom (a gang's first candidate 28 -> 17 us)."""
    if isinstance(task, GroupTask) and task.kind == "all" and len(task.children) == 1 \
            and isinstance(task.children[0], AtomTask):
        return task.children[0]
    return None


@dataclass(frozen=True, slots=True)
class AtomFailure:
    """Where the first atom that found no room was looking."""

    task: AtomTask
    lo: int
    hi: int
