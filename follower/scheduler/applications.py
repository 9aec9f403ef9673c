"""Applications, their asks and containers, and the records the scheduler reports.

Application states follow YuniKorn's state-aware scheduling design (1.3 docs, "Batch Workloads
Ordering with StateAware Policy", and "Scheduler object states"): New → Accepted (first ask) →
Starting (first allocation) → Running (second allocation, or the starting timeout) → Completing
(nothing asked, nothing held) → Completed (the application said it finished). Rejected and Killed
end an application early.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from follower.scheduler.resources import Resources

DISABLE_STATE_AWARE_TAG = "application.stateaware.disable"  # YuniKorn's tag (YUNIKORN-921)


class AppState(Enum):
    NEW = "New"
    ACCEPTED = "Accepted"
    STARTING = "Starting"
    RUNNING = "Running"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    REJECTED = "Rejected"
    KILLED = "Killed"

    @property
    def finished(self) -> bool:
        return self in (AppState.COMPLETED, AppState.REJECTED, AppState.KILLED)


@dataclass(slots=True)
class Ask:
    """`count` more containers of `resources` wanted by one application."""

    id: str
    app_id: str
    resources: Resources
    count: int
    priority: int
    created: float
    seq: int
    tried: float | None = None  # when preemption last tried for it (the `yunikorn` model's retry clock)

    @property
    def rank(self) -> tuple[int, float, int]:
        """Higher priority first, then older, then first asked."""
        return (-self.priority, self.created, self.seq)


@dataclass(slots=True)
class Container:
    """One allocation held by an application on a node."""

    id: str
    app_id: str
    ask_id: str
    node: str
    resources: Resources
    queue: str
    allocated_at: float
    seq: int


@dataclass(frozen=True, slots=True)
class Allocation:
    """What one scheduling step did: container `container_id` of `ask_id` for `app_id` on `node`."""

    app_id: str
    ask_id: str
    container_id: str
    node: str
    resources: Resources
    queue: str


@dataclass(frozen=True, slots=True)
class Preemption:
    """A container taken back from `victim_queue` so that `for_queue` gets its guarantee."""

    container_id: str
    app_id: str
    node: str
    resources: Resources
    victim_queue: str
    for_queue: str
    time: float


@dataclass(slots=True, eq=False)
class Application:
    """An application in a leaf queue: its asks, its containers, its state, and what policies read."""

    id: str
    user: str
    queue: str
    submitted: float
    seq: int
    groups: tuple[str, ...] = ()
    priority: int = 0
    weight: float = 1.0
    min_share: Resources | None = None
    estimated_work: float | None = None
    job: str | None = None
    reservation: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    state: AppState = AppState.NEW
    state_since: float = 0.0
    runnable: bool = False
    asks: dict[str, Ask] = field(default_factory=dict)
    containers: dict[str, Container] = field(default_factory=dict)
    used: Resources = field(default_factory=Resources)
    allocations: int = 0
    pending: int = 0
    reason: str | None = None

    @property
    def state_aware_disabled(self) -> bool:
        """Whether the application opted out of waiting in Starting (YuniKorn's tag)."""
        return self.tags.get(DISABLE_STATE_AWARE_TAG, "").lower() == "true"

    def ranked_asks(self) -> list[Ask]:
        """Asks with containers still wanted, best first."""
        return sorted((ask for ask in self.asks.values() if ask.count > 0), key=lambda ask: ask.rank)

    def demand(self) -> Resources:
        """What the pending asks add up to."""
        total = Resources()
        for ask in self.asks.values():
            if ask.count > 0:
                total = total + ask.resources * ask.count
        return total
