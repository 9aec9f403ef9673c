"""Progress of the evaluation grid: run i of N, the time elapsed, and an estimate of the time left.

The estimate prices each run still to come at the mean wall time of the finished runs most like
it (the same cell at other seeds, else the same scenario and agent or policy, else every run so
far), and divides the sum by the workers: the seeds of one cell cost about the same, and a MILP
run on a week-long trace costs a hundred times a greedy one on a synthetic mix.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol


class GridRun(Protocol):
    """What the clock needs of a run: which scenario, comparing which agent or policy, at which slack."""

    @property
    def label(self) -> str: ...

    @property
    def option(self) -> str: ...

    @property
    def slack(self) -> float | None: ...

    @property
    def load(self) -> float | None: ...


Key = tuple[Hashable, ...]


def _likeness(run: GridRun) -> tuple[Key, Key, Key]:
    """The keys under which a run's wall time predicts another's, the most alike first."""
    return ((run.label, run.option, run.slack), (run.label, run.option), ())


def duration(seconds: float) -> str:
    """`1h02m`, `4m05s` or `12s`: a wall time a person reads at a glance."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class GridClock:
    """Counts the finished runs of a grid and estimates, from their wall times, how long the rest will take."""

    def __init__(self, runs: Sequence[GridRun], workers: int, clock: Callable[[], float] = time.monotonic):
        self.total = len(runs)
        self.workers = max(1, workers)
        self.pending: Counter[Key] = Counter(_likeness(run)[0] for run in runs)
        self.walls: dict[Key, list[float]] = defaultdict(list)
        self.done = 0
        self.clock = clock
        self.began = clock()

    def finished(self, run: GridRun, wall: float) -> None:
        """Record that `run` finished after `wall` seconds of its own."""
        self.done += 1
        self.pending[_likeness(run)[0]] -= 1
        for key in _likeness(run):
            self.walls[key].append(wall)

    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return self.clock() - self.began

    def left(self) -> float | None:
        """Estimated seconds until the last run finishes (None before any run has finished)."""
        if not self.walls[()]:
            return None
        work = sum(count * self._price(cell) for cell, count in self.pending.items() if count > 0)
        return work / self.workers

    def _price(self, cell: Key) -> float:
        for key in (cell, cell[:2], ()):
            if self.walls.get(key):
                return statistics.fmean(self.walls[key])
        return 0.0  # unreachable once one run finished: the () key then holds every wall time

    def line(self, run: GridRun, wall: float, seed: int | None = None) -> str:
        """`[i/N] scenario option slack (or load) seed: wall; elapsed, about T left` for the run that just finished."""
        slack = "" if run.slack is None else f" slack {run.slack:g}"
        slack += "" if run.load is None else f" load {run.load:g}"
        seeded = "" if seed is None else f" seed {seed}"
        left = self.left()
        estimate = "" if left is None or self.done == self.total else f", about {duration(left)} left"
        return (f"[{self.done}/{self.total}] {run.label} {run.option}{slack}{seeded}: {wall:.1f} s"
                f" (elapsed {duration(self.elapsed())}{estimate})")
