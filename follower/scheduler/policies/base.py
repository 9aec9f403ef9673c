"""What an application sorting policy is: an ordering of one leaf queue's applications, best first.

A policy is a small class swapped by name (house style 8). Most policies are a sort key over
applications kept in a ranked heap (`KeyOrdering`); a policy with state of its own (`uwfq`) or a
filter (`stateaware`) overrides more. The scheduler tells the ordering when an application joins or
leaves the queue, when its usage, asks or state change, and when time passes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from follower.scheduler.applications import Application
from follower.scheduler.ranking import Ranked
from follower.scheduler.resources import Resources


class LeafSettings(Protocol):
    """The settings of a leaf queue that a policy reads."""

    @property
    def priority_sort(self) -> bool: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


class LeafQueue(Protocol):
    """What a policy reads of its leaf queue; declared here so the policies stay below the queue tree."""

    @property
    def settings(self) -> LeafSettings: ...

    @property
    def guaranteed(self) -> Resources: ...


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """What every ordering may read beyond its queue: the cluster's capacity now."""

    capacity: Callable[[], Resources]


def schedulable(app: Application) -> bool:
    """Admitted (not held back by a running-app limit) and asking for something."""
    return app.runnable and app.pending > 0


class Ordering(ABC):
    """The applications of one leaf queue in the order the policy serves them."""

    name: ClassVar[str]
    options: ClassVar[tuple[str, ...]] = ()  # keys this policy reads from the queue's policy options

    def __init__(self, queue: LeafQueue, context: PolicyContext) -> None:
        self.queue = queue
        self.context = context

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Problems with this policy's options as (key, message); none by default."""
        return []

    @abstractmethod
    def add(self, app: Application, now: float) -> None:
        """`app` joined the queue (or was admitted by the limits)."""

    @abstractmethod
    def remove(self, app: Application, now: float) -> None:
        """`app` left the queue (finished, killed or moved)."""

    @abstractmethod
    def changed(self, app: Application) -> None:
        """`app`'s usage, asks or state changed."""

    @abstractmethod
    def first(self, skip: set[str]) -> Application | None:
        """The best application to serve next that is not in `skip`, or None."""

    @abstractmethod
    def unpark(self) -> None:
        """End of a scheduling cycle: applications skipped in it are candidates again."""

    @abstractmethod
    def invalidate(self) -> None:
        """An input of every application's rank changed (the queue's guarantee, the cluster's capacity)."""

    @abstractmethod
    def ordered(self) -> list[Application]:
        """Every application the policy would serve now, best first."""

    def advance(self, now: float) -> None:  # noqa: B027 - a hook most policies leave alone
        """Time passed to `now` (only policies with a clock of their own care)."""


class KeyOrdering(Ordering):
    """An ordering by a sort key; priority first when the queue enables it; ties by application id."""

    def __init__(self, queue: LeafQueue, context: PolicyContext) -> None:
        super().__init__(queue, context)
        self.ranked: Ranked[Application] = Ranked(self._full_key, lambda app: app.id, schedulable)

    @abstractmethod
    def key(self, app: Application) -> tuple[Any, ...]:
        """The policy's rank of `app` (smaller first)."""

    def _full_key(self, app: Application) -> tuple[Any, ...]:
        if self.queue.settings.priority_sort:
            return (-app.priority, *self.key(app))
        return (*self.key(app), app.priority)  # YuniKorn: priority is the last tie-break when disabled

    def add(self, app: Application, now: float) -> None:
        self.ranked.put(app)

    def remove(self, app: Application, now: float) -> None:
        self.ranked.discard(app)

    def changed(self, app: Application) -> None:
        if app in self.ranked:
            self.ranked.put(app)

    def first(self, skip: set[str]) -> Application | None:
        return self.ranked.first(lambda app: app.id not in skip)

    def unpark(self) -> None:
        self.ranked.unpark()

    def invalidate(self) -> None:
        self.ranked.invalidate()

    def ordered(self) -> list[Application]:
        return self.ranked.ordered()


def usage_shares(used: Resources, denominators: Mapping[str, float], weight: float = 1.0) -> tuple[float, ...]:
    """`used[r] / denominators[r] / weight` over the resources with a positive denominator, largest first."""
    shares = [used.get(name) / amount / weight for name, amount in denominators.items() if amount > 0]
    return tuple(sorted(shares, reverse=True))
