"""Preemption: take containers back from queues above their guarantee for a queue starved below its own.

A leaf queue with a guarantee is starved when it uses less than its guarantee and has applications
its policy would serve with asks pending. Once it has been starved for the configured delay (as
YARN Fair Scheduler's `minSharePreemptionTimeout`), the preemptor plans, ask by ask in the order the
queue's policy serves them, until what it plans covers the shortfall (guarantee minus usage):

- an ask that fits a node's free room (less what earlier asks in this round already hold there)
  needs no victim: the room is held for it, on the first such node by name;
- otherwise, on each node, victims are taken youngest container first from other queues above
  their guarantee, never taking a queue (or an ancestor it does not share with the starved queue)
  below its guarantee, until the ask fits; the node needing the fewest victims wins, ties by the
  youngest victims, then node name.

The room freed is held for that ask, and the scheduler serves held asks first in its next cycle.

When the delay starts is the scheduler's `preemption.model`. `yarn` (the default): when the queue became starved, as
above. `yunikorn` (yunikorn-core 1.4 to 1.9, `Preemptor.CheckPreconditions`): at each ask's creation; an ask then
tries every `retry` (15 s) while it waits, whether or not its queue is starved, so in a starved queue only the asks
at such a try plan victims (`ask_due`, `next_try`); the others wait for their next one. The victims are chosen as
above (yunikorn-core also spares an application's originator pod where it can: not modelled).

Speed (the plain way looks at every node for every ask): a round first looks for free room (no
victims: nothing beats it). Otherwise it indexes once what cannot change while it plans — per node,
the containers whose own queue could spare them, youngest first — and per ask shape a lower bound on
each node's rank: the fewest of those containers that could make room (largest first, resource by
resource), and when the youngest that many were allocated. Nodes are tried in the order of that
bound, and the search stops at the first node whose bound is worse than the best rank found; a
node's own victim search stops once it needs more victims than the best. Nodes a claim touched are
bounded afresh. None of this changes which node or victims win (a test checks it against the plain
search on random clusters).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from follower.scheduler.applications import Application, Ask, Container
from follower.scheduler.nodes import Node, Shape, shape_of
from follower.scheduler.queues import Queue
from follower.scheduler.resources import EPSILON, Resources

TIME_SLACK = 1e-6  # seconds: two times this close are one instant
BOUND_SLACK = 1e-6  # relative: the lower bounds err low by this much, so float noise never hides a winner

Guards = tuple[tuple[str, Queue], ...]  # a queue's ancestors (itself first) that guarantee something
Rank = tuple[int, float, str]  # victims, minus the oldest victim's allocation time, node name: smallest wins
Best = tuple[Rank, Node, list[Container]]
Bound = tuple[int, float, str, Node]  # a lower bound on a node's rank, and the node


@dataclass(frozen=True, slots=True)
class Claim:
    """Room on `node` for one container of `ask`, bought by taking `victims` (possibly none)."""

    queue: Queue
    app: Application
    ask: Ask
    node: Node
    victims: tuple[Container, ...]


class _Round:
    """One planning round: what it claimed so far, and an index of what does not change while it plans."""

    def __init__(self, nodes: list[Node], queue_of: dict[str, Queue]) -> None:
        self.nodes = nodes
        self.by_name = {node.name: node for node in nodes}
        self.queue_of = queue_of
        self.held: dict[str, Resources] = {}  # room held per node (every node a claim touched is here)
        self.freed: dict[str, Resources] = {}  # victims' room per node
        self.taken: dict[str, Resources] = {}  # victims' usage per queue path
        self.victims: set[str] = set()
        self.touched: dict[str, Node] = {}  # the nodes claims hold room on
        self.guards: dict[str, Guards] = {}
        self.spare: dict[str, list[Container]] = {}  # per node: containers their own queue could spare, youngest first
        self.free: dict[str, Resources] = {}  # per node with spare containers: its free room (fixed until touched)
        self._indexed = False
        self._largest: dict[tuple[str, str], list[float]] = {}  # (node, resource) -> running sums, largest spare first
        self._room: dict[str, Resources] = {}  # per touched node: its room now
        self._first: dict[str, int] = {}  # per node: where in `spare` the containers not yet taken start
        self._with_room: dict[Shape, list[Node]] = {}
        self._may_hold: dict[Shape, list[Bound]] = {}

    def _index(self) -> None:
        """Find each node's spare containers, youngest first, once, when a claim first needs victims."""
        self._indexed = True
        for node in self.nodes:
            spare = sorted((c for c in node.containers.values() if self._spare(c)),
                           key=lambda c: (-c.allocated_at, -c.seq))
            if spare:
                self.spare[node.name] = spare
                self.free[node.name] = node.free()

    def _spare(self, container: Container) -> bool:
        """Whether the container's own leaf stays at or above its guarantee without it (a round only takes more)."""
        queue = self.queue_of.get(container.queue)
        if queue is None:
            return False
        guards = self.guards_of(queue)
        return not guards or guards[0][1] is not queue or _keeps_guarantee(queue, None, None, container.resources)

    def guards_of(self, queue: Queue) -> Guards:
        """The queue and its ancestors that guarantee some resource, nearest first."""
        guards = self.guards.get(queue.path)
        if guards is None:
            guards = self.guards[queue.path] = tuple(
                (ancestor.path, ancestor) for ancestor in queue.ancestors()
                if any(amount > 0 for amount in ancestor.guaranteed.values()))
        return guards

    def room(self, node: Node) -> Resources:
        """The node's free room now in this round: victims' room added, held room taken off."""
        room = self._room.get(node.name)
        if room is None:
            room = self.free.get(node.name)
        return room if room is not None else node.free()

    def youngest(self, node: Node) -> float | None:
        """When the youngest spare container on `node` not yet taken in this round was allocated (None: none)."""
        spare = self.spare.get(node.name, [])
        first = self._first.get(node.name, 0)
        while first < len(spare) and spare[first].id in self.victims:
            first += 1
        self._first[node.name] = first
        return spare[first].allocated_at if first < len(spare) else None

    def first_with_room(self, amount: Resources) -> Node | None:
        """The first node by name whose room in this round holds `amount`."""
        shape = shape_of(amount)
        nodes = self._with_room.get(shape)
        if nodes is None:  # a node no claim touched keeps its free room for the whole round
            nodes = self._with_room[shape] = [node for node in self.nodes if node.fits(amount)]
        untouched = next((node for node in nodes if node.name not in self.touched), None)
        found = [node for node in self.touched.values() if amount.fits_in(self._room[node.name])]
        if untouched is not None:
            found.append(untouched)
        return min(found, key=lambda node: node.name) if found else None

    def may_hold(self, amount: Resources) -> list[Bound]:
        """Every node whose room and spare containers could hold `amount` (before any claim), with a lower bound on
        its rank: the fewest victims it could need, minus when the youngest that many were allocated, its name."""
        shape = shape_of(amount)
        bounds = self._may_hold.get(shape)
        if bounds is None:
            if not self._indexed:
                self._index()
            bounds = []
            for name, spare in self.spare.items():
                fewest = self._fewest(name, amount)
                if fewest is not None:
                    # its victims are `fewest` or more of these, youngest first: the oldest is no younger than this
                    bounds.append((fewest, -spare[fewest - 1].allocated_at, name, self.by_name[name]))
            bounds.sort(key=lambda bound: bound[:3])
            self._may_hold[shape] = bounds
        return bounds

    def _fewest(self, name: str, amount: Resources) -> int | None:
        """The fewest spare containers on node `name` that could add up to `amount` with its free room, resource
        by resource, largest first (at least one; None when all of them could not)."""
        free = self.free[name]
        fewest = 1
        for resource, value in amount.items():
            need = value - free.get(resource) - BOUND_SLACK * max(1.0, abs(value))
            if need > 0:
                sums = self._largest.get((name, resource))
                if sums is None:
                    values = sorted((c.resources.get(resource) for c in self.spare[name]), reverse=True)
                    sums = self._largest[(name, resource)] = list(itertools.accumulate(values))
                count = bisect.bisect_left(sums, need) + 1
                if count > len(sums):
                    return None
                fewest = max(fewest, count)
        return fewest

    def claim(self, node: Node, amount: Resources, victims: list[Container]) -> None:
        """Hold `amount` on `node`, bought by `victims`."""
        self.touched[node.name] = node
        self.held[node.name] = self.held.get(node.name, Resources()) + amount
        for victim in victims:
            self.victims.add(victim.id)
            self.freed[node.name] = self.freed.get(node.name, Resources()) + victim.resources
            for ancestor in self.queue_of[victim.queue].ancestors():
                self.taken[ancestor.path] = self.taken.get(ancestor.path, Resources()) + victim.resources
        self._room[node.name] = node.free() + self.freed.get(node.name, Resources()) - self.held[node.name]


