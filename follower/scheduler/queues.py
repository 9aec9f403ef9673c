"""The queue tree: root → parents → leaves, each with guaranteed and maximum resources and a weight.

Parents rank their children fairly, as YuniKorn's parent queues do (its docs: "a parent queue will
always use the fair policy to sort the child queues"): a child below its guarantee comes first,
compared by its shares of its guarantee, largest share first (YuniKorn `resources.go`,
`getShares`/`compareShares`); children at or above their guarantee follow, compared the same way
by their shares of what they guarantee (above it too, as YuniKorn's `CompUsageRatioSeparately`) and
of the cluster for what they do not, divided by their weight (YARN's use-to-weight ratio). Ties by
name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from follower.scheduler.applications import Application
from follower.scheduler.errors import QueueError
from follower.scheduler.ranking import Ranked
from follower.scheduler.resources import EPSILON, Resources

if TYPE_CHECKING:
    from follower.scheduler.policies import Ordering

ROOT = "root"


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """How one queue is configured."""

    guaranteed: Resources = field(default_factory=Resources)
    maximum: Resources | None = None
    weight: float = 1.0
    policy: str = "fifo"
    priority_sort: bool = True
    max_running_apps: int | None = None
    parent: bool = False
    child_template: QueueSettings | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Queue:
    """One queue; a leaf holds applications, a parent holds queues."""

    name: str
    path: str
    parent: Queue | None
    settings: QueueSettings
    children: dict[str, Queue] = field(default_factory=dict)
    apps: dict[str, Application] = field(default_factory=dict)
    used: Resources = field(default_factory=Resources)
    pending: int = 0
    running_apps: int = 0
    ordering: Ordering | None = None
    ranked: Ranked[Queue] | None = None

    @property
    def guaranteed(self) -> Resources:
        return self.settings.guaranteed

    @property
    def maximum(self) -> Resources | None:
        return self.settings.maximum

    @property
    def is_leaf(self) -> bool:
        return not self.children and not self.settings.parent and self.parent is not None

    def ancestors(self) -> Iterator[Queue]:
        """This queue, then its parent, up to the root."""
        queue: Queue | None = self
        while queue is not None:
            yield queue
            queue = queue.parent

    def headroom_allows(self, amount: Resources) -> bool:
        """Whether `amount` more stays within this queue's maximum and every ancestor's."""
        for queue in self.ancestors():
            maximum = queue.settings.maximum
            if maximum is not None and not (queue.used + amount).fits_in(maximum):
                return False
        return True

    def below_guarantee(self) -> bool:
        """Whether some guaranteed resource is used less than guaranteed."""
        return any(self.used.get(name) < amount - EPSILON for name, amount in self.guaranteed.items() if amount > 0)


def fair_key(queue: Queue, capacity: Resources) -> tuple[Any, ...]:
    """How a parent ranks this child: below-guarantee first, then shares largest first, then name.

    Above its guarantee a child keeps being measured against it (YuniKorn's fair queue sort compares
    `used / guaranteed` whether below or above, `CompUsageRatioSeparately`), so siblings share what
    is left over in proportion to their guarantees; a resource the child does not guarantee counts
    as `used / cluster capacity`. Both divided by the weight."""
    guaranteed = queue.settings.guaranteed
    shares = [queue.used.get(name) / amount for name, amount in guaranteed.items() if amount > 0]
    if shares and max(shares) < 1.0 - EPSILON:
        return (0, tuple(sorted(shares, reverse=True)), queue.name)
    weight = queue.settings.weight
    over = [queue.used.get(name) / (guaranteed.get(name) or total) / weight for name, total in capacity.items()
            if total > 0 or guaranteed.get(name) > 0]
    return (1, tuple(sorted(over, reverse=True)), queue.name)


class QueueTree:
    """Queues by dotted path from `root`; creates, finds and removes them."""

    def __init__(self, root_settings: QueueSettings | None = None) -> None:
        settings = replace(root_settings or QueueSettings(), parent=True)
        self.root = Queue(ROOT, ROOT, None, settings)
        self._by_path: dict[str, Queue] = {ROOT: self.root}

    @staticmethod
    def normalise(path: str) -> str:
        """`a.b` and `root.a.b` are the same queue; empty parts are an error."""
        parts = path.split(".")
        if any(not part for part in parts):
            raise QueueError(path, "has an empty name part (a leading, trailing or doubled `.`)")
        if parts[0] != ROOT:
            parts.insert(0, ROOT)
        return ".".join(parts)

    def find(self, path: str) -> Queue | None:
        """The queue at `path`, or None."""
        queue = self._by_path.get(path)  # most callers pass a full path already
        return queue if queue is not None else self._by_path.get(self.normalise(path))

    def get(self, path: str) -> Queue:
        """The queue at `path`; QueueError when there is none."""
        queue = self.find(path)
        if queue is None:
            raise QueueError(path, "no such queue")
        return queue

    def leaf(self, path: str) -> Queue:
        """The leaf queue at `path`; QueueError when it is missing or a parent."""
        queue = self.get(path)
        if not queue.is_leaf:
            raise QueueError(queue.path, "is a parent queue; applications go to leaf queues")
        return queue

    def create(self, path: str, settings: QueueSettings | None = None) -> tuple[Queue, list[Queue]]:
        """The queue at `path`, made with any missing parents; returns it and every queue made."""
        path = self.normalise(path)
        made: list[Queue] = []
        queue = self.root
        parts = path.split(".")[1:]
        for depth, name in enumerate(parts):
            child = queue.children.get(name)
            if child is None:
                last = depth == len(parts) - 1
                if queue.apps:
                    raise QueueError(queue.path, "holds applications, so it cannot become a parent queue")
                template = queue.settings.child_template or QueueSettings()
                chosen = settings if (last and settings is not None) else template
                if not last:
                    chosen = replace(template, parent=True)
                child = Queue(name, f"{queue.path}.{name}", queue, chosen)
                queue.children[name] = child
                self._by_path[child.path] = child
                made.append(child)
            queue = child
        return queue, made

    def remove(self, queue: Queue) -> None:
        """Take `queue` (a leaf without applications, or an empty parent) out of the tree."""
        if queue.parent is None:
            raise QueueError(queue.path, "the root queue cannot be removed")
        if queue.apps or queue.children:
            raise QueueError(queue.path, "still holds applications or queues")
        del queue.parent.children[queue.name]
        del self._by_path[queue.path]

    def queues(self) -> list[Queue]:
        """Every queue, parents before children, in path order."""
        return [self._by_path[path] for path in sorted(self._by_path)]

    def leaves(self) -> list[Queue]:
        """Every leaf queue in path order."""
        return [queue for queue in self.queues() if queue.is_leaf]
