"""`fair`: least usage relative to the queue's guarantee first, largest share compared first.

As YuniKorn's FairSortPolicy (`resources.CompUsageRatio`: each resource's share of the total,
sorted, compared from the largest down), with the queue's guaranteed resource as the total where it
guarantees that resource and the cluster's capacity where it does not; an application's weight
divides its shares. Then older submission first, then id.
"""

from __future__ import annotations

from typing import Any

from follower.scheduler.applications import Application
from follower.scheduler.policies.base import KeyOrdering, usage_shares


class Fair(KeyOrdering):
    """Smallest largest-share first; optional per-application weights."""

    name = "fair"

    def key(self, app: Application) -> tuple[Any, ...]:
        denominators = dict(self.context.capacity())
        for name, amount in self.queue.guaranteed.items():
            if amount > 0:
                denominators[name] = amount
        return (usage_shares(app.used, denominators, app.weight), app.submitted)
