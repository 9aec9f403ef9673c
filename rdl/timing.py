"""Whether a reservation's windows, order and gaps can all hold at once on an empty cluster.

`earliest_finish` (validate.py) runs the pieces forward as early as they go, which proves an `order` too long for its
window impossible; a `gap` also bounds how late a stage may start after the one before, which a forward pass cannot
see (`a` must end by 1h, `b` start from 3h, at most 1h apart). Here every piece's first start and last end are the
variables of a simple temporal network (each constraint a bound on a difference of two of them), and the
constraints contradict each other exactly when the network has a cycle of negative weight.

Only what must hold is written, so a contradiction found is one: an atom takes at least its least steps alone on
the cluster (exactly that for one lease, its length); an `all` starts no later and ends no earlier than each child;
an `any` only ends after it starts (its alternatives are not known to be chosen). What is left out can only hide a
contradiction, never invent one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from rdl.shape import lease_count, lease_steps, step_ceil, step_floor
from rdl.tree import All, Any, Atom, Expr, Order, Window, walk

if TYPE_CHECKING:
    import networkx as nx  # imported by `contradicts`, asked only of an order whose gaps meet windows

ORIGIN = "origin"  # the plan's step 0: absolute bounds are differences from it


def gap_meets_windows(nodes: Iterable[tuple[str, Expr]]) -> bool:
    """Whether an `order` among these nodes (a reservation's, as `walk` gives them) bounds its gaps and holds a window
    of its own: the case earliest_finish does not settle (without such a window its stages back to back meet every
    gap, in the least time)."""
    return any(isinstance(node, Order) and node.gap is not None
               and any(isinstance(inner, Window) for _, inner in walk(node)) for _, node in nodes)


def contradicts(expr: Expr, arrival: datetime, origin: datetime, step: int,
                least_steps: Callable[[Atom], int | None]) -> bool:
    """Whether no start and end of each piece satisfies every window, order and gap of `expr` (`least_steps`: an
    atom's fewest steps alone on the cluster, None when it never fits, which earlier checks report)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_node(ORIGIN)
    _add(graph, expr, "0", arrival, origin, step, least_steps)
    return bool(nx.negative_edge_cycle(graph))


def _bound(graph: nx.DiGraph, lower: str, upper: str, most: float) -> None:
    """upper - lower <= most: the edge lower -> upper of that weight (the tighter one if asked twice)."""
    if most == math.inf:
        return
    if graph.has_edge(lower, upper) and graph[lower][upper]["weight"] <= most:
        return
    graph.add_edge(lower, upper, weight=most)


def _add(graph: nx.DiGraph, node: Expr, path: str, arrival: datetime, origin: datetime, step: int,
         least_steps: Callable[[Atom], int | None]) -> tuple[str, str]:
    """The piece's start and end variables, its constraints added."""
    start, end = f"{path}.start", f"{path}.end"
    graph.add_nodes_from((start, end))
    if isinstance(node, Atom):
        least = least_steps(node)
        shortest = least if least is not None else lease_steps(node, step)
        _bound(graph, end, start, -shortest)  # end - start >= its least steps
        if lease_count(node, step) == 1:  # one lease: exactly its length
            _bound(graph, start, end, lease_steps(node, step))
        return start, end
    if isinstance(node, Window):
        inner = _add(graph, node.child, f"{path}.0", arrival, origin, step, least_steps)
        opens = node.start.resolve(arrival) if node.start is not None else arrival
        _bound(graph, inner[0], ORIGIN, -step_ceil(origin, opens, step))  # start >= the window's start
        _bound(graph, ORIGIN, inner[1], step_floor(origin, node.end.resolve(arrival), step))
        _same(graph, (start, end), inner)
        return start, end
    _bound(graph, end, start, 0)
    if isinstance(node, Any):  # an alternative that could never fit is never chosen: none is read
        return start, end
    children = [_add(graph, child, f"{path}.{index}", arrival, origin, step, least_steps)
                for index, child in enumerate(node.children)]
    if isinstance(node, Order):
        gap = None if node.gap is None else math.floor(node.gap / step + 1e-9)
        for before, after in itertools.pairwise(children):
            _bound(graph, after[0], before[1], 0)  # the next starts at or after the last ends
            if gap is not None:
                _bound(graph, before[1], after[0], gap)  # ... and at most `gap` after
        _same(graph, (start, end), (children[0][0], children[-1][1]))
    else:
        assert isinstance(node, All)
        for child_start, child_end in children:
            _bound(graph, child_start, start, 0)  # the all starts no later than each child
            _bound(graph, end, child_end, 0)  # and ends no earlier
    return start, end


def _same(graph: nx.DiGraph, outer: tuple[str, str], inner: tuple[str, str]) -> None:
    """The outer piece starts and ends where the inner one does."""
    for a, b in zip(outer, inner, strict=True):
        _bound(graph, a, b, 0)
        _bound(graph, b, a, 0)
