"""A small directed graph for precedence: nodes with attributes, edges in insertion order, the longest path.

`rayon check` computes every reservation's critical path; importing networkx for it cost more than
the rest of the command's start-up. This keeps the few operations it used, with the same order of
nodes and edges and the same choice among equally long paths as `networkx.dag_longest_path`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class Dag:
    """Nodes (each with a dict of attributes) and directed edges, both kept in insertion order."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.succ: dict[str, dict[str, dict[str, Any]]] = {}
        self.pred: dict[str, dict[str, dict[str, Any]]] = {}

    def add_node(self, name: str, **attributes: Any) -> None:
        """Adds `name` (if new) and sets the given attributes on it."""
        if name not in self.nodes:
            self.nodes[name], self.succ[name], self.pred[name] = {}, {}, {}
        self.nodes[name].update(attributes)

    def add_edge(self, u: str, v: str, **attributes: Any) -> None:
        """Adds the edge u → v, and either end that is new."""
        self.add_node(u)
        self.add_node(v)
        data = self.succ[u].setdefault(v, {})
        data.update(attributes)
        self.pred[v][u] = data

    def add_edges_from(self, edges: Iterable[tuple[str, str]]) -> None:
        for u, v in edges:
            self.add_edge(u, v)

    def update(self, other: Dag) -> None:
        """Adds every node (with its attributes) and edge of `other`."""
        for name, attributes in other.nodes.items():
            self.add_node(name, **attributes)
        for u, v in other.edges():
            self.add_edge(u, v, **other.succ[u][v])

    def edges(self) -> Iterator[tuple[str, str]]:
        return ((u, v) for u, targets in self.succ.items() for v in targets)

    def number_of_nodes(self) -> int:
        return len(self.nodes)

    def number_of_edges(self) -> int:
        return sum(len(targets) for targets in self.succ.values())

    def topological_order(self) -> list[str]:
        """Kahn's order, generation by generation (as networkx orders it, so ties break alike)."""
        indegree = {name: len(sources) for name, sources in self.pred.items() if sources}
        generation = [name for name, sources in self.pred.items() if not sources]
        order: list[str] = []
        while generation:
            order += generation
            following = []
            for name in generation:
                for child in self.succ[name]:
                    indegree[child] -= 1
                    if indegree[child] == 0:
                        following.append(child)
                        del indegree[child]
            generation = following
        if indegree:
            raise ValueError("the graph has a cycle")
        return order

    def longest_path(self, weight: str = "weight") -> list[str]:
        """The heaviest path by the edges' `weight` (1 when absent); the first found among equals."""
        dist: dict[str, tuple[float, str]] = {}
        for v in self.topological_order():
            reach = [(dist[u][0] + data.get(weight, 1), u) for u, data in self.pred[v].items()]
            best = max(reach, key=lambda pair: pair[0]) if reach else (0, v)
            dist[v] = best if best[0] >= 0 else (0, v)
        if not dist:
            return []
        path, previous, node = [], None, max(dist, key=lambda name: dist[name][0])
        while previous != node:
            path.append(node)
            previous, node = node, dist[node][1]
        return path[::-1]
