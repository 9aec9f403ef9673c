"""What an agent is: it answers where a reservation would go on a plan (an `Outcome`), and never changes the plan."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from planner.core.decision import Reason
from planner.core.plan import Allocation, Plan
from rdl.tree import Reservation


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where the reservation would go (allocations), or why it cannot (reason)."""

    allocations: tuple[Allocation, ...] | None
    reason: Reason | None = None

    @property
    def placed(self) -> bool:
        return self.allocations is not None


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    def place(self, plan: Plan, reservation: Reservation, submitted: datetime) -> Outcome: ...
