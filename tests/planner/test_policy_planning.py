"""Sharing policies in planning: agents place around a user's limits, and say which limit when they cannot."""

from __future__ import annotations

import pytest

from planner.admission import Planner
from planner.core.check import check_plan
from rdl import parse_cluster, parse_text

CLUSTER = """start: 2026-11-23T00:00:00Z
step: 1h
horizon: 3d
capacity: {vcores: 100}
policies:
  user_limits:
    instantaneous: 50%
    average: 25%
    window: 24h
"""
GREEDY = ["gree", "gree-l"]


def plan(agent: str, text: str) -> tuple[list[dict], list[str]]:  # type: ignore[type-arg]
    cluster = parse_cluster(CLUSTER)
    reservations = parse_text(text)
    planner = Planner(cluster)
    records = [planner.submit(r, agent).to_json(planner.plan.clock) for r in reservations]
    return records, check_plan(cluster, reservations, records)


def gang(name: str, user: str, vcores: int, hours: int, end: str = "2026-11-24T01:00:00Z",
         start: str = "2026-11-23T00:00:00Z") -> str:
    return (f"reservation {name} user={user} {{ window(s={start}, e={end}, "
            f"atom(b={{vcores: {vcores}}}, l={hours}h, w={hours}h)) }}\n")


@pytest.mark.parametrize("agent", GREEDY)
def test_the_exact_window_average_accepts_25_hours_at_25_percent_over_24_hours(agent: str) -> None:
    # YARN's conservative check rejects this; the exact window average accepts it.
    records, problems = plan(agent, gang("exact", "alice", 25, 25))
    assert problems == []
    assert records[0]["accepted"]


@pytest.mark.parametrize("agent", GREEDY)
def test_one_unit_over_the_window_average_is_a_policy_rejection(agent: str) -> None:
    records, problems = plan(agent, gang("over", "alice", 26, 24))
    assert problems == []
    assert not records[0]["accepted"]
    assert records[0]["reason"]["code"] == "policy"
    assert "average" in records[0]["reason"]["message"] and "alice" in records[0]["reason"]["message"]


@pytest.mark.parametrize("agent", GREEDY)
def test_instantaneous_cap_exactly_is_accepted_and_one_over_is_refused(agent: str) -> None:
    short = "2026-11-23T01:00:00Z"
    later = ("2026-11-23T02:00:00Z", short)  # carol's window: an hour the cluster has all to itself
    records, problems = plan(agent, gang("at_cap", "bob", 50, 1, short) + gang("over_cap", "carol", 51, 1, *later))
    assert problems == []
    assert records[0]["accepted"]
    assert not records[1]["accepted"] and records[1]["reason"]["code"] == "policy"
    assert "instantaneous" in records[1]["reason"]["message"]


@pytest.mark.parametrize("agent", GREEDY)
def test_agents_place_around_the_instantaneous_cap(agent: str) -> None:
    # 60 bundle-hours in 2 hours fit the cluster at once, but not under a 50-vcore cap; spread over two steps they do.
    text = ("reservation wide user=dana { window(s=2026-11-23T00:00:00Z, e=2026-11-23T02:00:00Z, "
            "atom(b={vcores: 1}, h=60, l=1h, w=60h)) }")
    records, problems = plan(agent, text)
    assert problems == []
    assert records[0]["accepted"]
    assert max(a["bundles"] for a in records[0]["allocations"]) <= 50


def test_the_checker_flags_a_plan_over_a_user_limit() -> None:
    cluster = parse_cluster(CLUSTER)
    reservations = parse_text(gang("over", "alice", 60, 1, "2026-11-23T01:00:00Z"))
    record = {"reservation": "over", "accepted": True, "allocations": [
        {"atom": "0.0", "start": "2026-11-23T00:00:00Z", "end": "2026-11-23T01:00:00Z", "bundles": 1,
         "resources": {"vcores": 60}}]}
    assert any(p.startswith("policy:") for p in check_plan(cluster, reservations, [record]))
