"""`stateaware`: YuniKorn's StateAwarePolicy, a drip feed of one starting application at a time.

From the YuniKorn 1.3 design "Batch Workloads Ordering with StateAware Policy" and the sorting
policies page: the filter passes every Running application, at most one Starting application, and
one Accepted application (the oldest) only when no application is Starting; of those it keeps the
ones with pending asks and sorts them by submission time (ties by id). A Starting application
blocks Accepted ones even when it asks for nothing. The state machine itself (Starting → Running on
the second allocation or after the starting timeout, or at once with the
`application.stateaware.disable` tag) lives in the scheduler, since the states serve every policy.
"""

from __future__ import annotations

from typing import Any

from follower.scheduler.applications import Application, AppState
from follower.scheduler.policies.base import LeafQueue, Ordering, PolicyContext, schedulable
from follower.scheduler.ranking import Ranked


class StateAware(Ordering):
    """Running applications by submission, plus one Starting, or else the oldest Accepted."""

    name = "stateaware"

    def __init__(self, queue: LeafQueue, context: PolicyContext) -> None:
        super().__init__(queue, context)
        self.running: Ranked[Application] = Ranked(self._key, lambda app: app.id, schedulable)
        self.starting: Ranked[Application] = Ranked(self._age, lambda app: app.id)
        self.accepted: Ranked[Application] = Ranked(self._age, lambda app: app.id)

    def _key(self, app: Application) -> tuple[Any, ...]:
        if self.queue.settings.priority_sort:
            return (-app.priority, app.submitted)
        return (app.submitted, app.priority)

    @staticmethod
    def _age(app: Application) -> tuple[Any, ...]:
        return (app.submitted,)

    def _bins(self) -> tuple[Ranked[Application], ...]:
        return (self.running, self.starting, self.accepted)

    def add(self, app: Application, now: float) -> None:
        self.changed(app)

    def remove(self, app: Application, now: float) -> None:
        for ranked in self._bins():
            ranked.discard(app)

    def changed(self, app: Application) -> None:
        target = {AppState.RUNNING: self.running, AppState.STARTING: self.starting,
                  AppState.ACCEPTED: self.accepted}.get(app.state)
        for ranked in self._bins():
            if ranked is not target:
                ranked.discard(app)
        if target is not None and app.runnable:
            target.put(app)

    def _newcomer(self) -> Application | None:
        """The one Starting application, or when there is none the oldest Accepted one."""
        starting = self.starting.first()
        if starting is not None:
            return starting
        return self.accepted.first()

    def first(self, skip: set[str]) -> Application | None:
        best = self.running.first(lambda app: app.id not in skip)
        newcomer = self._newcomer()
        if newcomer is None or newcomer.id in skip or not schedulable(newcomer):
            return best
        if best is None or (self._key(newcomer), newcomer.id) < (self._key(best), best.id):
            return newcomer
        return best

    def unpark(self) -> None:
        self.running.unpark()

    def invalidate(self) -> None:
        for ranked in self._bins():
            ranked.invalidate()

    def ordered(self) -> list[Application]:
        chosen = list(self.running.ordered())
        newcomer = self._newcomer()
        if newcomer is not None and schedulable(newcomer):
            chosen.append(newcomer)
        return sorted(chosen, key=lambda app: (self._key(app), app.id))
