"""The YARN harness's own Python: the plan facts it sends and how it reads YARN's answers back (no Java needed)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.check import check_plan
from rdl import parse_cluster, parse_text
from tests.peers.yarn import agent_harness as harness

CLUSTER = """
start: 2026-11-23T00:00:00Z
step: 1m
horizon: 1d
capacity: {memory: 100GiB, vcores: 100}
changes:
  - {at: +20h, capacity: {memory: 50GiB, vcores: 50}}
  - {at: +22h, capacity: {memory: 100GiB, vcores: 100}}
"""
START_MS = 1795392000000  # 2026-11-23T00:00:00Z
MINUTE = 60_000
GANG = """reservation g queue=q arrival=2026-11-23T00:00:00Z deadline=+4h {
  atom(b={memory: 2GiB, vcores: 2}, g=5, l=30m, w=600m)
}"""


def test_plan_facts_pin_what_is_below_the_largest_capacity():
    facts = harness.plan_facts(parse_cluster(CLUSTER, "c.yaml"))
    assert facts["start"] == START_MS and facts["step"] == MINUTE and facts["end"] == START_MS + 1440 * MINUTE
    assert facts["capacity"] == {"memory": 102400, "vcores": 100}
    assert facts["lower"] == [[START_MS + 1200 * MINUTE, START_MS + 1320 * MINUTE, 51200, 50]]
    assert facts["policy"] == {}


def test_plan_facts_carry_one_user_limit_for_all_users():
    limited = CLUSTER + "policies:\n  user_limits: {instantaneous: 50%, average: 25%, window: 2h}\n"
    assert harness.plan_facts(parse_cluster(limited, "c.yaml"))["policy"] == {
        "instantaneous": 50.0, "average": 25.0, "window": 2 * 3600 * 1000}


@pytest.mark.parametrize(("text", "message"), [
    (CLUSTER.replace("2026-11-23T00:00:00Z", "2026-11-23T00:00:30Z"), "whole step"),
    (CLUSTER.replace("vcores: 100}", "vcores: 100, gpus: 4}"), "memory and vcores"),
    (CLUSTER + "policies:\n  user_limits: {instantaneous: 50%, users: {alice: {instantaneous: 80%}}}\n", "one limit"),
])
def test_plan_facts_refuse_what_yarn_cannot_hold(text, message):
    with pytest.raises(ValueError, match=message):
        harness.plan_facts(parse_cluster(text, "c.yaml"))


def test_overlapping_gangs_are_taken_apart_into_leases():
    # Two gangs from 00:00, one more from 00:10, each 30 minutes: the profile YARN's aligned allocator answers.
    atom = harness.Stream.of(parse_text(GANG, "g.rdl")).reservations[0].body.children[0]
    profile = [[START_MS, START_MS + 10 * MINUTE, 20480, 20],
               [START_MS + 10 * MINUTE, START_MS + 30 * MINUTE, 30720, 30],
               [START_MS + 30 * MINUTE, START_MS + 40 * MINUTE, 10240, 10]]
    found, problems = harness.leases(profile, atom, "stage0", parse_cluster(CLUSTER, "c.yaml"))
    assert problems == []
    assert [(a.start, a.end, a.bundles) for a in found] == [(0, 30, 10), (10, 40, 5)]


def test_decompose_finds_no_leases_in_a_profile_that_is_no_sum_of_them():
    assert harness._decompose(np.array([1, 1, 2, 1]), 2) is None  # one lease would have to end mid-run
    assert harness._decompose(np.array([1, 1, 1]), 2) is None  # the last lease would run past the profile
    assert harness._decompose(np.array([2, 2, 1, 1]), 2) == [(0, 2), (2, 1)]


def test_an_answer_that_is_no_sum_of_leases_reaches_the_checker_as_it_is():
    cluster = parse_cluster(CLUSTER, "c.yaml")
    stream = harness.Stream.of(parse_text(GANG, "g.rdl"))
    answer = harness.YarnAnswer("greedy", 0, "g", True, 1, stages=[
        {"stage": 0, "intervals": [[START_MS, START_MS + 45 * MINUTE, 20480, 20]]}])
    records, problems = harness.decision_records([answer], stream, cluster)
    assert problems == []
    assert [a["bundles"] for a in records[0]["allocations"]] == [10]
    assert any("lasts 45 steps, not 30" in p for p in check_plan(cluster, stream.reservations, records))


def test_an_answer_off_the_steps_or_the_gangs_is_a_conversion_problem():
    cluster = parse_cluster(CLUSTER, "c.yaml")
    stream = harness.Stream.of(parse_text(GANG, "g.rdl"))
    answer = harness.YarnAnswer("aligned", 0, "g", True, 1, matches_plan=False, stages=[
        {"stage": 0, "intervals": [[START_MS + 1000, START_MS + 30 * MINUTE, 2048 * 3, 6]]}])
    records, problems = harness.decision_records([answer], stream, cluster)
    assert any("off the plan's steps" in p for p in problems)
    assert any("not a whole number of gangs" in p for p in problems)
    assert any("differ from the plan's" in p for p in problems)
    assert check_plan(cluster, stream.reservations, records) != []  # accepted, nothing placed


def test_a_rejection_keeps_yarns_exception_text():
    cluster = parse_cluster(CLUSTER, "c.yaml")
    stream = harness.Stream.of(parse_text(GANG, "g.rdl"))
    answer = harness.YarnAnswer("greedy", 0, "g", False, 1, exception="org.apache.hadoop.yarn.server."
                                "resourcemanager.reservation.exceptions.PlanningException",
                                message="The request cannot be satisfied")
    records, _ = harness.decision_records([answer], stream, cluster)
    assert records[0]["reason"] == {"code": "capacity", "message": "PlanningException: The request cannot be satisfied"}
    assert records[0]["agent"] == "yarn-greedy"


def test_missing_tools_names_what_is_absent(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert harness.missing_tools() == "java and mvn not found on PATH"
    with pytest.raises(harness.PeerUnavailable, match="not found"):
        harness.build()
