"""The replay agent: another system's answers, decided up front, taken when they still fit the plan."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from planner.admission import Planner
from planner.agents.replay import DIVERGED, Answer, Lease, ReplayAgent, answers_from_json, replay_summary
from planner.core.decision import Reason
from rdl import parse_cluster, parse_text

CLUSTER = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {memory: 8GiB, vcores: 4}\n"
STREAM = """
reservation a user=alice arrival=2026-11-23T00:00:00Z deadline=2026-11-23T01:00:00Z {
  atom(b={memory: 2GiB, vcores: 1}, g=2, l=10m, w=20m)
}
reservation b user=bob arrival=2026-11-23T00:00:00Z deadline=2026-11-23T01:00:00Z {
  atom(b={memory: 2GiB, vcores: 1}, g=4, l=10m, w=40m)
}
"""


@pytest.fixture
def planner():
    return Planner(parse_cluster(CLUSTER, "c.yaml"))


@pytest.fixture
def stream():
    return {r.name: r for r in parse_text(STREAM, "s.rdl")}


def lease(planner, start, end, bundles):
    clock = planner.plan.clock
    return Lease("0", clock.at(start), clock.at(end), bundles)


def test_an_answer_that_fits_is_the_decision(planner, stream):
    agent = ReplayAgent("other", {"a": Answer(True, (lease(planner, 5, 15, 2),))})
    made = planner.submit(stream["a"], agent)
    assert made.accepted and [(x.start, x.end, x.bundles) for x in made.allocations] == [(5, 15, 2)]
    assert planner.plan.used[1, 5:15].tolist() == [2.0] * 10 and agent.diverged == {}


def test_a_rejection_is_replayed_with_its_reason(planner, stream):
    agent = ReplayAgent("other", {"a": Answer(False, reason=Reason("policy", "over the user's share"))})
    made = planner.submit(stream["a"], agent, explain=False)
    assert not made.accepted and made.reason == Reason("policy", "over the user's share")


def test_an_answer_that_no_longer_fits_is_a_rejection_counted_and_leaves_the_plan_unchanged(planner, stream):
    # The answers were decided on a plan without `a`; here `a` holds half the cluster, so `b`'s gang of 4 is over.
    agent = ReplayAgent("other", {"a": Answer(True, (lease(planner, 0, 10, 2),)),
                                  "b": Answer(True, (lease(planner, 5, 15, 4),))})
    planner.submit(stream["a"], agent)
    before = planner.plan.used.copy()
    made = planner.submit(stream["b"], agent, explain=False)
    assert not made.accepted and made.reason.code == "capacity" and DIVERGED in made.reason.message
    assert "over capacity at 2026-11-23T00:05:00Z" in made.reason.message
    assert np.array_equal(planner.plan.used, before) and "b" not in planner.plan.accepted
    assert list(agent.diverged) == ["b"]
    summary = replay_summary(agent)
    assert (summary["answers"], summary["accepted_by_agent"], summary["diverged"]) == (2, 2, 1)


def test_a_lease_before_the_plans_clock_no_longer_fits(planner, stream):
    agent = ReplayAgent("other", {"a": Answer(True, (lease(planner, 0, 10, 2),))})
    planner.advance(planner.plan.clock.origin + timedelta(minutes=3))
    made = planner.submit(stream["a"], agent, explain=False, validated=True)
    assert not made.accepted and "before the plan's clock" in made.reason.message


def test_asked_again_the_agent_offers_the_same_answer_and_counts_the_refusal(planner, stream):
    agent = ReplayAgent("other", {"b": Answer(True, (lease(planner, 0, 10, 8),))})  # 8 vcores of 4
    for _ in range(2):
        assert agent.place(planner.plan, stream["b"], planner.plan.now).allocations is None
    assert list(agent.diverged) == ["b"] and agent.replans_refused == 1


def test_a_reservation_without_an_answer_is_invalid(planner, stream):
    made = planner.submit(stream["a"], ReplayAgent("other", {}), explain=False)
    assert not made.accepted and made.reason.code == "invalid" and "another stream" in made.reason.message


def test_an_acceptance_holding_no_lease_is_not_taken(planner, stream):
    agent = ReplayAgent("other", {"a": Answer(True)})
    made = planner.submit(stream["a"], agent, explain=False)
    assert not made.accepted and "holds no lease" in made.reason.message and agent.diverged == {}


def test_decision_records_read_back_as_answers(planner, stream):
    made = planner.submit(stream["a"], "gree-l")
    answers = answers_from_json([made.to_json(planner.plan.clock)])
    replayed = ReplayAgent("other", answers).place(Planner(planner.plan.cluster).plan, stream["a"], planner.plan.now)
    assert replayed.allocations == made.allocations
    with pytest.raises(ValueError, match="decided twice"):
        answers_from_json([made.to_json(planner.plan.clock)] * 2)
