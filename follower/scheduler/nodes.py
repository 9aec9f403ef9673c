"""Nodes and the node sorting policies, registered by name.

As YuniKorn's node sorting (docs "Sorting Policies", "Resource weighting"): a node's use is the
weighted average of its used fractions (weights per resource, default 1 for `memory` and `vcores`,
other resources ignored unless weighted). `fair` tries the least used node first, `binpacking` the
most used; ties by node name. The first node in that order that fits the ask wins.

Speed: when no node has room for a shape, `NodeSet` remembers it, and until then asks only the nodes
whose free room has grown since (a container released, a node added) instead of every node again:
a busy cluster tries each full shape once, not once per cycle. The answer is the same node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from follower.scheduler.applications import Container
from follower.scheduler.ranking import Ranked
from follower.scheduler.resources import EPSILON, Resources
from rdl.registry import Registry

DEFAULT_WEIGHTS: Mapping[str, float] = {"memory": 1.0, "vcores": 1.0}


@dataclass(eq=False)
class Node:
    """A node: its capacity, what is allocated on it, and the containers it runs."""

    name: str
    capacity: Resources
    used: Resources = field(default_factory=Resources)
    containers: dict[str, Container] = field(default_factory=dict)
    schedulable: bool = True

    def free(self) -> Resources:
        return self.capacity - self.used

    def fits(self, amount: Resources) -> bool:
        """Whether `amount` more fits on this node."""
        capacity, used = self.capacity, self.used
        for name, need in amount.items():  # noqa: SIM110 - a loop, not all(...): this runs for every node looked at
            if need > capacity.get(name) - used.get(name) + EPSILON:
                return False
        return True


def utilisation(node: Node, weights: Mapping[str, float]) -> float:
    """The weighted average of the node's used fractions over the weighted resources it has."""
    total = weighted = 0.0
    for name, weight in weights.items():
        capacity = node.capacity.get(name)
        if weight > 0 and capacity > 0:
            weighted += weight * node.used.get(name) / capacity
            total += weight
    return weighted / total if total else 0.0


NodeKey = Callable[[Node], Any]
Shape = tuple[tuple[str, float], ...]


def shape_of(amount: Resources) -> Shape:
    """An ask's amounts as an exact, hashable key (Resources compare with a tolerance)."""
    return tuple(sorted(amount.items()))


def fair(weights: Mapping[str, float]) -> NodeKey:
    """Least used first."""
    return lambda node: (utilisation(node, weights), node.name)


def binpacking(weights: Mapping[str, float]) -> NodeKey:
    """Most used first."""
    return lambda node: (-utilisation(node, weights), node.name)


NODE_POLICIES: Registry[Callable[[Mapping[str, float]], NodeKey]] = Registry.of(
    "node policy", {"fair": fair, "binpacking": binpacking})


class NodeSet:
    """The cluster's nodes, kept in the node policy's order."""

    def __init__(self, policy: str = "fair", weights: Mapping[str, float] | None = None) -> None:
        self.key = NODE_POLICIES.get(policy)(dict(weights if weights is not None else DEFAULT_WEIGHTS))
        self.policy = policy
        self.by_name: dict[str, Node] = {}
        self.ranked: Ranked[Node] = Ranked(self.key, lambda node: node.name, lambda node: node.schedulable)
        self.capacity = Resources()
        self._grown: list[Node] = []  # nodes whose free room grew, in the order it did
        self._full: dict[Shape, int] = {}  # shape -> len(_grown) when no node had room for it

    def add(self, node: Node) -> None:
        self.by_name[node.name] = node
        self.ranked.put(node)
        self.capacity = self.capacity + node.capacity
        self._grew(node)

    def remove(self, node: Node) -> None:
        del self.by_name[node.name]
        self.ranked.discard(node)
        self.capacity = self.capacity - node.capacity

    def take(self, node: Node, amount: Resources) -> None:
        """`amount` more is used on `node`."""
        node.used = node.used + amount
        self.ranked.put(node)

    def give_back(self, node: Node, amount: Resources) -> None:
        """`amount` less is used on `node`."""
        node.used = node.used - amount
        self.ranked.put(node)
        self._grew(node)

    def first_fit(self, amount: Resources) -> Node | None:
        """The first node in policy order with room for `amount`."""
        shape, since = self._full_since(amount)
        if since is not None:
            node = self._first_grown(amount, since)
            if node is not None:  # room again: the mark would only grow stale, the policy order finds it sooner
                del self._full[shape]
        else:
            node = self.ranked.first(lambda candidate: candidate.fits(amount))
            self.ranked.unpark()
        if node is None:
            self._full[shape_of(amount)] = len(self._grown)
        return node

    def ordered(self) -> list[Node]:
        """Every schedulable node in policy order."""
        return self.ranked.ordered()

    def _grew(self, node: Node) -> None:
        self._grown.append(node)
        if len(self._grown) > 4 * len(self.by_name) + 64:  # older marks would cost more than a full look
            self._grown.clear()
            self._full.clear()

    def _full_since(self, amount: Resources) -> tuple[Shape, int | None]:
        """A shape in `amount` that no node had room for, and since when (a mark in `_grown`), if known."""
        shape = shape_of(amount)
        since = self._full.get(shape)
        if since is None and self._full:
            contained = [(mark, known) for known, mark in self._full.items()
                         if all(need <= amount.get(name) for name, need in known)]  # exactly, without slack
            if contained:
                since, shape = max(contained)
        if since is not None and len(self._grown) - since > len(self.by_name) // 4:
            return shape, None  # so many nodes grew that the policy order is the quicker way
        return shape, since

    def _first_grown(self, amount: Resources, since: int) -> Node | None:
        """The first node in policy order with room for `amount`, among those that grew since `since`."""
        best: tuple[Any, str] | None = None
        found = None
        for node in set(self._grown[since:]):
            if node.schedulable and node.fits(amount) and self.by_name.get(node.name) is node:
                rank = (self.key(node), node.name)
                if best is None or rank < best:
                    best, found = rank, node
        return found
