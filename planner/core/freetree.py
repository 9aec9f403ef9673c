"""Free capacity as a searchable structure: what a decision on a long window reads instead of copying the window.

`FreeTree` holds capacity minus use per resource and step, kept in step with the plan's allocations by `Plan`, and
over it per-block minima and maxima in a segment tree (treekernels.py, compiled by numba). It answers, for one
atom's demand, the least room over a span and the first step from either end whose room is at most or at least a
bound, reading only the blocks that can hold the answer: O(log steps) per block of change instead of O(window).

The allocations stay the source of truth and `Plan.used` stays dense; the tree is derived, built when an agent
first asks for it, and the independent checker never reads it. A search lays its trial placements on the tree's
own free array and takes them back (`trial`), so a decision copies nothing of its window.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

from planner.core import treekernels as kernels

T = TypeVar("T")
ANSWERS_KEPT = 4096  # answers remembered at most: a long run of decisions that write nothing keeps no more than this


def cap(parallelism: int | None) -> int:
    """`parallelism` as the kernels take it."""
    return kernels.NO_CAP if parallelism is None else parallelism


class FreeTree:
    """Capacity not yet promised, per resource and step, with a tree of block minima and maxima over it."""

    def __init__(self, free: np.ndarray):
        self.free = np.ascontiguousarray(free, dtype=np.float64)
        blocks = max(1, -(-self.free.shape[1] // kernels.BLOCK))
        size = 1 << (blocks - 1).bit_length()
        self.mins = np.empty((self.free.shape[0], 2 * size), dtype=np.float64)
        self.maxs = np.empty_like(self.mins)
        kernels.build(self.free, self.mins, self.maxs)
        self._trials: list[list[np.ndarray]] = []  # per open trial, innermost last: the runs of steps written
        self._answers: dict[Hashable, object] = {}  # questions answered since the tree was last written

    @property
    def steps(self) -> int:
        return int(self.free.shape[1])

    @property
    def nbytes(self) -> int:
        return int(self.free.nbytes + self.mins.nbytes + self.maxs.nbytes)

    def copy(self) -> FreeTree:
        twin = FreeTree.__new__(FreeTree)
        twin.free, twin.mins, twin.maxs, twin._trials = self.free.copy(), self.mins.copy(), self.maxs.copy(), []
        twin._answers = {}
        return twin

    def reset(self, capacity: np.ndarray, used: np.ndarray, lo: int, hi: int) -> None:
        """Free over steps [lo, hi) from the plan's capacity and use again (after the use changed there)."""
        lo, hi = max(lo, 0), min(hi, self.steps)
        if lo < hi:
            np.subtract(capacity[:, lo:hi], used[:, lo:hi], out=self.free[:, lo:hi])
            kernels.refresh(self.free, self.mins, self.maxs, lo, hi)
            self._answers.clear()

    def touched(self, lo: int, hi: int, refreshed: bool = False) -> None:
        """Steps [lo, hi) of `free` were written in place (a trial placement laid or taken back); `refreshed`:
        the writer brought the tree up to date itself."""
        lo, hi = max(lo, 0), min(hi, self.steps)
        if lo >= hi:
            return
        if not refreshed:
            kernels.refresh(self.free, self.mins, self.maxs, lo, hi)
        self.written(np.array([[lo, hi]], dtype=np.int64))

    def written(self, runs: np.ndarray) -> None:
        """The runs of steps ([lo, hi) rows) a writer changed in place and refreshed the tree over."""
        if runs.shape[0]:
            self._answers.clear()
            if self._trials:
                self._trials[-1].append(runs)

    def holds_plan(self, lo: int, hi: int) -> bool:
        """Whether steps [lo, hi) hold the plan's own free capacity: no open trial wrote there (a placement laid,
        or laid and taken back, which may leave the last bit of a float changed until the trial ends)."""
        written = [runs for trial in self._trials for runs in trial]
        if not written:
            return True
        joined = np.concatenate(written)
        return not bool(((joined[:, 0] < hi) & (joined[:, 1] > lo)).any())

    @contextmanager
    def trial(self, capacity: np.ndarray, used: np.ndarray) -> Iterator[FreeTree]:
        """Searches inside lay placements on `free`; on leaving, every step they touched is the plan's again.

        The placer takes back what it lays, with the same sums in reverse, so this only makes sure of it
        (and covers a search left open by an error). It resets the runs written, not the span around them."""
        self._trials.append([])
        try:
            yield self
        finally:
            runs = self._trials.pop()
            if runs:
                joined = np.concatenate(runs)
                kernels.reset_runs(self.free, self.mins, self.maxs, capacity, used, joined)
                self.written(joined)  # to the trial around this one, if any

    def answer(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, a question about the tree as it is now, asked once per `key` until the tree is next written
        (the earliest-deadline search's probes ask the same windows again, on a plan none of them changes)."""
        if key not in self._answers:
            if len(self._answers) >= ANSWERS_KEPT:
                self._answers.clear()
            self._answers[key] = compute()
        return self._answers[key]  # type: ignore[return-value]

    def least_room(self, lo: int, hi: int, demand: np.ndarray, gang: int, parallelism: int | None) -> int:
        """The least room (pack.gang_room) over steps [lo, hi)."""
        return int(kernels.least_room(self.free, self.mins, self.maxs, lo, hi, demand, gang, cap(parallelism)))

    def room_summary(self, lo: int, hi: int, demand: np.ndarray, gang: int,
                     parallelism: int | None) -> tuple[int, int]:
        """Over steps [lo, hi) (not empty): the most bundles of `demand` free at one step, and the whole gangs of
        `gang` bundles free summed over the steps (pack.gang_room's counts), a subtree of one room at a time."""
        most, gangs = kernels.room_summary(self.free, self.mins, self.maxs, lo, hi, demand, gang, cap(parallelism))
        return int(most), int(gangs)

    def find(self, lo: int, hi: int, demand: np.ndarray, gang: int, parallelism: int | None, bound: int, *,
             at_least: bool = False, from_right: bool = False) -> int:
        """The first step of [lo, hi) (from the right with `from_right`) whose room is <= `bound`, or >= it with
        `at_least`; -1 if none."""
        return int(kernels.find(self.free, self.mins, self.maxs, lo, hi, demand, gang, cap(parallelism), bound,
                                at_least, from_right))
