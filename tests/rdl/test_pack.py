"""`pack=node`: each gang's bundles on one node, checked against the cluster's node groups (docs/rdl.md, Placement).

The plan counts capacity, not nodes, so it cannot promise a node for a gang; what is checked is that one could
hold it: a packed gang larger than every node is bad input, at its place.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rdl import parse_cluster, parse_text
from rdl.forms.jsonform import from_json, to_json
from rdl.syntax.printer import format_reservation
from tests.rdl.support import FAST, errors_of, parse_and_validate

NODES = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\nnodes:\n"
                      "  - {name: small, count: 32, memory: 64GiB, vcores: 32}\n"
                      "  - {name: fat, count: 2, memory: 1TiB, vcores: 96, gpu: 8}\n", "nodes.yaml")
AGGREGATE = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {vcores: 512}\n")
GANG = "reservation t pack=node {{\n  x: atom(b={{{bundle}}}, g={g}, h={g}, l=1h, w={g}h)\n}}"


def test_a_packed_gang_that_fits_one_node_is_accepted_and_prints_back() -> None:
    (reservation,) = parse_and_validate(GANG.format(bundle="gpu: 1, vcores: 8", g=8), NODES)
    assert reservation.pack == "node"
    assert parse_text(format_reservation(reservation))[0] == reservation
    assert from_json(to_json(reservation))[0] == reservation


def test_a_packed_gang_larger_than_every_node_is_named_at_its_place() -> None:
    (error,) = errors_of(GANG.format(bundle="memory: 16GiB, vcores: 8", g=16), NODES, "big.rdl").errors
    assert (error.span.file, error.span.line, error.span.col) == ("big.rdl", 2, 3)
    assert "gang of 16 bundles" in error.message and "one node" in error.message
    assert "leave `pack` out" in (error.hint or "")


def test_the_same_gang_without_pack_is_valid_as_before() -> None:
    text = GANG.format(bundle="memory: 16GiB, vcores: 8", g=16).replace(" pack=node", "")
    (reservation,) = parse_and_validate(text, NODES)
    assert reservation.pack is None and "pack" not in format_reservation(reservation)


def test_pack_needs_node_groups_in_the_cluster_file() -> None:
    (error,) = errors_of(GANG.format(bundle="vcores: 1", g=2), AGGREGATE).errors
    assert "lists no nodes" in error.message
    assert parse_and_validate(GANG.format(bundle="vcores: 1", g=2), None)  # no cluster: checked when there is one


def test_pack_takes_only_node() -> None:
    (error,) = errors_of("reservation t pack=nodes { atom(b={vcores: 1}, w=1h) }", NODES).errors
    assert "`pack` is `node`" in error.message and "did you mean `node`" in (error.hint or "")


@pytest.mark.parametrize("text", ["reservation t placement=soon { atom(b={vcores: 1}, w=1h) }",
                                  "reservation t placement=\"early\" { atom(b={vcores: 1}, w=1h) }"])
def test_placement_takes_early_or_late(text: str) -> None:
    (error,) = errors_of(text, NODES).errors
    assert "`placement` is `late` or `early`" in error.message


@FAST
@given(vcores=st.integers(1, 96), gang=st.integers(1, 20))
def test_a_packed_gang_is_valid_exactly_when_one_node_holds_it(vcores: int, gang: int) -> None:
    text = GANG.format(bundle=f"vcores: {vcores}", g=gang)
    fits = gang == 1 or vcores * gang <= 96
    if fits:
        parse_and_validate(text, NODES)
    else:
        assert "one node" in errors_of(text, NODES).errors[0].message
