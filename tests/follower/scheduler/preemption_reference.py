"""The preemption planner as first written (one full victim search per node per ask), kept as the reference
`follower.scheduler.preemption.plan` must agree with: the fast planner may only be faster, never different."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from follower.scheduler.applications import Application, Ask, Container
from follower.scheduler.nodes import Node
from follower.scheduler.queues import Queue
from follower.scheduler.resources import EPSILON, Resources


@dataclass(frozen=True, slots=True)
class Claim:
    """Room on `node` for one container of `ask`, bought by taking `victims` (possibly none)."""

    queue: Queue
    app: Application
    ask: Ask
    node: Node
    victims: tuple[Container, ...]


@dataclass
class _Round:
    """What one preemption round has already claimed: room held per node, usage taken per queue."""

    held: dict[str, Resources] = field(default_factory=dict)
    freed: dict[str, Resources] = field(default_factory=dict)
    taken: dict[str, Resources] = field(default_factory=dict)
    victims: set[str] = field(default_factory=set)


def shortfall(queue: Queue) -> Resources:
    """How far the queue is below its guarantee, per guaranteed resource."""
    return Resources({name: max(amount - queue.used.get(name), 0.0)
                      for name, amount in queue.guaranteed.items() if amount > 0})


def plan(starved: Iterable[Queue], nodes: list[Node], queue_of: dict[str, Queue]) -> list[Claim]:
    """Claims, starved queue by starved queue (in the order given), to bring each up to its guarantee."""
    round_ = _Round()
    claims: list[Claim] = []
    for queue in starved:
        claims += _for_queue(queue, nodes, queue_of, round_)
    return claims


def _for_queue(queue: Queue, nodes: list[Node], queue_of: dict[str, Queue], round_: _Round) -> list[Claim]:
    need = shortfall(queue)
    gained = Resources()
    claims: list[Claim] = []
    assert queue.ordering is not None
    for app in queue.ordering.ordered():
        for ask in app.ranked_asks():
            for _ in range(ask.count):
                if not need.any_positive() or not queue.headroom_allows(gained + ask.resources):
                    return claims
                claim = _claim(queue, app, ask, nodes, queue_of, round_)
                if claim is None:
                    break
                claims.append(claim)
                gained = gained + ask.resources
                need = (need - ask.resources).positive()
    return claims


def _claim(queue: Queue, app: Application, ask: Ask, nodes: list[Node],
           queue_of: dict[str, Queue], round_: _Round) -> Claim | None:
    best: tuple[tuple[int, float, str], Node, list[Container]] | None = None
    protected = {ancestor.path for ancestor in queue.ancestors()}
    for node in nodes:
        victims = _victims_on(node, ask.resources, protected, queue_of, round_)
        if victims is None:
            continue
        youngest = -min((victim.allocated_at for victim in victims), default=0.0)
        rank = (len(victims), youngest, node.name)
        if best is None or rank < best[0]:
            best = (rank, node, victims)
            if not victims:
                break
    if best is None:
        return None
    _, node, victims = best
    round_.held[node.name] = round_.held.get(node.name, Resources()) + ask.resources
    for victim in victims:
        round_.victims.add(victim.id)
        round_.freed[node.name] = round_.freed.get(node.name, Resources()) + victim.resources
        for ancestor in queue_of[victim.queue].ancestors():
            round_.taken[ancestor.path] = round_.taken.get(ancestor.path, Resources()) + victim.resources
    return Claim(queue, app, ask, node, tuple(victims))


def _victims_on(node: Node, amount: Resources, protected: set[str], queue_of: dict[str, Queue],
                round_: _Round) -> list[Container] | None:
    """The youngest-first victims on `node` that make room for `amount`, or None when none can."""
    room = node.free() + round_.freed.get(node.name, Resources()) - round_.held.get(node.name, Resources())
    if amount.fits_in(room):
        return []
    taken: dict[str, Resources] = {}
    victims = []
    for container in sorted(node.containers.values(), key=lambda c: (-c.allocated_at, -c.seq)):
        if container.id in round_.victims or not _may_take(container, protected, queue_of, round_, taken):
            continue
        victims.append(container)
        for ancestor in queue_of[container.queue].ancestors():
            taken[ancestor.path] = taken.get(ancestor.path, Resources()) + container.resources
        room = room + container.resources
        if amount.fits_in(room):
            return victims
    return None


def _may_take(container: Container, protected: set[str], queue_of: dict[str, Queue], round_: _Round,
              taken: dict[str, Resources]) -> bool:
    """Whether taking `container` leaves its queue, and every ancestor not shared, at or above guarantee."""
    victim = queue_of.get(container.queue)
    if victim is None or victim.path in protected:
        return False
    for ancestor in victim.ancestors():
        if ancestor.path in protected:
            break
        after = (ancestor.used - round_.taken.get(ancestor.path, Resources())
                 - taken.get(ancestor.path, Resources()) - container.resources)
        for name, amount in ancestor.guaranteed.items():
            if amount > 0 and after.get(name) < amount - EPSILON:
                return False
    return True
