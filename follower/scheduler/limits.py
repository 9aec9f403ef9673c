"""Running-application limits per queue and per user, YARN Fair Scheduler style (`maxRunningApps`).

An application beyond a limit is never rejected: it waits, not schedulable, until a slot frees, and
waiting applications are promoted oldest submission first (ties by id), as YARN's
MaxRunningAppsEnforcer does. A queue's limit counts every admitted application below it; a user's
limit counts the user's admitted applications anywhere.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from follower.scheduler.applications import Application
from follower.scheduler.queues import Queue


@dataclass(frozen=True, slots=True)
class UserLimits:
    """`max_running_apps` for every user, with per-user overrides (`None` lifts the limit)."""

    max_running_apps: int | None = None
    users: Mapping[str, int | None] = field(default_factory=dict)

    def limit(self, user: str) -> int | None:
        return self.users.get(user, self.max_running_apps)


class Limits:
    """Counts admitted applications and holds back those over a limit."""

    def __init__(self, users: UserLimits | None = None) -> None:
        self.users = users or UserLimits()
        self.running_by_user: Counter[str] = Counter()
        self._waiting: list[tuple[float, str]] = []
        self._waiting_apps: dict[str, Application] = {}

    def can_run(self, app: Application, leaf: Queue) -> bool:
        """Whether admitting `app` to `leaf` keeps every queue and user limit."""
        for queue in leaf.ancestors():
            limit = queue.settings.max_running_apps
            if limit is not None and queue.running_apps >= limit:
                return False
        limit = self.users.limit(app.user)
        return limit is None or self.running_by_user[app.user] < limit

    def admit(self, app: Application, leaf: Queue) -> None:
        """Count `app` as running in `leaf` and its ancestors."""
        app.runnable = True
        for queue in leaf.ancestors():
            queue.running_apps += 1
        self.running_by_user[app.user] += 1

    def release(self, app: Application, leaf: Queue) -> None:
        """`app` no longer counts (finished, killed, or moving); drop it from the waiting line too."""
        if app.runnable:
            for queue in leaf.ancestors():
                queue.running_apps -= 1
            self.running_by_user[app.user] -= 1
            app.runnable = False
        if self._waiting_apps.pop(app.id, None) is not None:
            self._waiting.remove((app.submitted, app.id))

    def hold(self, app: Application) -> None:
        """Put `app` in the waiting line."""
        self._waiting_apps[app.id] = app
        bisect.insort(self._waiting, (app.submitted, app.id))

    @property
    def waiting(self) -> list[Application]:
        """Applications held back by a limit, oldest first."""
        return [self._waiting_apps[app_id] for _, app_id in self._waiting]

    def promote(self, leaf_of: Callable[[Application], Queue]) -> list[Application]:
        """Admit every waiting application that fits the limits now, oldest first; returns them."""
        promoted = []
        for app in self.waiting:
            leaf = leaf_of(app)
            if self.can_run(app, leaf):
                self.release(app, leaf)
                self.admit(app, leaf)
                promoted.append(app)
        return promoted
