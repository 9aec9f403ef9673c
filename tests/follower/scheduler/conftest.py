"""Shared helpers for the queue scheduler tests: small clusters and applications built in one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from follower.scheduler import Scheduler

SMALL = {"memory": 1024.0, "vcores": 1.0}


def cluster(config: Mapping[str, Any] | None = None, nodes: int = 2, size: Mapping[str, float] | None = None,
            now: float = 0.0) -> Scheduler:
    """A scheduler with `nodes` identical nodes `n0`, `n1`, ... (default 8 GiB, 8 vcores each)."""
    scheduler = Scheduler(config)
    for index in range(nodes):
        scheduler.add_node(f"n{index}", size or {"memory": 8192.0, "vcores": 8.0}, now)
    return scheduler


def app(scheduler: Scheduler, app_id: str, now: float, queue: str = "root.a", user: str = "u",
        count: int = 1, size: Mapping[str, float] = SMALL, **submit: Any) -> str:
    """Submit `app_id` to `queue` with one ask of `count` containers of `size`; returns its queue."""
    path = scheduler.submit(app_id, user, now, queue=queue, **submit)
    scheduler.add_ask(app_id, "ask", size, now, count=count)
    return path


def served(scheduler: Scheduler, now: float) -> list[str]:
    """The application ids of one cycle's allocations, in order."""
    return [allocation.app_id for allocation in scheduler.schedule(now)]


@pytest.fixture
def one_queue() -> dict[str, Any]:
    """A config with one leaf `root.a` and specified placement."""
    return {"queues": {"a": {}}, "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]}


def place_on(scheduler: Scheduler, app_id: str, node: str, now: float, size: Mapping[str, float] = SMALL,
             ask: str = "placed") -> None:
    """Give `app_id` one container of `size` on `node`, bypassing the node policy (to build a situation)."""
    target = scheduler.application(app_id)
    scheduler.add_ask(app_id, ask, size, now)
    scheduler._allocate(target, target.asks[ask], scheduler.nodes.by_name[node], scheduler.tree.get(target.queue), now)
