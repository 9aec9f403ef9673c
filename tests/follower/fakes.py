"""Hand-made plans, and a small in-memory queue scheduler with just the follower's `QueueControl` methods.

The fake checks what the real scheduler promises (a queue holding applications cannot be removed,
an application moves only to an existing leaf) so that a follower breaking them fails here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from follower.scheduler.resources import Resources
from planner.core.plan import Accepted, Allocation, Plan
from rdl.cluster import Cluster
from rdl.syntax.parser import parse_text
from rdl.tree import Reservation
from rdl.tree import Resources as PlanResources

START = datetime(2026, 11, 23, tzinfo=UTC)
GiB = 1024.0
CAPACITY = {"memory": 100 * 4 * GiB, "vcores": 100.0}  # 100 bundles of {memory: 4GiB, vcores: 1}


def bundles(count: float) -> dict[str, float]:
    return {"memory": count * 4 * GiB, "vcores": float(count)}


def minute(m: float) -> datetime:
    return START + timedelta(minutes=m)


def reservation(name: str, lo: int, hi: int) -> Reservation:
    """A reservation whose window is [lo, hi) minutes (= plan steps)."""
    text = (f"reservation {name} arrival={minute(lo).strftime('%Y-%m-%dT%H:%M:%SZ')} "
            f"deadline={minute(hi).strftime('%Y-%m-%dT%H:%M:%SZ')} {{ atom(b={{memory: 4GiB, vcores: 1}}, w=10h) }}")
    return parse_text(text, "<test>")[0]


def plan_of(*reservations: tuple[str, int, int, list[tuple[int, int, int]]]) -> Plan:
    """A two-hour plan at one-minute steps holding these (name, window lo, hi, [(start, end, bundles)])."""
    plan = Plan(Cluster(START, PlanResources.of(CAPACITY), step=60, horizon=7200))
    for name, lo, hi, leases in reservations:
        allocations = [Allocation("work", s, e, n, PlanResources.of(bundles(1))) for s, e, n in leases]
        plan.add(Accepted(reservation(name, lo, hi), START, allocations))
    return plan


# a: window [10, 40), 20 bundles over [15, 25) then 10 over [25, 35); b: window [20, 60), 30 over [20, 30), 50 over
# [30, 50). They overlap over [20, 35).
OVERLAPPING = (("a", 10, 40, [(15, 25, 20), (25, 35, 10)]), ("b", 20, 60, [(20, 30, 30), (30, 50, 50)]))





class FakeScheduler:
    """Queues (path -> guaranteed, max), applications (id -> queue path) and the nodes' capacity."""

    def __init__(self, capacity: Mapping[str, float]):
        self.queues: dict[str, tuple[Resources, Resources | None]] = {"root": (Resources(), None)}
        self.applications: dict[str, str] = {}
        self.killed: dict[str, str] = {}  # application id -> reason
        self.nodes = Resources(capacity)

    # -- QueueControl ---------------------------------------------------------------------------------

    def queue_paths(self, under: str) -> list[str]:
        return sorted(p for p in self.queues if p.startswith(under + ".") and "." not in p[len(under) + 1:])

    def ensure_queue(self, path: str, guaranteed: Resources, maximum: Resources | None = None) -> None:
        parts = path.split(".")
        assert parts[0] == "root" and all(parts), f"bad queue path {path}"
        for depth in range(2, len(parts)):
            parent = ".".join(parts[:depth])
            assert parent not in self.applications.values(), f"{parent} holds applications, so it cannot be a parent"
            self.queues.setdefault(parent, (Resources(), None))
        self.queues[path] = (guaranteed, maximum)

    def remove_queue(self, path: str) -> None:
        assert path in self.queues, f"no queue {path}"
        assert not self.applications_in(path), f"{path} still holds applications"
        assert not self.queue_paths(path), f"{path} still has child queues"
        del self.queues[path]

    def applications_in(self, path: str) -> list[str]:
        return sorted(app for app, queue in self.applications.items() if queue == path)

    def move_application(self, app_id: str, path: str) -> None:
        assert app_id in self.applications, f"no application {app_id}"
        assert path in self.queues and not self.queue_paths(path), f"{path} is not a leaf queue"
        self.applications[app_id] = path

    def kill_application(self, app_id: str, reason: str) -> None:
        del self.applications[app_id]
        self.killed[app_id] = reason

    def capacity(self) -> Resources:
        return self.nodes

    # -- for tests ------------------------------------------------------------------------------------

    def submit(self, app_id: str, path: str) -> None:
        assert path in self.queues and not self.queue_paths(path), f"{path} is not a leaf queue"
        self.applications[app_id] = path

    def guaranteed(self, path: str) -> Resources:
        return self.queues[path][0]

    def maximum(self, path: str) -> Resources | None:
        return self.queues[path][1]

    def state(self) -> tuple[dict[str, tuple[Resources, Resources | None]], dict[str, str]]:
        return dict(self.queues), dict(self.applications)
