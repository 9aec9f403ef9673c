"""The precedence graph of a reservation: its atoms and the `order` edges between them.

Each atom is a node weighted by its least duration in steps; `order` joins consecutive
children through a zero-weight join node (linear in size, where direct edges would be
quadratic). For `any`, only the alternative with the shortest critical path is kept:
the graph describes the quickest way the reservation could run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rdl.tree import All, Any, Atom, Expr, Order, Window, atom_label, child_path

if TYPE_CHECKING:
    import networkx as nx  # imported where a graph is built: the rare paths (a check that failed, a summary)

SINK = "<end>"

AtomSteps = Callable[[Atom], int | None]


@dataclass(frozen=True, slots=True)
class CriticalPath:
    steps: int
    atoms: tuple[str, ...]


def precedence_graph(expr: Expr, atom_steps: AtomSteps, path: str = "0",
                     parent: Expr | None = None) -> nx.DiGraph | None:
    """The DAG of atoms (attribute `steps`) and order edges; None when some required atom can never fit.

    `path` and `parent` place `expr` in its reservation, so atoms are labelled as users see them."""
    import networkx as nx

    graph = nx.DiGraph()
    return graph if _add(graph, expr, path, atom_steps, parent) is not None else None


def _add(graph: nx.DiGraph, node: Expr, path: str, atom_steps: AtomSteps,
         parent: Expr | None = None) -> tuple[list[str], list[str]] | None:
    """Adds `node` to `graph`; returns its entry and exit nodes, or None if it can never fit."""
    if isinstance(node, Atom):
        steps = atom_steps(node)
        if steps is None:
            return None
        name = atom_label(node, path, parent)
        graph.add_node(name, steps=steps, atom=True)
        return [name], [name]
    if isinstance(node, Window):
        return _add(graph, node.child, child_path(node, path, 0), atom_steps, node)
    if isinstance(node, Any):
        return _add_cheapest(graph, node, path, atom_steps)
    parts = []
    for index, child in enumerate(node.children):
        part = _add(graph, child, f"{path}.{index}", atom_steps)
        if part is None:
            return None
        parts.append(part)
    if isinstance(node, All):
        return [n for entry, _ in parts for n in entry], [n for _, exits in parts for n in exits]
    assert isinstance(node, Order)
    for index in range(len(parts) - 1):
        join = f"{path}>{index}"
        graph.add_node(join, steps=0, atom=False)
        graph.add_edges_from((n, join) for n in parts[index][1])
        graph.add_edges_from((join, n) for n in parts[index + 1][0])
    return parts[0][0], parts[-1][1]


def _add_cheapest(graph: nx.DiGraph, node: Any, path: str, atom_steps: AtomSteps) -> tuple[list[str], list[str]] | None:
    import networkx as nx

    best: tuple[int, nx.DiGraph, tuple[list[str], list[str]]] | None = None
    for index, child in enumerate(node.children):
        sub = nx.DiGraph()
        ends = _add(sub, child, f"{path}.{index}", atom_steps)
        if ends is None:
            continue
        length = longest(sub).steps
        if best is None or length < best[0]:
            best = (length, sub, ends)
    if best is None:
        return None
    graph.update(best[1])
    return best[2]


def longest(graph: nx.DiGraph) -> CriticalPath:
    """The critical path: the heaviest chain of atoms through the graph."""
    import networkx as nx

    if graph.number_of_nodes() == 0:
        return CriticalPath(0, ())
    weighted = nx.DiGraph()
    for name, data in graph.nodes(data=True):
        weighted.add_edge(name, SINK, weight=data["steps"])
    weighted.add_edges_from((u, v, {"weight": graph.nodes[u]["steps"]}) for u, v in graph.edges)
    path = nx.dag_longest_path(weighted, weight="weight")
    steps = sum(graph.nodes[n]["steps"] for n in path if n != SINK)
    return CriticalPath(steps, tuple(n for n in path if n != SINK and graph.nodes[n]["atom"]))


def critical_steps(expr: Expr, atom_steps: AtomSteps) -> int | None:
    """The critical path's length alone, folded over the tree (`order` adds up, `all` takes the longest, `any` its
    shortest alternative that can fit): what `critical_path` gives as `steps`, without building the graph, for a
    check that names the path only when it fails."""
    if isinstance(expr, Atom):
        return atom_steps(expr)
    if isinstance(expr, Window):
        return critical_steps(expr.child, atom_steps)
    lengths = [critical_steps(child, atom_steps) for child in expr.children]
    if isinstance(expr, Any):
        possible = [length for length in lengths if length is not None]
        return min(possible) if possible else None
    if any(length is None for length in lengths):
        return None
    known = [length for length in lengths if length is not None]
    return sum(known) if isinstance(expr, Order) else max(known, default=0)


def critical_path(expr: Expr, atom_steps: AtomSteps, path: str = "0",
                  parent: Expr | None = None) -> CriticalPath | None:
    """The least time the expression takes on an empty cluster; None when it can never fit."""
    graph = precedence_graph(expr, atom_steps, path, parent)
    return None if graph is None else longest(graph)