def shortfall(queue: Queue) -> Resources:
    """How far the queue is below its guarantee, per guaranteed resource."""
    return Resources({name: max(amount - queue.used.get(name), 0.0)
                      for name, amount in queue.guaranteed.items() if amount > 0})


def ask_due(ask: Ask, now: float, delay: float, retry: float) -> bool:
    """The `yunikorn` model: whether `ask` tries preemption at `now`. A waiting ask is tried at every cycle, but a try
    passes only `delay` after the ask was made, and then only `retry` after the last one: its tries fall at
    `created + delay + k·retry` whether or not its queue was starved then. So it tries now when `now` is one of those
    times and it has not tried at it yet (the simulator wakes at them: `next_try`)."""
    first = ask.created + delay
    if now < first - TIME_SLACK:
        return False
    latest = first + retry * math.floor((now - first + TIME_SLACK) / retry)
    return now - latest <= TIME_SLACK and (ask.tried is None or ask.tried < latest - TIME_SLACK)


def next_try(ask: Ask, now: float, delay: float, retry: float) -> float:
    """The `yunikorn` model: when `ask`'s next try after `now` falls."""
    first = ask.created + delay
    if now < first - TIME_SLACK:
        return first
    return first + retry * (math.floor((now - first + TIME_SLACK) / retry) + 1)


