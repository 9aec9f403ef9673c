"""The service's clock: `rayon serve --clock wall` keeps the plan's clock on the wall clock, with no request needed.

At start and then at every step boundary it advances the stored plan to the last step boundary at or before
the wall clock (the store expires what has ended and rolls the horizon: planner/store/facade.py), so a server
stopped for a while catches up at once when it starts again. `--clock manual` leaves the clock to
`rayon advance` (tests, what-if plans); `--clock fast:N` runs a wall clock N times faster than real time from
the plan's clock at start, so that days pass in minutes (demos and soak tests).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from planner.store.errors import StoreError
from planner.store.facade import Store
from planner.store.records import AdvanceReport
from rdl import units
from rdl.shape import step_floor

log = logging.getLogger("rayon.clock")

ACTOR = "clock"  # the log's actor for the service's own advances
LONGEST_SLEEP = 60.0  # wall seconds between checks at most, whatever the step


@dataclass(frozen=True)
class ClockMode:
    """How the service's plan clock moves: `manual`, `wall`, or `fast` (`rate` plan seconds per wall second)."""

    kind: str
    rate: float = 1.0

    @classmethod
    def parse(cls, text: str) -> ClockMode:
        """`manual`, `wall`, or `fast:N` with N a number above 0; a ValueError saying which otherwise."""
        if text in ("manual", "wall"):
            return cls(text)
        if text.startswith("fast:"):
            try:
                rate = float(text.removeprefix("fast:"))
            except ValueError:
                rate = 0.0
            if 0 < rate <= 1e6:
                return cls("fast", rate)
        raise ValueError(f"`{text}` is not a clock: give `wall`, `manual` or `fast:N` (N times real time, "
                         "at most 1000000)")


class WallClock:
    """Advances the stored plan to the wall clock (or a faster one) in a thread, until stopped."""

    def __init__(self, store: Store, mode: ClockMode, wall: Callable[[], datetime] = lambda: datetime.now(UTC),
                 on_advance: Callable[[AdvanceReport], object] = lambda _report: None,
                 on_tick: Sequence[Callable[[], object]] = ()):
        self.store, self.mode, self._wall, self._on_advance = store, mode, wall, on_advance
        self._on_tick = tuple(on_tick)  # after every tick, the clock moved or not (a manual clock ticks too)
        self._kept: bool | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._epoch: tuple[datetime, datetime] | None = None  # (wall, plan) at start, for a fast clock
        self.stuck: str | None = None  # why the last advance failed (readiness says so); None once one succeeds

    def now(self) -> datetime:
        """The time the plan's clock should show now."""
        wall = self._wall()
        if self.mode.kind != "fast":
            return wall
        if self._epoch is None:
            self._epoch = (wall, self.store.now())
        started, plan = self._epoch
        return plan + (wall - started) * self.mode.rate

    def tick(self) -> AdvanceReport | None:
        """Advance the plan to the last step boundary at or before `now()`, if the plan's clock is behind it
        (never with a manual clock)."""
        if self.mode.kind == "manual" or not self.keeping():
            return None
        cluster, current = self.store.cluster(), self.store.now()
        target = cluster.start + timedelta(seconds=step_floor(cluster.start, self.now(), cluster.step) * cluster.step)
        if target <= current:
            return None
        report = self.store.advance(target, actor=ACTOR)
        self._on_advance(report)
        # INFO only when the step changed something (a quiet server logs no line per plan step); DEBUG otherwise.
        eventful = report.expired or report.placed or report.missed
        log.log(logging.INFO if eventful else logging.DEBUG, "clock %s -> %s: %d expired, %d series instances "
                "placed, %d missed", units.format_instant(report.previous), units.format_instant(report.now),
                len(report.expired), len(report.placed), len(report.missed))
        return report

    def keeping(self) -> bool:
        """Whether this server keeps the plan's clock now (saying so when that changes)."""
        keeps = self.store.keeps_clock()
        if keeps != self._kept:
            if self.mode.kind == "manual":  # nothing moves the clock but `rayon advance`: it is not this server's
                log.info("this server %s each step's work (the plan's clock is manual: `rayon advance` moves it)",
                         "does" if keeps else "does not do")
            else:
                log.info("this server %s the plan's clock", "keeps" if keeps else "does not keep")
            self._kept = keeps
        return keeps

    def seconds_to_next_step(self) -> float:
        """Wall seconds until the plan's next step boundary (at most LONGEST_SLEEP)."""
        cluster, now = self.store.cluster(), self.now()
        following = cluster.start + timedelta(seconds=(step_floor(cluster.start, now, cluster.step) + 1)
                                              * cluster.step)
        return min(LONGEST_SLEEP, max(0.01, (following - now).total_seconds() / self.mode.rate))

    def start(self) -> None:
        """Catch up at once, then keep the clock moving in a daemon thread (a manual clock needs one only to run
        `on_tick` every step)."""
        if self.mode.kind == "manual" and not self._on_tick:
            return
        self._advance()  # before the first request is served: no decision is made on a stale clock
        self._thread = threading.Thread(target=self._run, name="rayon-clock", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        self._work()  # the work of the first tick, off the server's start (it may take a while)
        while not self._stop.wait(self._pause()):
            self._advance()
            self._work()

    def _pause(self) -> float:
        try:
            return self.seconds_to_next_step()
        except (StoreError, OSError) as exc:
            log.warning("clock: cannot read the plan (%s); trying again in %ss", exc, LONGEST_SLEEP)
            return LONGEST_SLEEP

    def _advance(self) -> None:
        try:
            self.tick()
        except (StoreError, OSError) as exc:  # the store is away for now: the next tick catches up
            log.warning("clock: the plan could not be advanced (%s)", exc)
            self.stuck = str(exc)
        except Exception as exc:  # a bug must not end the clock's thread unseen: readiness reports it, ticks retry
            log.exception("clock: the plan could not be advanced")
            self.stuck = f"{type(exc).__name__}: {exc}"
        else:
            self.stuck = None

    def _work(self) -> None:
        """The work after a tick (the follower's round, scheduled replans): the keeper's alone, as the clock is."""
        try:
            if not self.keeping():
                return
        except (StoreError, OSError) as exc:
            log.warning("clock: cannot tell whether this server keeps the clock (%s)", exc)
            return
        for work in self._on_tick:
            try:
                work()
            except Exception:  # one tick's failure must not stop the clock; the next tick tries again
                log.exception("clock: the work after a tick failed")
