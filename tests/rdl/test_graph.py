"""The precedence graph and its critical path, and the validation fit checks built on it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl import All, Any, Atom, Order, Relative, Resources, Window
from rdl.graph import critical_path, critical_steps, longest, precedence_graph
from rdl.shape import min_steps
from tests.rdl.support import FILE, SMALL_CLUSTER, body, errors_of, parse_and_validate

IMPOSSIBLE = 999  # work of an atom that `minutes` says can never fit


def a(minutes: int, name: str | None = None) -> Atom:
    """An atom that `minutes` says takes `minutes` steps."""
    return Atom(Resources.of({"vcores": 1}), work=minutes * 60.0, name=name)


def minutes(atom: Atom) -> int | None:
    """A stand-in for `min_steps`: one step per minute of work; None for the impossible atom."""
    return None if atom.work == IMPOSSIBLE * 60 else int(atom.work // 60)


def path(expr: rdl.Expr) -> tuple[int, tuple[str, ...]] | None:
    found = critical_path(expr, minutes)
    return None if found is None else (found.steps, found.atoms)


# -- the critical path --------------------------------------------------------------------------


def _trees(children: st.SearchStrategy[rdl.Expr]) -> st.SearchStrategy[rdl.Expr]:
    many = st.lists(children, min_size=1, max_size=4).map(tuple)
    return st.one_of(st.builds(Order, children=many), st.builds(All, children=many), st.builds(Any, children=many),
                     children.map(lambda child: Window(child, end=Relative(3600.0))))


TREES = st.recursive(st.sampled_from([0, 1, 2, 3, 5, 8, IMPOSSIBLE]).map(a), _trees, max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(expr=TREES)
def test_the_folded_length_is_the_graphs(expr: rdl.Expr) -> None:
    """Validation folds the length over the tree and builds the graph only to name a path that is too long."""
    found = critical_path(expr, minutes)
    assert critical_steps(expr, minutes) == (None if found is None else found.steps)



def test_one_atom() -> None:
    assert path(a(5, "x")) == (5, ("x",))


def test_unnamed_atoms_are_labelled_by_path() -> None:
    assert path(Order((a(1), All((a(2), a(3)))))) == (4, ("0.0", "0.1.1"))


def test_order_adds_up_its_children() -> None:
    assert path(Order((a(5, "x"), a(7, "y"), a(3, "z")))) == (15, ("x", "y", "z"))


def test_order_gap_is_a_maximum_not_a_delay() -> None:
    assert path(Order((a(5, "x"), a(7, "y")), gap=3600.0)) == path(Order((a(5, "x"), a(7, "y"))))


def test_all_takes_its_longest_child() -> None:
    assert path(All((a(5, "x"), a(9, "y"), a(3, "z")))) == (9, ("y",))


def test_any_takes_its_shortest_alternative() -> None:
    assert path(Any((a(5, "x"), a(2, "y"), a(9, "z")))) == (2, ("y",))


def test_any_compares_whole_alternatives() -> None:
    slow_chain = Order((a(2, "p"), a(2, "q"), a(2, "r")))
    assert path(Any((slow_chain, a(5, "one")))) == (5, ("one",))
    assert path(Any((slow_chain, a(7, "one")))) == (6, ("p", "q", "r"))


def test_any_skips_alternatives_that_can_never_fit() -> None:
    assert path(Any((a(IMPOSSIBLE, "never"), a(8, "ok")))) == (8, ("ok",))


def test_any_of_only_impossible_alternatives_can_never_fit() -> None:
    assert path(Any((a(IMPOSSIBLE), a(IMPOSSIBLE)))) is None


def test_an_impossible_atom_in_an_order_or_all_makes_the_whole_impossible() -> None:
    assert path(Order((a(1), a(IMPOSSIBLE)))) is None
    assert path(All((a(1), a(IMPOSSIBLE)))) is None
    assert precedence_graph(Order((a(1), All((a(2), a(IMPOSSIBLE))))), minutes) is None


def test_nested_windows_are_transparent() -> None:
    inner = Window(Order((a(4, "x"), a(6, "y"))), end=Relative(3600.0))
    outer = Window(All((inner, a(5, "z"))), end=Relative(7200.0), start=Relative(0.0))
    assert path(outer) == (10, ("x", "y"))


def test_order_of_alls_joins_every_exit_to_every_entry() -> None:
    expr = Order((All((a(3, "a1"), a(8, "a2"))), All((a(1, "b1"), a(4, "b2")))))
    assert path(expr) == (12, ("a2", "b2"))


def test_all_of_orders_takes_the_longest_chain() -> None:
    expr = All((Order((a(3, "p"), a(3, "q"))), Order((a(1, "r"), a(4, "s"))), a(5, "t")))
    assert path(expr) == (6, ("p", "q"))


def test_deep_nesting() -> None:
    expr = Order((
        a(1, "start"),
        All((Order((a(2, "l1"), Any((a(10, "slow"), a(3, "quick"))))), a(4, "side"))),
        Window(a(2, "end"), end=Relative(86400.0)),
    ))
    assert path(expr) == (1 + 5 + 2, ("start", "l1", "quick", "end"))


def test_the_graph_holds_only_the_chosen_alternative() -> None:
    graph = precedence_graph(Order((a(1, "x"), Any((a(5, "slow"), a(2, "fast"))))), minutes)
    assert graph is not None
    atoms = {n for n, data in graph.nodes(data=True) if data["atom"]}
    assert atoms == {"x", "fast"}


def test_order_joins_are_linear_not_quadratic() -> None:
    width = 20
    left = All(tuple(a(1, f"l{i}") for i in range(width)))
    right = All(tuple(a(1, f"r{i}") for i in range(width)))
    graph = precedence_graph(Order((left, right)), minutes)
    assert graph is not None
    assert graph.number_of_edges() == 2 * width  # via one join node, not width * width direct edges
    assert longest(graph).steps == 2


def test_empty_graph_has_an_empty_path() -> None:
    import networkx as nx

    assert longest(nx.DiGraph()).steps == 0


# -- least durations the validator feeds it ---------------------------------------------------------


@pytest.mark.parametrize(("atom", "capacity", "steps"), [
    ("atom(b={vcores: 1}, w=10h)", {"vcores": 32}, 19),  # 600 one-minute leases, 32 at a time
    ("atom(b={vcores: 1}, h=100, l=5m, w=50h)", {"vcores": 1000}, 30),  # 600 leases of 5m, 100 at a time
    ("atom(b={vcores: 1}, h=100, l=5m, w=50h)", {"vcores": 50}, 60),  # the cluster bounds it below h
    ("atom(b={vcores: 4}, g=64, h=64, l=2h, w=128h)", {"vcores": 256}, 120),  # one MPI gang
    ("atom(b={vcores: 4}, g=64, h=64, l=2h, w=128h)", {"vcores": 255}, None),  # the gang does not fit
    ("atom(b={vcores: 1}, l=90s, w=90s)", {"vcores": 1}, 2),  # leases round up to whole steps
    ("atom(b={vcores: 1}, l=1h, w=0.1h)", {"vcores": 1}, 60),  # at least one whole lease
])
def test_least_duration_of_an_atom(atom: str, capacity: dict[str, float], steps: int | None) -> None:
    node = body(atom)
    assert isinstance(node, Atom)
    assert min_steps(node, 60, Resources.of(capacity)) == steps


# -- the validation fit checks that use it ---------------------------------------------------------------

MALLEABLE = "atom(b={vcores: 1}, w=10h)"  # 19 steps on SMALL_CLUSTER's 32 vcores
HALF = "atom(b={vcores: 1}, h=16, w=10h)"  # 38 steps on half of it: two side by side fill it


def window_of(minutes: int, expr: str) -> str:
    return f"reservation r {{\n  window(e=+{minutes}m, {expr})\n}}"


@pytest.mark.parametrize(("expr", "needs"), [
    (MALLEABLE, 19),
    (f"order({MALLEABLE}, {MALLEABLE})", 38),
    (f"order({MALLEABLE}, {MALLEABLE}, gap=0s)", 38),
    (f"all({HALF}, {HALF})", 38),
    (f"any(order({MALLEABLE}, {MALLEABLE}), {MALLEABLE})", 19),
    (f"order(all({MALLEABLE}, atom(b={{vcores: 1}}, l=30m, w=30m)), {MALLEABLE})", 49),
    (f"order(window(e=+1d, {MALLEABLE}), window(e=+2d, {MALLEABLE}))", 38),
])
def test_a_window_fits_exactly_its_critical_path(expr: str, needs: int) -> None:
    parse_and_validate(window_of(needs, expr))
    (error,) = errors_of(window_of(needs - 1, expr)).errors
    assert str(error.span) == f"{FILE}:2:3"
    assert f"is {needs - 1}m long, but what it holds needs at least {needs}m" in error.message


def test_pieces_that_together_need_more_of_the_cluster_than_their_window_holds_are_bad_input() -> None:
    # each alone takes 19 minutes of the 32 vcores; side by side they share them: 1,200 vcore-minutes, 38 minutes
    parse_and_validate(window_of(38, f"all({MALLEABLE}, {MALLEABLE})"))
    (error,) = errors_of(window_of(37, f"all({MALLEABLE}, {MALLEABLE})")).errors
    assert str(error.span) == f"{FILE}:2:3"
    assert "is 37m long, but what it holds needs the whole cluster's `vcores` for at least 38m" in error.message
    parse_and_validate(window_of(19, f"any(all({MALLEABLE}, {MALLEABLE}), {MALLEABLE})"))  # an alternative: not needed


def test_the_message_names_the_critical_atoms() -> None:
    text = window_of(30, f"order(first: {MALLEABLE}, all(short: atom(b={{vcores: 1}}, w=1m), long: {MALLEABLE}))")
    (error,) = errors_of(text).errors
    assert "(critical path: first → long)" in error.message


def test_unnamed_atoms_in_the_message_carry_their_paths_in_the_reservation() -> None:
    text = f"reservation r {{ all(atom(b={{vcores: 1}}, w=1m), window(e=+30m, order({MALLEABLE}, {MALLEABLE}))) }}"
    (error,) = errors_of(text).errors
    assert "window `0.1`" in error.message
    assert "(critical path: 0.1.0.0 → 0.1.0.1)" in error.message


def test_a_deadline_is_checked_like_a_window() -> None:
    ok = f"reservation r deadline=+38m {{ order({MALLEABLE}, {MALLEABLE}) }}"
    parse_and_validate(ok)
    (error,) = errors_of(ok.replace("+38m", "+37m")).errors
    assert str(error.span) == f"{FILE}:1:1"
    assert "needs at least 38m" in error.message
    assert "critical path: 0.0 → 0.1" in error.message


def test_nested_windows_are_each_checked() -> None:
    text = window_of(120, f"order(inner: window(e=+20m, order({MALLEABLE}, {MALLEABLE})), {MALLEABLE})")
    (error,) = errors_of(text).errors
    assert error.message.startswith("window `inner`")
    assert "is 20m long" in error.message and "needs at least 38m" in error.message


def test_nested_windows_that_each_fit_but_not_in_order_can_never_be_placed() -> None:
    # The first piece may only run in the last 20 minutes, so the second has no room after it.
    text = window_of(60, f"order(window(s=+40m, e=+60m, {MALLEABLE}), {MALLEABLE})")
    (error,) = errors_of(text).errors
    assert str(error.span) == f"{FILE}:1:1"
    assert "can never be placed" in error.message


def test_an_impossible_alternative_does_not_shorten_the_path() -> None:
    impossible = "atom(b={vcores: 64}, w=1m)"  # larger than the cluster
    parse_and_validate(window_of(19, f"any({impossible}, {MALLEABLE})"))
    (error,) = errors_of(window_of(18, f"any({impossible}, {MALLEABLE})")).errors
    assert "needs at least 19m" in error.message


def test_the_cluster_capacity_bounds_the_path() -> None:
    # 600 one-minute leases: 19 steps on 32 vcores, 10 steps once h and capacity allow 60 at a time.
    wide = rdl.parse_cluster("start: 2026-11-23T00:00:00Z\ncapacity: {vcores: 64}\n")
    text = window_of(10, "atom(b={vcores: 1}, h=60, w=10h)")
    parse_and_validate(text, wide)
    assert "needs at least 19m" in errors_of(text, SMALL_CLUSTER).errors[0].message


def test_duplicate_names_do_not_break_the_graph() -> None:
    text = window_of(30, f"order(x: {MALLEABLE}, x: {MALLEABLE})")
    messages = [e.message for e in errors_of(text).errors]
    assert len(messages) == 2
    assert "needs at least 38m" in messages[0] and "(critical path: x → 0.0.1)" in messages[0]
    assert "used twice" in messages[1]