def plan(starved: Iterable[Queue], nodes: list[Node], queue_of: dict[str, Queue],
         due: Callable[[Ask], bool] | None = None) -> list[Claim]:
    """Claims, starved queue by starved queue (in the order given), to bring each up to its guarantee.

    `nodes` are in name order; `queue_of` maps every queue's path to it; `due` (the `yunikorn` model) says which
    asks try now: the others are passed over (each ask is asked once).
    """
    round_ = _Round(nodes, queue_of)
    claims: list[Claim] = []
    for queue in starved:
        claims += _for_queue(queue, round_, due)
    return claims


def _for_queue(queue: Queue, round_: _Round, due: Callable[[Ask], bool] | None) -> list[Claim]:
    need = shortfall(queue)
    gained = Resources()
    claims: list[Claim] = []
    assert queue.ordering is not None
    for app in queue.ordering.ordered():
        for ask in app.ranked_asks():
            if due is not None and not due(ask):
                continue
            for _ in range(ask.count):
                if not need.any_positive() or not queue.headroom_allows(gained + ask.resources):
                    return claims
                claim = _claim(queue, app, ask, round_)
                if claim is None:
                    break
                claims.append(claim)
                gained = gained + ask.resources
                need = (need - ask.resources).positive()
    return claims


def _claim(queue: Queue, app: Application, ask: Ask, round_: _Round) -> Claim | None:
    amount = ask.resources
    node = round_.first_with_room(amount)
    if node is not None:  # no victims: nothing beats it
        round_.claim(node, amount, [])
        return Claim(queue, app, ask, node, ())
    best: Best | None = None
    protected = {ancestor.path for ancestor in queue.ancestors()}
    for fewest, negated, name, node in _candidates(amount, round_):
        if best is not None and best[0] < (fewest, negated, name):
            break  # no node from here can rank before the best
        best = _better(best, node, amount, protected, round_)
    if best is None:
        return None
    _, node, victims = best
    round_.claim(node, amount, victims)
    return Claim(queue, app, ask, node, tuple(victims))


def _candidates(amount: Resources, round_: _Round) -> Iterator[Bound]:
    """The nodes that may hold `amount`, each with a lower bound on its rank, smallest bound first: touched
    nodes (their spare containers change as the round goes) merged into the untouched ones."""
    untouched = (bound for bound in round_.may_hold(amount) if bound[2] not in round_.touched)
    touched = sorted((1, -youngest, node.name, node) for node in round_.touched.values()
                     if (youngest := round_.youngest(node)) is not None)
    return heapq.merge(touched, untouched, key=lambda bound: bound[:3])


def _better(best: Best | None, node: Node, amount: Resources, protected: set[str], round_: _Round) -> Best | None:
    """`best`, or `node` with its victims when they rank before it."""
    victims = _victims_on(node, amount, protected, round_, best[0] if best is not None else None)
    if victims is None:
        return best
    rank = (len(victims), -victims[-1].allocated_at, node.name)  # the last taken is the oldest
    return (rank, node, victims) if best is None or rank < best[0] else best


def _victims_on(node: Node, amount: Resources, protected: set[str], round_: _Round,
                beat: Rank | None) -> list[Container] | None:
    """The youngest-first victims on `node` that make room for `amount`, or None when none can (or when it
    would take more victims than `beat` has)."""
    room = round_.room(node)
    taken: dict[str, dict[str, float]] = {}
    victims: list[Container] = []
    for container in round_.spare[node.name]:
        if container.id in round_.victims or not _may_take(container, protected, round_, taken):
            continue
        victims.append(container)
        room = room + container.resources
        if amount.fits_in(room):
            return victims
        if beat is not None and len(victims) >= beat[0]:
            return None  # one more victim is needed: it cannot beat the best node
        for path, _ in round_.guards_of(round_.queue_of[container.queue]):
            mine = taken.setdefault(path, {})
            for name, value in container.resources.items():
                mine[name] = mine.get(name, 0.0) + value
    return None


def _may_take(container: Container, protected: set[str], round_: _Round, taken: dict[str, dict[str, float]]) -> bool:
    """Whether taking `container` leaves its queue, and every ancestor not shared, at or above guarantee."""
    victim = round_.queue_of.get(container.queue)
    if victim is None or victim.path in protected:
        return False
    for path, ancestor in round_.guards_of(victim):
        if path in protected:
            break
        if not _keeps_guarantee(ancestor, round_.taken.get(path), taken.get(path), container.resources):
            return False
    return True


def _keeps_guarantee(queue: Queue, round_taken: Resources | None, local_taken: dict[str, float] | None,
                     amount: Resources) -> bool:
    """Whether `queue` stays at or above its guarantee once `amount` more is taken from it."""
    used = queue.used
    for name, guaranteed in queue.guaranteed.items():
        if guaranteed > 0:
            after = used.get(name)
            if round_taken is not None:
                after -= round_taken.get(name)
            if local_taken is not None:
                after -= local_taken.get(name, 0.0)
            if after - amount.get(name) < guaranteed - EPSILON:
                return False
    return True
