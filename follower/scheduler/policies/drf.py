"""`drf`: dominant resource fairness with weights and minimum shares.

YARN Fair Scheduler's `DominantResourceFairnessPolicy` comparator: an application whose usage of
its dominant resource (dominant with respect to the cluster) is below its minimum share of that
resource is needy and comes first; needy ones compare their shares of their minimum share, the
others their weighted shares of the cluster, each in its own order of resources, dominant first.
Ties by submission time, then id.
"""

from __future__ import annotations

import math
from typing import Any

from follower.scheduler.applications import Application
from follower.scheduler.policies.base import KeyOrdering


class Drf(KeyOrdering):
    """Below-min-share first, then smallest weighted dominant share."""

    name = "drf"

    def key(self, app: Application) -> tuple[Any, ...]:
        capacity = self.context.capacity()
        names = sorted(name for name, amount in capacity.items() if amount > 0)
        cluster = {name: app.used.get(name) / capacity.get(name) / app.weight for name in names}
        order = sorted(names, key=lambda name: (-cluster[name], name))
        if not order:
            return (1, (), app.submitted)
        minimum = app.min_share
        if minimum is not None:
            of_min = {name: _share(app.used.get(name), minimum.get(name)) for name in names}
            if of_min[order[0]] < 1.0:
                return (0, tuple(of_min[name] for name in order), app.submitted)
        return (1, tuple(cluster[name] for name in order), app.submitted)


def _share(used: float, minimum: float) -> float:
    """`used / minimum`; no minimum is never needy (YARN divides by zero: NaN or infinity, never below 1)."""
    if minimum > 0:
        return used / minimum
    return math.inf
