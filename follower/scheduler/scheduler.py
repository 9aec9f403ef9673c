"""The queue scheduler: a library driven by an explicit clock, deterministic, reporting what it did.

One scheduling cycle (`schedule(now)`) hands out containers until nothing more fits: from the root,
each parent picks its best child (fair, see `queues.fair_key`), the leaf its best application (its
sorting policy), the application its asks by priority then age, and the node policy the first node
that fits. An application none of whose asks fits is skipped for the rest of the cycle, a queue with
nothing left to serve too; an ask shape that fitted no node marks every ask at least as large as
failed. Ties are broken by name or id last, so the same calls give the same answers.

It implements the plan follower's `QueueControl` protocol (`queue_paths`, `ensure_queue`,
`remove_queue`, `applications_in`, `move_application`, `kill_application`, `capacity`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from functools import partial

from follower.scheduler import preemption
from follower.scheduler.applications import Allocation, Application, AppState, Ask, Container, Preemption
from follower.scheduler.bookkeeping import Bookkeeping
from follower.scheduler.config import YUNIKORN
from follower.scheduler.errors import PlacementRejected, QueueError, SchedulerError, UnknownError
from follower.scheduler.nodes import Node
from follower.scheduler.placement import Refused, Submission, reservation_of_queue, reservation_queue
from follower.scheduler.queues import Queue
from follower.scheduler.resources import Resources


class _Cycle:
    """What one scheduling cycle has ruled out so far."""

    __slots__ = ("exhausted", "failed_shapes", "full", "leaves", "skipped")

    def __init__(self) -> None:
        self.skipped: set[str] = set()
        self.exhausted: set[str] = set()
        self.failed_shapes: list[Resources] = []
        self.leaves: dict[str, Queue] = {}
        self.full = False  # every pending ask shape failed on every node: nothing more can fit


class Scheduler(Bookkeeping):
    """Queues, applications and nodes, scheduled at the times the caller gives."""

    # ---- nodes -------------------------------------------------------------------------------

    def add_node(self, name: str, capacity: Mapping[str, float], now: float) -> None:
        """A node joins (or returns) with `capacity`."""
        self._tick(now)
        if name in self.nodes.by_name:
            raise SchedulerError(f"node `{name}` is already in the cluster")
        self.nodes.add(Node(name, Resources(capacity)))
        self._capacity_changed()

    def remove_node(self, name: str, now: float) -> list[Container]:
        """A node leaves (fails); returns the containers lost with it, which are released."""
        self._tick(now)
        node = self.nodes.by_name.get(name)
        if node is None:
            raise UnknownError("node", name)
        lost = sorted(node.containers.values(), key=lambda c: c.seq)
        for container in lost:
            self.release(container.id, now)
        self.nodes.remove(node)
        self._capacity_changed()
        return lost

    def capacity(self) -> Resources:
        """What the nodes really have now."""
        return self.nodes.capacity

    # ---- applications ------------------------------------------------------------------------

    def submit(self, app_id: str, user: str, now: float, *, queue: str | None = None, groups: tuple[str, ...] = (),
               priority: int = 0, weight: float = 1.0, min_share: Mapping[str, float] | None = None,
               estimated_work: float | None = None, job: str | None = None, reservation: str | None = None,
               tags: Mapping[str, str] | None = None) -> str:
        """Place a new application (rules, or its reservation's queue) and return its queue's path."""
        self._tick(now)
        if app_id in self.apps or app_id in self.rejected:
            raise SchedulerError(f"application `{app_id}` was already submitted")
        path = self._resolve(app_id, user, groups, queue, reservation)
        leaf = self.tree.leaf(path) if self.tree.find(path) else self._create(path, None)
        app = Application(app_id, user, leaf.path, now, next(self._seq), tuple(groups), priority, weight,
                          Resources(min_share) if min_share is not None else None, estimated_work, job,
                          reservation, dict(tags or {}), state_since=now)
        self.apps[app_id] = app
        leaf.apps[app_id] = app
        if self.limits.can_run(app, leaf):
            self._admit(app, leaf, now)
        else:
            self.limits.hold(app)
        return leaf.path

    def add_ask(self, app_id: str, ask_id: str, resources: Mapping[str, float], now: float, *, count: int = 1,
                priority: int = 0) -> None:
        """`app_id` wants `count` containers of `resources` (a new ask; New becomes Accepted)."""
        self._tick(now)
        app = self._live(app_id)
        if ask_id in app.asks:
            raise SchedulerError(f"application `{app_id}` already has an ask `{ask_id}`")
        if count < 1:
            raise SchedulerError(f"ask `{ask_id}` of `{app_id}` must want at least one container, got {count}")
        app.asks[ask_id] = ask = Ask(ask_id, app_id, Resources(resources), count, priority, now, next(self._seq))
        self._shapes[ask.resources] += count
        if app.state in (AppState.NEW, AppState.COMPLETING):
            self._set_state(app, AppState.ACCEPTED if app.state is AppState.NEW else AppState.RUNNING, now)
        self._pending(app, count)

    def remove_ask(self, app_id: str, ask_id: str, now: float) -> None:
        """Withdraw what is still pending of an ask."""
        self._tick(now)
        app = self._live(app_id)
        ask = app.asks.pop(ask_id, None)
        if ask is None:
            raise UnknownError("ask", f"{app_id}/{ask_id}")
        self._forget_shape(ask.resources, ask.count)
        self._pending(app, -ask.count)
        self._maybe_completing(app, now)

    def release(self, container_id: str, now: float) -> None:
        """A container ended (its work finished, or it was lost or preempted): free its room."""
        self._tick(now)
        container = self.containers.pop(container_id, None)
        if container is None:
            raise UnknownError("container", container_id)
        node = self.nodes.by_name[container.node]
        del node.containers[container_id]
        self.nodes.give_back(node, container.resources)
        app = self.apps[container.app_id]
        del app.containers[container_id]
        app.used = app.used - container.resources
        self._charge(self.tree.get(container.queue), -1 * container.resources)
        self._ordering(app).changed(app)
        self._maybe_completing(app, now)

    def complete_application(self, app_id: str, now: float) -> None:
        """The application says it finished: its containers and asks go, it becomes Completed."""
        self._tick(now)
        self._end(self._live(app_id), AppState.COMPLETED, None, now)

    def kill_application(self, app_id: str, reason: str) -> None:
        """End the application now: its containers are released (see `containers_of` first to know which)."""
        self._end(self._live(app_id), AppState.KILLED, reason, self.now)

    def containers_of(self, app_id: str) -> list[Container]:
        """The application's containers, oldest first."""
        return sorted(self._app(app_id).containers.values(), key=lambda c: c.seq)

    def application(self, app_id: str) -> Application:
        """The application's record (read it; change it only through the scheduler)."""
        return self._app(app_id)

    def state_counts(self) -> dict[AppState, int]:
        """How many applications are in each state (rejected submissions included)."""
        counts = Counter(app.state for app in self.apps.values())
        counts[AppState.REJECTED] += len(self.rejected)
        return {state: counts[state] for state in AppState}

    @property
    def waiting(self) -> list[Application]:
        """Applications held back by a running-application limit, oldest first."""
        return self.limits.waiting

    # ---- scheduling --------------------------------------------------------------------------

    def schedule(self, now: float) -> list[Allocation]:
        """One scheduling cycle at `now`: every allocation made, in the order made."""
        self._tick(now)
        self._advance(now)
        allocations = self._serve_holds(now)
        cycle = _Cycle()
        while (allocation := self._allocate_one(cycle, now)) is not None:
            allocations.append(allocation)
        for queue in self.tree.queues():
            if queue.ranked is not None:
                queue.ranked.unpark()
        for leaf in cycle.leaves.values():
            self._leaf_ordering(leaf).unpark()
        self._note_starvation(now)
        return allocations

    def preempt(self, now: float) -> list[Preemption]:
        """Take containers back for queues starved below their guarantee: those starved for the preemption delay
        (model `yarn`), or in every starved queue the asks whose own delay and retry fall due (model `yunikorn`)."""
        self._tick(now)
        self._advance(now)
        self._note_starvation(now)
        if not self.config.preemption:
            return []
        delay, due = self.config.preemption_delay, None
        if self.config.preemption_model == YUNIKORN:
            order = sorted((since, path) for path, since in self.starved_since.items())
            due = partial(self._try_ask, now)
        else:
            order = sorted((since, path) for path, since in self.starved_since.items() if now - since >= delay - 1e-9)
        if not order:
            return []
        starved = [self.tree.get(path) for _, path in order]
        queue_of = {queue.path: queue for queue in self.tree.queues()}
        done: list[Preemption] = []
        nodes = sorted(self.nodes.by_name.values(), key=lambda n: n.name)
        for claim in preemption.plan(starved, nodes, queue_of, due):
            for victim in claim.victims:
                done.append(Preemption(victim.id, victim.app_id, victim.node, victim.resources, victim.queue,
                                       claim.queue.path, now))
                self.release(victim.id, now)
            self._holds.append((claim.node.name, claim.app.id, claim.ask.id))
        self.preemptions += len(done)
        self.preemptions_by_queue.update(p.victim_queue for p in done)
        return done

    def _try_ask(self, now: float, ask: Ask) -> bool:
        """The `yunikorn` model: whether `ask` tries preemption now (a try is marked: the next is `retry` on)."""
        if not preemption.ask_due(ask, now, self.config.preemption_delay, self.config.preemption_retry):
            return False
        ask.tried = now
        return True

    def next_event_time(self) -> float | None:
        """The next time after the clock when something happens without a call: a starting timeout or a
        preemption falling due (one already due but not satisfied is not an event to come); in the `yunikorn` model,
        the next try of an ask waiting in a starved queue."""
        now = self.now
        times = [deadline for deadline, _, app_id in self._timeouts
                 if deadline > now and app_id in self.apps and self.apps[app_id].state is AppState.STARTING]
        if self.config.preemption and self.config.preemption_model == YUNIKORN:
            delay, retry = self.config.preemption_delay, self.config.preemption_retry
            times += [preemption.next_try(ask, now, delay, retry) for path in self.starved_since
                      for app in self.tree.get(path).apps.values() for ask in app.asks.values() if ask.count > 0]
        elif self.config.preemption:
            times += [due for since in self.starved_since.values()
                      if (due := since + self.config.preemption_delay) > now]
        return min(times) if times else None

    def advance(self, now: float) -> None:
        """Move the clock to `now` (never back) and do what falls due by then: starting timeouts, policy clocks."""
        self._tick(now)
        self._advance(self.now)

    # ---- QueueControl ------------------------------------------------------------------------

    def queue_paths(self, under: str) -> list[str]:
        """The paths of the queues directly below `under` (none when it does not exist)."""
        queue = self.tree.find(under)
        return sorted(child.path for child in queue.children.values()) if queue else []

    def ensure_queue(self, path: str, guaranteed: Resources, maximum: Resources | None = None) -> None:
        """Create the leaf (and parents) if missing, else set its guaranteed and max; applications stay."""
        guaranteed = guaranteed if isinstance(guaranteed, Resources) else Resources(guaranteed)
        maximum = maximum if maximum is None or isinstance(maximum, Resources) else Resources(maximum)
        queue = self.tree.find(path)
        if queue is not None and queue.settings.guaranteed == guaranteed and queue.settings.maximum == maximum:
            return  # the follower re-states every queue each round: most rounds change nothing (checked before)
        if maximum is not None and not guaranteed.fits_in(maximum):
            raise QueueError(path, f"guaranteed {guaranteed} is more than max {maximum}")
        if queue is None:
            self._create(path, None, guaranteed, maximum)
            return
        queue.settings = replace(queue.settings, guaranteed=guaranteed, maximum=maximum)
        if queue.parent is not None and queue.parent.ranked is not None:
            queue.parent.ranked.put(queue)
        if queue.ordering is not None:
            queue.ordering.invalidate()

    def remove_queue(self, path: str) -> None:
        """Remove a queue that holds no applications (QueueError otherwise)."""
        queue = self.tree.get(path)
        self.tree.remove(queue)
        if queue.parent is not None and queue.parent.ranked is not None:
            queue.parent.ranked.discard(queue)
        self.starved_since.pop(queue.path, None)
        if queue.parent is not None and queue.parent.path == self.config.plan_queue:
            self._ended_reservations.add(reservation_of_queue(queue.name))

    def applications_in(self, path: str) -> list[str]:
        """The ids of the applications in the leaf at `path`, oldest first."""
        queue = self.tree.get(path)
        return [app.id for app in sorted(queue.apps.values(), key=lambda app: (app.submitted, app.id))]

    def move_application(self, app_id: str, path: str) -> None:
        """Move an application, with its running containers, to the leaf at `path`."""
        app = self._live(app_id)
        target = self.tree.leaf(path)
        source = self.tree.get(app.queue)
        if target is source:
            return
        was_runnable = app.runnable
        if was_runnable:
            self._pending(app, -app.pending, propagate_only=True)
            self._ordering(app).remove(app, self.now)
        self.limits.release(app, source)
        self._charge(source, -1 * app.used)
        del source.apps[app.id]
        app.queue = target.path
        for container in app.containers.values():
            container.queue = target.path
        target.apps[app.id] = app
        self._charge(target, app.used)
        if was_runnable or self.limits.can_run(app, target):
            self._admit(app, target, self.now)  # a running application keeps running, even past a limit
        else:
            self.limits.hold(app)
        self._promote(self.now)

    # ---- internals ---------------------------------------------------------------------------

    def _resolve(self, app_id: str, user: str, groups: tuple[str, ...], queue: str | None,
                 reservation: str | None) -> str:
        if reservation is not None:
            return self._reservation_leaf(app_id, reservation)
        answer = self.placement.place(Submission(app_id, user, tuple(groups), queue), self.tree)
        if isinstance(answer, Refused):
            self.rejected[app_id] = answer.reason
            raise PlacementRejected(app_id, answer.reason)
        return answer.path

    def _reservation_leaf(self, app_id: str, reservation: str) -> str:
        """The path of the reservation's leaf under the plan queue; PlacementRejected when it is not open."""
        name = reservation_queue(reservation)
        path = f"{self.config.plan_queue}.{name}"
        found = self.tree.find(path)
        if found is not None and found.is_leaf and name != self.config.default_queue:
            return found.path
        if name == self.config.default_queue:
            reason = f"reservation `{reservation}` would be the plan's default queue `{path}`, not a reservation's"
        elif reservation in self._ended_reservations:
            reason = f"reservation `{reservation}` is no longer active (its window has ended)"
        else:
            reason = f"reservation `{reservation}` is not active: no queue `{path}` (unknown, or not started yet)"
        self.rejected[app_id] = reason
        raise PlacementRejected(app_id, reason)

    def _allocate_one(self, cycle: _Cycle, now: float) -> Allocation | None:
        queue = self.tree.root
        while not cycle.full:
            if queue.is_leaf:
                app = self._leaf_ordering(queue).first(cycle.skipped)
                if app is not None:
                    allocation = self._try(app, queue, cycle, now)
                    if allocation is not None:
                        return allocation
                    cycle.skipped.add(app.id)
                    continue
                cycle.exhausted.add(queue.path)
            else:
                assert queue.ranked is not None
                child = queue.ranked.first(lambda q: q.path not in cycle.exhausted)
                if child is not None:
                    if child.is_leaf:
                        cycle.leaves[child.path] = child
                    queue = child
                    continue
                if queue.parent is None:
                    return None
                cycle.exhausted.add(queue.path)
            assert queue.parent is not None
            queue = queue.parent
        return None

    def _try(self, app: Application, leaf: Queue, cycle: _Cycle, now: float) -> Allocation | None:
        for ask in app.ranked_asks():
            amount = ask.resources
            if any(shape.fits_in(amount) for shape in cycle.failed_shapes) or not leaf.headroom_allows(amount):
                continue
            node = self.nodes.first_fit(amount)
            if node is None:
                cycle.failed_shapes.append(amount)
                cycle.full = all(any(failed.fits_in(shape) for failed in cycle.failed_shapes) for shape in self._shapes)
                continue
            return self._allocate(app, ask, node, leaf, now)
        return None

    def _serve_holds(self, now: float) -> list[Allocation]:
        """Allocate the asks preemption made room for, on the nodes it made room on."""
        served = []
        holds, self._holds = self._holds, []
        for node_name, app_id, ask_id in holds:
            node = self.nodes.by_name.get(node_name)
            app = self.apps.get(app_id)
            ask = app.asks.get(ask_id) if app is not None and not app.state.finished else None
            if node is None or app is None or ask is None or not app.runnable:
                continue
            leaf = self.tree.get(app.queue)
            if node.fits(ask.resources) and leaf.headroom_allows(ask.resources):
                served.append(self._allocate(app, ask, node, leaf, now))
        return served

    def _note_starvation(self, now: float) -> None:
        """Record since when each guaranteed leaf has been below its guarantee while asking."""
        for leaf in self.tree.leaves():
            starved = leaf.pending > 0 and leaf.below_guarantee()
            if starved:
                self.starved_since.setdefault(leaf.path, now)
            else:
                self.starved_since.pop(leaf.path, None)

    def _end(self, app: Application, state: AppState, reason: str | None, now: float) -> None:
        for container in self.containers_of(app.id):
            self.release(container.id, now)
        leaf = self.tree.get(app.queue)
        if app.runnable:
            self._pending(app, -app.pending, propagate_only=True)
            self._leaf_ordering(leaf).remove(app, now)
        app.pending = 0
        for ask in app.asks.values():
            self._forget_shape(ask.resources, ask.count)
        app.asks.clear()
        self.limits.release(app, leaf)
        del leaf.apps[app.id]
        app.reason = reason
        self._set_state(app, state, now)
        self._promote(now)
