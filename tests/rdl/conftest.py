"""Fixtures of the RDL tests (plain helpers live in support.py, so hypothesis tests can use them too)."""

from __future__ import annotations

import pytest

import rdl
from tests.rdl.support import EXAMPLE_CLUSTER, SMALL_CLUSTER


@pytest.fixture
def example_cluster() -> rdl.Cluster:
    """`examples/cluster.yaml`: 64 nodes of 64 GiB and 32 vcores, one-minute steps, a week."""
    return EXAMPLE_CLUSTER


@pytest.fixture
def small_cluster() -> rdl.Cluster:
    """64 GiB, 32 vcores, 4 GPUs."""
    return SMALL_CLUSTER
