"""Application sorting policies, registered by name: fifo, fair, stateaware, drf, uwfq."""

from __future__ import annotations

from follower.scheduler.policies.base import KeyOrdering, Ordering, PolicyContext
from follower.scheduler.policies.drf import Drf
from follower.scheduler.policies.fair import Fair
from follower.scheduler.policies.fifo import Fifo
from follower.scheduler.policies.stateaware import StateAware
from follower.scheduler.policies.uwfq import Uwfq
from rdl.registry import Registry

APP_POLICIES: Registry[type[Ordering]] = Registry.of(
    "application sorting policy", {cls.name: cls for cls in (Fifo, Fair, StateAware, Drf, Uwfq)})


def get_policy(name: str) -> type[Ordering]:
    """The policy registered as `name`; an `UnknownName` (a ValueError) listing the valid ones otherwise."""
    return APP_POLICIES.get(name)


__all__ = ["APP_POLICIES", "KeyOrdering", "Ordering", "PolicyContext", "get_policy"]
