"""Fixtures of the workload tests: the real traces (each read at most once per session) and small clusters."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from follower.sim.workloads.alibaba import AlibabaParams, read_alibaba
from follower.sim.workloads.job import Workload
from follower.sim.workloads.swf import SwfParams, read_swf
from follower.sim.workloads.tracefile import Slice
from rdl.cluster import Cluster, parse_cluster
from rdl.nodes import NodeGroup

TRACES = Path(__file__).resolve().parents[4] / "examples" / "traces"
WEEK = 7 * 86400.0
START = datetime(2026, 11, 23, tzinfo=UTC)


def trace(name: str) -> Path:
    """A file of the traces the repository ships (examples/traces/)."""
    path = TRACES / name
    assert path.is_file(), f"examples/traces/ lacks {name}"
    return path


def cluster_of(nodes: tuple[NodeGroup, ...], step: str = "1m", horizon: str = "60d") -> Cluster:
    """A planner cluster with these node groups, starting at START."""
    lines = [f"start: {START.isoformat().replace('+00:00', 'Z')}", f"step: {step}", f"horizon: {horizon}", "nodes:"]
    for group in nodes:
        size = ", ".join(f"{name}: {value!r}" for name, value in group.size.items())
        lines.append(f"  - {{name: \"{group.name}\", count: {group.count}, {size}}}")
    return parse_cluster("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def ricc_week() -> Workload:
    """The first week of the RICC log, 12 GiB nodes, a seeded 20 % production (seed 1)."""
    return read_swf(SwfParams(file=str(trace("ricc_2010.swf.gz")), slice=Slice(0.0, WEEK), node_memory=12 * 1024.0),
                    seed=1)


@pytest.fixture(scope="session")
def alibaba() -> Workload:
    """Every Alibaba pod, with the node file (seed 1)."""
    return read_alibaba(AlibabaParams(file=str(trace("alibaba_openb_pods.csv")),
                                      nodes_file=str(trace("alibaba_openb_nodes.csv"))), seed=1)
