"""The precedence graph's own DAG: the same longest path, ties included, as networkx (kept as the oracle)."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rdl.dag import Dag
from tests.rdl.support import FAST

# Edges only from a lower to a higher number, so every drawn graph is acyclic; weights may tie.
edges = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 3)), max_size=20)


@FAST
@given(edges)
def test_longest_path_is_networkx_s(drawn: list[tuple[int, int, int]]) -> None:
    ours, theirs = Dag(), nx.DiGraph()
    for u, v, weight in drawn:
        if u < v:
            ours.add_edge(str(u), str(v), weight=weight)
            theirs.add_edge(str(u), str(v), weight=weight)
    assert ours.longest_path() == nx.dag_longest_path(theirs)
    assert list(ours.edges()) == list(theirs.edges)


def test_update_keeps_attributes_and_edges() -> None:
    part = Dag()
    part.add_node("a", steps=2)
    part.add_edge("a", "b", weight=5)
    whole = Dag()
    whole.update(part)
    assert whole.nodes == {"a": {"steps": 2}, "b": {}}
    assert whole.succ["a"]["b"] == {"weight": 5}
    assert whole.number_of_nodes() == 2 and whole.number_of_edges() == 1


def test_a_cycle_is_refused() -> None:
    cycle = Dag()
    cycle.add_edges_from([("a", "b"), ("b", "a")])
    with pytest.raises(ValueError, match="cycle"):
        cycle.longest_path()
