"""`fifo`: oldest submission first (YuniKorn's FifoSortPolicy; priority first where the queue enables it)."""

from __future__ import annotations

from typing import Any

from follower.scheduler.applications import Application
from follower.scheduler.policies.base import KeyOrdering


class Fifo(KeyOrdering):
    """Oldest submission first; equal times by application id."""

    name = "fifo"

    def key(self, app: Application) -> tuple[Any, ...]:
        return (app.submitted,)
