"""Shared helpers for the RDL tests: the clusters they validate against and how they collect errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

import rdl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CLUSTER = rdl.load_cluster(ROOT / "examples" / "cluster.yaml")
START = datetime(2026, 11, 23, tzinfo=UTC)

# Small enough that "larger than the cluster" is easy to write: 64 GiB, 32 vcores, 4 GPUs, one-minute steps.
SMALL_CLUSTER = rdl.parse_cluster(
    "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {memory: 64GiB, vcores: 32, gpu: 4}\n",
    "small.yaml",
)

FILE = "bad.rdl"


def parse_and_validate(text: str, cluster: rdl.Cluster | None = SMALL_CLUSTER,
                       file: str = FILE) -> list[rdl.Reservation]:
    """What loading a file does: parse, then validate against the cluster; errors carry the source."""
    try:
        reservations = rdl.parse_text(text, file)
        rdl.validate(reservations, cluster)
    except rdl.RDLErrors as errors:
        raise errors.with_sources({file: text}) from None
    return reservations


def errors_of(text: str, cluster: rdl.Cluster | None = SMALL_CLUSTER, file: str = FILE) -> rdl.RDLErrors:
    """The errors a file is rejected with (fails the test when it is accepted)."""
    with pytest.raises(rdl.RDLErrors) as caught:
        parse_and_validate(text, cluster, file)
    return caught.value


def one(text: str) -> rdl.Reservation:
    """The only reservation of a text that must parse."""
    (reservation,) = rdl.parse_text(text, "ok.rdl")
    return reservation


def body(expr: str) -> rdl.Expr:
    """The body of a one-line reservation around `expr`."""
    return one(f"reservation r {{ {expr} }}").body


# Hypothesis settings for every property here: ~100 examples, no deadline (first calls import and compile).
FAST = settings(max_examples=100, deadline=None)
