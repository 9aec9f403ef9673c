"""Fixtures of the planner tests (plain helpers live in support.py, so hypothesis tests can use them too)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rdl.cluster import Cluster
from tests.planner.support import AGENT_NAMES, Run, make_cluster, run_plan


@pytest.fixture(params=AGENT_NAMES)
def agent(request: pytest.FixtureRequest) -> str:
    """Every registered planning agent, by name."""
    return request.param


@pytest.fixture
def cluster_of() -> Callable[..., Cluster]:
    """`cluster_of({"vcores": 8}, steps=20, changes=[(10, {"vcores": 4})])`: a one-minute-step cluster."""
    return make_cluster


@pytest.fixture
def plan_with(agent: str) -> Callable[..., Run]:
    """`plan_with(cluster, rdl_text)`: submit every reservation with this test's agent; check the result."""

    def run(cluster: Cluster, rdl: str, **kwargs) -> Run:  # type: ignore[no-untyped-def]
        return run_plan(cluster, rdl, agent, **kwargs)

    return run

