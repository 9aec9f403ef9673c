"""YARN's own reservation agents on our reservations (the `peer` tier: `pytest -m peer`; needs java and mvn).

Every YARN answer goes through our plan checker, and a few hand-made reservations pin where YARN's agents and
ours agree and where they differ, and why.
"""

from __future__ import annotations

import time

import pytest

from planner.core.check import check_plan
from planner.core.compile import Clock
from rdl import parse_cluster, parse_text
from tests.peers.yarn import agent_harness as harness
from tests.peers.yarn import streams

pytestmark = pytest.mark.peer

CLUSTER = """
start: 2026-11-23T00:00:00Z
step: 1m
horizon: 1d
capacity: {memory: 100GiB, vcores: 100}
changes:                # 20:00-22:00: half the cluster
  - {at: +20h, capacity: {memory: 50GiB, vcores: 50}}
  - {at: +22h, capacity: {memory: 100GiB, vcores: 100}}
"""
FULL = "atom(b={memory: 1GiB, vcores: 1}, g=100, l=1h, w=100h)"  # the whole cluster for an hour, one gang
HAND_MADE = f"""
reservation fits queue=q arrival=2026-11-23T00:00:00Z deadline=+4h {{
  atom(b={{memory: 2GiB, vcores: 2}}, g=5, l=30m, w=300m) }}
reservation too_big queue=q arrival=2026-11-23T00:00:00Z deadline=+4h {{
  atom(b={{memory: 2GiB, vcores: 2}}, g=60, l=30m, w=1800m) }}
reservation block_a queue=q arrival=2026-11-23T06:00:00Z deadline=+1h {{ {FULL} }}
reservation nogap_a queue=q arrival=2026-11-23T05:00:00Z deadline=+4h {{ order({FULL}, {FULL}, gap=0s) }}
reservation block_b queue=q arrival=2026-11-23T12:00:00Z deadline=+1h {{ {FULL} }}
reservation nogap_b queue=q arrival=2026-11-23T10:00:00Z deadline=+4h {{ order({FULL}, {FULL}, gap=0s) }}
reservation dip queue=q arrival=2026-11-23T19:30:00Z deadline=+210m {{
  atom(b={{memory: 1GiB, vcores: 1}}, g=60, l=1h, w=60h) }}
reservation any_second queue=q arrival=2026-11-23T14:00:00Z deadline=+4h {{
  any(atom(b={{memory: 2GiB, vcores: 2}}, g=60, l=30m, w=1800m), atom(b={{memory: 1GiB, vcores: 1}}, l=30m, w=300m))
}}
reservation edge queue=q arrival=2026-11-23T23:00:00Z deadline=+1m {{
  atom(b={{memory: 1GiB, vcores: 1}}, g=99, l=1m, w=99m) }}
reservation stale queue=q arrival=2026-11-23T23:00:00Z deadline=+50m {{
  atom(b={{memory: 1GiB, vcores: 1}}, l=10m, w=1500m) }}
"""
OURS = ("gree", "gree-l")


@pytest.fixture(scope="module")
def built() -> list[str]:
    try:
        return harness.build()
    except harness.PeerUnavailable as unavailable:
        pytest.skip(f"the YARN peer cannot run here: {unavailable}")


@pytest.fixture(scope="module")
def hand_made(built):
    """Every agent's decision records for the hand-made stream, with the conversion's problems for YARN's."""
    cluster = parse_cluster(CLUSTER, "hand-made-cluster.yaml")
    stream = harness.Stream.of(parse_text(HAND_MADE, "hand-made.rdl"))
    found = {}
    answers = harness.run_yarn(cluster, stream)
    for agent, answered in answers.items():
        found[f"yarn-{agent}"] = harness.decision_records(answered, stream, cluster)
    for agent in OURS:
        found[agent] = (harness.run_ours(cluster, stream, agent).records, [])
    return cluster, stream, found, answers


def _placed(records, name):
    """(atom, start HH:MM, end HH:MM, bundles) of a reservation's allocations; None when it was rejected."""
    record = next(r for r in records if r["reservation"] == name)
    if not record["accepted"]:
        return None
    return sorted((a["atom"], a["start"][11:16], a["end"][11:16], a["bundles"]) for a in record["allocations"])


def test_every_answer_on_the_hand_made_stream_passes_our_checker(hand_made):
    cluster, stream, found, _ = hand_made
    for agent, (records, problems) in found.items():
        assert problems == [], agent
        assert check_plan(cluster, stream.reservations, records) == [], agent


def test_a_stage_that_fits_at_once_goes_to_the_end_each_agent_favours(hand_made):
    _, _, found, _ = hand_made
    assert _placed(found["yarn-greedy"][0], "fits") == [("stage0", "00:00", "00:30", 10)]  # YARN's default: left
    assert _placed(found["yarn-greedy-right"][0], "fits") == [("stage0", "03:30", "04:00", 10)]
    assert _placed(found["gree"][0], "fits") == [("stage0", "03:30", "04:00", 10)]  # latest, tallest


