"""benchmarks/admission.py's `--parts` split: it times the same admission steps `Planner.submit` takes, so it must
decide what submit decides (same acceptances, same plan), and count each part on the admissions that do it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from planner.admission import Planner
from planner.agents.registry import get_agent
from rdl import parse_cluster

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import admission  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)
import resolution  # noqa: E402

TIGHT = admission.CLUSTER.replace("step: 1m", "step: 10m").replace("{memory: 4TiB, vcores: 2048}",
                                                                  "{memory: 1TiB, vcores: 512}")


@pytest.mark.parametrize("name", ["gree", "gree-l"])
def test_parts_decide_what_submit_decides(name: str) -> None:
    cluster = parse_cluster(TIGHT, "tight.yaml")
    reservations = admission.workload(120, 3)
    planner, agent = Planner(cluster), get_agent(name)
    accepted = sum(planner.submit(r, agent, validated=True).accepted for r in reservations)
    assert 0 < accepted < len(reservations)  # both paths are exercised
    parts = resolution.admission_parts(cluster, reservations, agent)
    assert len(parts["compile"]) == len(parts["search"]) == len(reservations)
    assert len(parts["record"]) == accepted
    assert len(parts["explain"]) == len(reservations) - accepted
    assert all(s >= 0 for part in resolution.PARTS for s in parts[part])


def test_parts_add_what_submit_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = parse_cluster(TIGHT, "tight.yaml")
    reservations = admission.workload(60, 5)
    agent = get_agent("gree")
    planner = Planner(cluster)
    for reservation in reservations:
        planner.submit(reservation, agent, validated=True)
    seen = []
    original = resolution.Plan.add

    def spy(plan: resolution.Plan, accepted: resolution.Accepted) -> None:
        seen.append(accepted)
        original(plan, accepted)

    monkeypatch.setattr(resolution.Plan, "add", spy)
    resolution.admission_parts(cluster, reservations, agent)
    assert [a.reservation.name for a in seen] == list(planner.plan.accepted)
    for added in seen:
        kept = planner.plan.accepted[added.reservation.name]
        assert added.allocations == kept.allocations
