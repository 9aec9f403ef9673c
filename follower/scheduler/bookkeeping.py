"""The scheduler's bookkeeping: its state, and the steps that keep queue totals, rankings and app states true."""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from follower.scheduler.applications import Allocation, Application, AppState, Ask, Container
from follower.scheduler.config import SchedulerConfig, load_config
from follower.scheduler.errors import QueueError, SchedulerError, UnknownError
from follower.scheduler.limits import Limits
from follower.scheduler.nodes import Node, NodeSet
from follower.scheduler.placement import Placement
from follower.scheduler.policies import Ordering, PolicyContext, get_policy
from follower.scheduler.queues import Queue, QueueSettings, QueueTree, fair_key
from follower.scheduler.ranking import Ranked
from follower.scheduler.resources import Resources


class Bookkeeping:
    """The state of a scheduler and the internal steps its public calls (in `Scheduler`) are built from."""

    def __init__(self, config: SchedulerConfig | Mapping[str, Any] | None = None) -> None:
        self.config = config if isinstance(config, SchedulerConfig) else load_config(config)
        self.tree = QueueTree()
        self.nodes = NodeSet(self.config.node_policy, self.config.node_weights)
        self.context = PolicyContext(lambda: self.nodes.capacity)
        self.placement = Placement(self.config.placement)
        self.limits = Limits(self.config.user_limits)
        self.apps: dict[str, Application] = {}
        self.containers: dict[str, Container] = {}
        self.rejected: dict[str, str] = {}
        self.now = 0.0
        self.preemptions = 0
        self.preemptions_by_queue: Counter[str] = Counter()
        self.starved_since: dict[str, float] = {}
        self._seq = itertools.count()
        self._timeouts: list[tuple[float, int, str]] = []
        self._holds: list[tuple[str, str, str]] = []
        self._ended_reservations: set[str] = set()  # reservation ids (not queue names) whose queue was removed
        self._shapes: Counter[Resources] = Counter()  # pending containers per ask shape, to end a full cycle early
        self._setup(self.tree.root)
        for path, settings in self.config.queues:
            self._create(path, settings)

    def _tick(self, now: float) -> None:
        self.now = max(self.now, now)

    def _app(self, app_id: str) -> Application:
        app = self.apps.get(app_id)
        if app is None:
            raise UnknownError("application", app_id)
        return app

    def _live(self, app_id: str) -> Application:
        app = self._app(app_id)
        if app.state.finished:
            raise SchedulerError(f"application `{app_id}` is {app.state.value}")
        return app

    def _ordering(self, app: Application) -> Ordering:
        return self._leaf_ordering(self.tree.get(app.queue))

    @staticmethod
    def _leaf_ordering(leaf: Queue) -> Ordering:
        assert leaf.ordering is not None, leaf.path
        return leaf.ordering

    def _create(self, path: str, settings: QueueSettings | None, guaranteed: Resources | None = None,
                maximum: Resources | None = None) -> Queue:
        existing = self.tree.find(path)
        if existing is not None:
            raise QueueError(existing.path, "already exists")
        parent_path = self.tree.normalise(path).rsplit(".", 1)[0]
        converted = self.tree.find(parent_path)
        queue, made = self.tree.create(path, settings)
        if guaranteed is not None:
            queue.settings = replace(queue.settings, guaranteed=guaranteed, maximum=maximum)
        if converted is not None and converted.ranked is None:
            self._setup(converted)
        for new in made:
            self._setup(new)
            if new.parent is not None and new.parent.ranked is None:
                self._setup(new.parent)
        return queue

    def _setup(self, queue: Queue) -> None:
        """Give a parent its ranked children, a leaf its application ordering."""
        if queue.is_leaf:
            if queue.ordering is None:
                queue.ordering = get_policy(queue.settings.policy)(queue, self.context)
        else:
            queue.ranked = queue.ranked or _ranked_children(self)
            for child in queue.children.values():
                queue.ranked.put(child)
        if queue.parent is not None and queue.parent.ranked is not None:
            queue.parent.ranked.put(queue)

    def _capacity_changed(self) -> None:
        for queue in self.tree.queues():
            if queue.ranked is not None:
                queue.ranked.invalidate()
            if queue.ordering is not None:
                queue.ordering.invalidate()

    def _admit(self, app: Application, leaf: Queue, now: float) -> None:
        self.limits.admit(app, leaf)
        self._leaf_ordering(leaf).add(app, now)
        self._pending(app, app.pending, propagate_only=True)

    def _promote(self, now: float) -> None:
        for app in self.limits.promote(lambda waiting: self.tree.get(waiting.queue)):
            leaf = self.tree.get(app.queue)
            self._leaf_ordering(leaf).add(app, now)
            self._pending(app, app.pending, propagate_only=True)

    def _pending(self, app: Application, delta: int, propagate_only: bool = False) -> None:
        """Change the application's pending container count (or only carry it up the tree)."""
        if not propagate_only:
            app.pending += delta
        if app.runnable and delta:
            for queue in self.tree.get(app.queue).ancestors():
                queue.pending += delta
                if queue.parent is not None and queue.parent.ranked is not None:
                    queue.parent.ranked.put(queue)
        if app.runnable:
            self._ordering(app).changed(app)

    def _charge(self, leaf: Queue, amount: Resources) -> None:
        for queue in leaf.ancestors():
            queue.used = queue.used + amount
            if queue.parent is not None and queue.parent.ranked is not None:
                queue.parent.ranked.put(queue)

    def _set_state(self, app: Application, state: AppState, now: float) -> None:
        app.state = state
        app.state_since = now
        if state is AppState.STARTING:
            heapq.heappush(self._timeouts, (now + self.config.starting_timeout, app.seq, app.id))

    def _advance(self, now: float) -> None:
        """Starting timeouts that fell due, and the clocks of policies that keep one."""
        while self._timeouts and self._timeouts[0][0] <= now:
            _, _, app_id = heapq.heappop(self._timeouts)
            app = self.apps.get(app_id)
            if app is not None and app.state is AppState.STARTING:
                self._set_state(app, AppState.RUNNING, now)
                self._ordering(app).changed(app)
        for leaf in self.tree.leaves():
            self._leaf_ordering(leaf).advance(now)

    def _allocate(self, app: Application, ask: Ask, node: Node, leaf: Queue, now: float) -> Allocation:
        amount = ask.resources
        container = Container(f"{app.id}/c{app.allocations + 1}", app.id, ask.id, node.name, amount, leaf.path,
                              now, next(self._seq))
        self.containers[container.id] = container
        node.containers[container.id] = container
        self.nodes.take(node, amount)
        app.containers[container.id] = container
        app.used = app.used + amount
        app.allocations += 1
        ask.count -= 1
        self._forget_shape(amount, 1)
        if ask.count == 0:
            del app.asks[ask.id]
        self._charge(leaf, amount)
        if app.state is AppState.ACCEPTED:
            self._set_state(app, AppState.RUNNING if app.state_aware_disabled else AppState.STARTING, now)
        elif app.state is AppState.STARTING:
            self._set_state(app, AppState.RUNNING, now)
        self._pending(app, -1)
        return Allocation(app.id, ask.id, container.id, node.name, amount, leaf.path)

    def _forget_shape(self, shape: Resources, count: int) -> None:
        self._shapes[shape] -= count
        if self._shapes[shape] <= 0:
            del self._shapes[shape]

    def _maybe_completing(self, app: Application, now: float) -> None:
        if app.state is AppState.RUNNING and not app.containers and app.pending == 0:
            self._set_state(app, AppState.COMPLETING, now)
            self._ordering(app).changed(app)


def _ranked_children(scheduler: Bookkeeping) -> Ranked[Queue]:
    """A parent's children, ranked fairly against the cluster's capacity of the moment."""
    return Ranked(lambda queue: fair_key(queue, scheduler.nodes.capacity), lambda queue: queue.name,
                  lambda queue: queue.pending > 0)