def test_a_gang_larger_than_the_cluster_is_rejected_by_all_with_yarns_text(hand_made):
    _, _, found, _ = hand_made
    for agent, (records, _) in found.items():
        assert _placed(records, "too_big") is None, agent
    rejected = next(r for r in found["yarn-greedy"][0] if r["reservation"] == "too_big")
    assert rejected["reason"]["message"] == "PlanningException: The request cannot be satisfied"


def test_no_gap_after_a_first_stage_placed_too_early_only_we_backtrack(hand_made):
    # block_a holds 06:00-07:00: the only way is 07:00-08:00 then 08:00-09:00. YARN's greedy puts stage 0 at
    # 05:00 (left) or finds stage 1's latest start leaves stage 0 no room right before it, and gives up.
    _, _, found, _ = hand_made
    for agent in ("yarn-greedy", "yarn-greedy-right", "yarn-aligned"):
        rejected = next(r for r in found[agent][0] if r["reservation"] == "nogap_a")
        assert "ORDER_NO_GAP" in rejected["reason"]["message"], agent
    for agent in OURS:
        assert _placed(found[agent][0], "nogap_a") == [("stage0", "07:00", "08:00", 100),
                                                       ("stage1", "08:00", "09:00", 100)], agent


def test_no_gap_with_room_only_at_the_start_of_the_window(hand_made):
    # block_b holds 12:00-13:00 in the window 10:00-14:00: only 10:00-11:00 then 11:00-12:00 fits.
    _, _, found, _ = hand_made
    expected = [("stage0", "10:00", "11:00", 100), ("stage1", "11:00", "12:00", 100)]
    for agent in ("yarn-greedy", "yarn-greedy-right", "yarn-aligned", *OURS):
        assert _placed(found[agent][0], "nogap_b") == expected, agent


def test_a_gang_that_fits_only_after_a_capacity_dip(hand_made):
    # 20:00-22:00 the cluster has 50 vcores: a 60-vcore gang for an hour in 19:30-23:00 fits at 22:00 only.
    _, _, found, _ = hand_made
    for agent in ("yarn-greedy", "yarn-aligned", *OURS):
        assert _placed(found[agent][0], "dip") == [("stage0", "22:00", "23:00", 60)], agent
    # YARN's greedy allocating right looks one run too far left of the deadline (StageAllocatorGreedyRLE's exit
    # test is `t < deadline - duration`): it counts the dip against the slot that begins where the dip ends.
    assert _placed(found["yarn-greedy-right"][0], "dip") is None


def test_any_places_one_alternative_the_one_that_can_fit(hand_made):
    _, _, found, _ = hand_made
    for agent, (records, _) in found.items():
        placed = _placed(records, "any_second")
        assert placed is not None and {atom for atom, *_ in placed} == {"stage1"}, agent


@pytest.mark.parametrize("make", [streams.yarn_shaped, streams.tight, streams.gangs], ids=lambda m: m.__name__)
def test_every_yarn_answer_on_a_seeded_stream_passes_our_checker(built, make):
    cluster, stream = make(count=80)
    answers = harness.run_yarn(cluster, stream)
    for agent, found in answers.items():
        assert len(found) == len(stream.reservations), agent
        assert not any(a.crashed for a in found), [a.message for a in found if a.crashed]
        assert all(a.nanos > 0 for a in found), agent
        records, problems = harness.decision_records(found, stream, cluster)
        assert problems == [], agent
        assert check_plan(cluster, stream.reservations, records) == [], agent
        assert any(r["accepted"] for r in records) and not all(r["accepted"] for r in records), agent


def test_the_peer_is_built_once(built):
    began = time.perf_counter()
    assert harness.build() == built
    assert time.perf_counter() - began < 5


def test_yarn_greedy_left_counts_a_stage_against_capacity_without_its_own_gangs(hand_made):
    # edge holds 99 of 100 vcores for 23:00-23:01. stale asks 150 ten-minute containers in 23:00-23:50: YARN's
    # greedy (left) places 1 at 23:00, then 100 from 23:01 on the free capacity it read before the first one
    # (StageAllocatorGreedyRLE reads it once per stage): 101 at 23:01-23:10. Its plan refuses that.
    cluster, stream, found, answers = hand_made
    answer = next(a for a in answers["greedy"] if a.name == "stale")
    assert not answer.accepted and answer.exception.endswith("ResourceOverCommitException")
    proposed = harness.YarnAnswer("greedy", answer.index, "stale", True, 1, stages=answer.proposed)
    made, _ = harness.decision(proposed, stream.reservations[answer.index], cluster)
    records = [r for r in found["yarn-greedy"][0] if r["accepted"]]
    checked = [r for r in stream.reservations if r.name in {x["reservation"] for x in records} | {"stale"}]
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    over = check_plan(cluster, checked, [*records, made.to_json(clock)])
    assert over and all(p.startswith("capacity:") and "uses 101 of 100" in p for p in over if "vcores" in p)
    for agent in ("yarn-greedy-right", "yarn-aligned", *OURS):
        assert _placed(found[agent][0], "stale") is not None, agent
