"""Application sorting policies, registered by name: fifo, fair, stateaware, drf, uwfq."""

from __future__ import annotations

from follower.scheduler.policies.base import KeyOrdering, Ordering, PolicyContext
from follower.scheduler.policies.drf import Drf
from follower.scheduler.policies.fair import Fair
from follower.scheduler.policies.fifo import Fifo
from follower.scheduler.policies.stateaware import StateAware
from follower.scheduler.policies.uwfq import Uwfq
from rdl.errors import did_you_mean

APP_POLICIES: dict[str, type[Ordering]] = {cls.name: cls for cls in (Fifo, Fair, StateAware, Drf, Uwfq)}


def get_policy(name: str) -> type[Ordering]:
    """The policy registered as `name`; ValueError listing the valid ones (and the likely one) otherwise."""
    if name in APP_POLICIES:
        return APP_POLICIES[name]
    hint = did_you_mean(name, list(APP_POLICIES))
    valid = ", ".join(APP_POLICIES)
    suffix = f" ({hint})" if hint else ""
    raise ValueError(f"unknown application sorting policy `{name}`; use one of {valid}{suffix}")


__all__ = ["APP_POLICIES", "KeyOrdering", "Ordering", "PolicyContext", "get_policy"]
