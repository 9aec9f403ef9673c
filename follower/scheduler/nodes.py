"""Nodes and the node sorting policies, registered by name.

As YuniKorn's node sorting (docs "Sorting Policies", "Resource weighting"): a node's use is the
weighted average of its used fractions (weights per resource, default 1 for `memory` and `vcores`,
other resources ignored unless weighted). `fair` tries the least used node first, `binpacking` the
most used; ties by node name. The first node in that order that fits the ask wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from follower.scheduler.applications import Container
from follower.scheduler.ranking import Ranked
from follower.scheduler.resources import EPSILON, Resources

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
        return all(need <= capacity.get(name) - used.get(name) + EPSILON for name, need in amount.items())


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


def fair(weights: Mapping[str, float]) -> NodeKey:
    """Least used first."""
    return lambda node: (utilisation(node, weights), node.name)


def binpacking(weights: Mapping[str, float]) -> NodeKey:
    """Most used first."""
    return lambda node: (-utilisation(node, weights), node.name)


NODE_POLICIES: dict[str, Callable[[Mapping[str, float]], NodeKey]] = {"fair": fair, "binpacking": binpacking}


class NodeSet:
    """The cluster's nodes, kept in the node policy's order."""

    def __init__(self, policy: str = "fair", weights: Mapping[str, float] | None = None) -> None:
        key = NODE_POLICIES[policy](dict(weights if weights is not None else DEFAULT_WEIGHTS))
        self.policy = policy
        self.by_name: dict[str, Node] = {}
        self.ranked: Ranked[Node] = Ranked(key, lambda node: node.name, lambda node: node.schedulable)
        self.capacity = Resources()

    def add(self, node: Node) -> None:
        self.by_name[node.name] = node
        self.ranked.put(node)
        self.capacity = self.capacity + node.capacity

    def remove(self, node: Node) -> None:
        del self.by_name[node.name]
        self.ranked.discard(node)
        self.capacity = self.capacity - node.capacity

    def first_fit(self, amount: Resources) -> Node | None:
        """The first node in policy order with room for `amount`."""
        node = self.ranked.first(lambda candidate: candidate.fits(amount))
        self.ranked.unpark()
        return node

    def ordered(self) -> list[Node]:
        """Every schedulable node in policy order."""
        return self.ranked.ordered()
