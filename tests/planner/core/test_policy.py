"""Sharing policies: parsing the cluster file's `policies:`, and the per-user limits checked exactly."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.core.policy import Violation, average_violation, check, headroom, instantaneous_violation
from rdl.cluster import parse_cluster
from rdl.errors import RDLErrors
from rdl.policy import AVERAGE, INSTANTANEOUS, NO_OVERCOMMIT, SharingPolicy, parse_policy

ORIGIN = datetime(2026, 11, 23, tzinfo=UTC)
MINUTE = 60
DAY = 24 * 60  # steps of one minute
RESOURCES = ("vcores", "memory")


def constant(steps: int, *per_resource: float) -> np.ndarray:
    """Capacity (or use) constant over `steps` steps, one value per resource."""
    return np.repeat(np.array(per_resource, dtype=np.float64)[:, None], steps, axis=1)


def held(steps: int, spans: list[tuple[int, int, float]], resources: int = 1) -> np.ndarray:
    """Use of the first resource: `amount` over each [start, end) of `spans`; other resources unused."""
    use = np.zeros((resources, steps))
    for start, end, amount in spans:
        use[0, start:end] += amount
    return use


def errors_of(raw: object, step: int = MINUTE) -> list[str]:
    with pytest.raises(RDLErrors) as info:
        parse_policy(raw, step, "cluster.yaml")
    return [error.headline() for error in info.value.errors]


# Parsing


def test_no_policies_is_no_overcommit() -> None:
    assert parse_policy({}, MINUTE) == NO_OVERCOMMIT
    assert parse_policy(None, MINUTE) == NO_OVERCOMMIT
    assert not NO_OVERCOMMIT.limited


def test_user_limits_parse_with_defaults_inherited_by_overrides() -> None:
    policy = parse_policy({"user_limits": {
        "instantaneous": "50%", "average": 0.25, "window": "24h",
        "users": {"alice": {"instantaneous": "80%"}, "ops": {"instantaneous": None, "average": None}},
    }}, MINUTE)
    assert (policy.instantaneous, policy.average, policy.window) == (0.5, 0.25, DAY)
    assert policy.for_user("alice") == SharingPolicy(0.8, 0.25, DAY)
    assert policy.for_user("ops") == SharingPolicy(None, None, DAY)
    assert policy.for_user("bob") == policy.for_user(None) == SharingPolicy(0.5, 0.25, DAY)
    assert policy.limited


def test_policies_come_from_the_cluster_file() -> None:
    cluster = parse_cluster(
        "start: 2026-11-23T00:00:00Z\nstep: 5m\nhorizon: 7d\ncapacity: {vcores: 64}\n"
        "policies:\n  user_limits: {instantaneous: 50%, average: 25%, window: 1d}\n", "cluster.yaml")
    policy = parse_policy(cluster.policies, cluster.step, "cluster.yaml")
    assert policy == SharingPolicy(0.5, 0.25, DAY // 5)


def test_a_user_may_set_its_own_average_over_the_default_window() -> None:
    policy = parse_policy({"user_limits": {"window": "12h", "users": {"bob": {"average": "10%"}}}}, MINUTE)
    assert policy.for_user("bob") == SharingPolicy(None, 0.1, 720)
    assert policy.for_user("carol") == SharingPolicy(None, None, 720)


@pytest.mark.parametrize(("limits", "expected"), [
    ({"instantaneous": "150%"}, "`policies.user_limits.instantaneous` must be a share from 0% to 100%, got `150%`"),
    ({"instantaneous": 50}, "did you mean `50%`?"),
    ({"instantaneous": "half"}, "must be a share such as `50%` or `0.5`, got `half`"),
    ({"instantaneous": True}, "must be a share such as `50%` or `0.5`"),
    ({"instantaneous": -0.1}, "must be a share from 0% to 100%"),
    ({"average": "25%"}, "`policies.user_limits.average` needs a `window` to average over"),
    ({"average": "25%", "window": "24"}, "`24` needs a unit for a duration (did you mean `24m`?)"),
    ({"average": "25%", "window": "90s"}, "must be a whole number of plan steps (1m), got `90s`"),
    ({"average": "25%", "window": "0h"}, "must be a positive duration"),
    ({"instantanous": "50%"}, "did you mean `instantaneous`?"),
    ({"users": ["alice"]}, "`policies.user_limits.users` must be a mapping"),
    ({"users": {"alice": {"avg": "5%"}}}, "`policies.user_limits.users.alice.avg` is not a policy setting"),
    ({"users": {"alice": {"average": "5%"}}}, "`policies.user_limits.users.alice.average` needs a `window`"),
])
def test_bad_limits_are_named_with_their_key(limits: dict[str, object], expected: str) -> None:
    (message,) = errors_of({"user_limits": limits})
    assert message.startswith("cluster.yaml: ")
    assert expected in message


def test_unknown_policy_and_non_mapping_policies_are_errors() -> None:
    assert "did you mean `user_limits`?" in errors_of({"user_limit": {}})[0]
    assert "`policies` must be a mapping" in errors_of(["user_limits"])[0]


def test_every_bad_value_is_reported_at_once() -> None:
    messages = errors_of({"user_limits": {"instantaneous": "2", "average": "x", "window": "7",
                                          "users": {"alice": {"instantaneous": "101%"}}}})
    assert len(messages) == 4


def test_a_direct_policy_is_validated_too() -> None:
    with pytest.raises(ValueError, match="needs a `window`"):
        SharingPolicy(average=0.25)
    with pytest.raises(ValueError, match="from 0 to 1"):
        SharingPolicy(instantaneous=1.5)


# Instantaneous limit and headroom


def test_instantaneous_exactly_at_the_cap_is_accepted() -> None:
    policy = SharingPolicy(instantaneous=0.5)
    assert instantaneous_violation(policy, "alice", constant(10, 10), held(10, [(2, 6, 5)])) is None


def test_instantaneous_one_unit_over_the_cap_is_rejected() -> None:
    policy = SharingPolicy(instantaneous=0.5)
    violation = instantaneous_violation(policy, "alice", constant(10, 10, 100), held(10, [(2, 6, 5), (3, 5, 1)], 2))
    assert violation == Violation(INSTANTANEOUS, "alice", 0, 3, 5, 3, 6.0, 5.0, 0.6, 0.5)
    assert violation.message(RESOURCES, ORIGIN, MINUTE) == (
        "user alice would hold 60% of vcores (6, 5 allowed) at 2026-11-23T00:03:00Z; the instantaneous limit "
        "is 50% (exceeded for 2m from 2026-11-23T00:03:00Z)")


def test_instantaneous_cap_that_is_not_a_binary_fraction_is_exact() -> None:
    policy = SharingPolicy(instantaneous=0.3)  # 0.3 × 10 is 3.0000000000000004 in floats
    capacity = constant(4, 10, 1000)
    assert instantaneous_violation(policy, None, capacity, constant(4, 3, 300)) is None
    assert instantaneous_violation(policy, None, capacity, constant(4, 3, 301)) is not None
    assert headroom(policy, None, capacity, constant(4, 2, 0))[0].tolist() == [1, 1, 1, 1]


def test_the_worst_step_is_reported_with_the_resource() -> None:
    policy = SharingPolicy(instantaneous=0.5)
    use = np.array([[6.0, 0, 0, 0], [0, 0, 70, 60]])
    violation = instantaneous_violation(policy, None, constant(4, 10, 100), use)
    assert violation is not None
    assert (violation.resource, violation.at, violation.start, violation.end) == (1, 2, 2, 4)
    assert violation.message(RESOURCES, ORIGIN, MINUTE).startswith(
        "reservations without a user would hold 70% of memory (70MiB, 50MiB allowed)")


def test_headroom_is_what_the_user_may_still_hold() -> None:
    policy = SharingPolicy(instantaneous=0.5)
    capacity = np.array([[10.0, 10, 10, 10, 4]])
    used = np.array([[0.0, 3, 5, 7, 1]])
    assert headroom(policy, "alice", capacity, used).tolist() == [[5, 2, 0, 0, 1]]


def test_headroom_without_an_instantaneous_limit_is_the_capacity() -> None:
    capacity = constant(3, 10, 100)
    room = headroom(SharingPolicy(average=0.1, window=2), "alice", capacity, constant(3, 1, 1))
    assert np.array_equal(room, capacity)
    assert room is not capacity


def test_only_steps_a_new_reservation_adds_to_count_when_it_is_given() -> None:
    policy = SharingPolicy(instantaneous=0.5)
    before = held(10, [(0, 2, 8)])  # over the cap already, say after a capacity drop
    added = held(10, [(5, 7, 3)])
    assert instantaneous_violation(policy, "alice", constant(10, 10), before + added, added=added) is None
    assert instantaneous_violation(policy, "alice", constant(10, 10), before + added) is not None


# Average limit over a sliding window


@pytest.mark.parametrize("start", [0, 100, 3 * DAY - 25 * 60])
def test_yarn_example_25_hours_at_exactly_25_percent_is_accepted(start: int) -> None:
    """YARN rejects this (its window check is conservative); every 24h window holds exactly 25% here."""
    policy = SharingPolicy(average=0.25, window=DAY)
    capacity = constant(3 * DAY, 100, 4096)
    use = held(3 * DAY, [(start, start + 25 * 60, 25)], 2)
    assert average_violation(policy, "alice", capacity, use) is None


def test_one_unit_over_the_average_for_a_full_window_is_rejected() -> None:
    policy = SharingPolicy(average=0.25, window=DAY)
    use = held(3 * DAY, [(100, 100 + DAY, 26)], 2)
    violation = average_violation(policy, "alice", constant(3 * DAY, 100, 4096), use)
    assert violation is not None
    assert (violation.limit, violation.resource, violation.start, violation.end) == (AVERAGE, 0, 100, 100 + DAY)
    assert (violation.held, violation.allowed, violation.share, violation.cap) == (26, 25, 0.26, 0.25)
    assert violation.message(RESOURCES, ORIGIN, MINUTE) == (
        "user alice would hold 26% of vcores averaged over the 1d from 2026-11-23T01:40:00Z; "
        "the average limit is 25% over any 1d")


def test_one_unit_over_for_one_step_in_a_long_window_is_rejected() -> None:
    policy = SharingPolicy(average=0.25, window=DAY)
    use = held(3 * DAY, [(0, 3 * DAY, 25 * 4096 / 100), (DAY, DAY + 1, 1)])
    violation = average_violation(policy, "alice", constant(3 * DAY, 4096), use)
    assert violation is not None
    assert violation.start <= DAY < violation.end
    assert violation.message(("memory",), ORIGIN, MINUTE).startswith("user alice would hold 25.00002% of memory")


def test_a_burst_at_the_horizon_edge_is_judged_like_one_in_the_middle() -> None:
    policy = SharingPolicy(average=0.25, window=20)
    capacity = constant(60, 10)
    for start in (0, 30, 55):
        assert average_violation(policy, None, capacity, held(60, [(start, start + 5, 10)])) is None
        over = held(60, [(start, start + 5, 10), (start, start + 1, 1)])
        assert average_violation(policy, None, capacity, over) is not None


def test_a_horizon_shorter_than_the_window_counts_the_edge_capacity_beyond_it() -> None:
    policy = SharingPolicy(average=0.5, window=20)
    capacity = np.array([[10.0] * 5 + [4.0] * 5])  # beyond the horizon: 10 before it, 4 after it
    # The window from step 0 has 70 + 10 × 4 = 110 of capacity: 55 allowed.
    assert average_violation(policy, None, capacity, held(10, [(0, 5, 10), (5, 6, 5)])) is None
    violation = average_violation(policy, None, capacity, held(10, [(0, 5, 10), (5, 6, 6)]))
    assert violation is not None
    assert (violation.start, violation.end, violation.held * 20, violation.allowed * 20) == (0, 20, 56, 55)


def test_only_windows_a_new_reservation_falls_in_count_when_it_is_given() -> None:
    policy = SharingPolicy(average=0.5, window=4)
    before = held(20, [(0, 4, 8)])
    added = held(20, [(12, 16, 5)])
    assert average_violation(policy, "bob", constant(20, 10), before + added, added=added) is None
    assert average_violation(policy, "bob", constant(20, 10), before + added) is not None


def test_per_user_overrides_apply_to_their_user_only() -> None:
    policy = parse_policy({"user_limits": {"instantaneous": "50%", "average": "40%", "window": "10m",
                                           "users": {"alice": {"instantaneous": "80%"}, "ops": {"average": None}}}},
                          MINUTE)
    capacity, use = constant(30, 10), held(30, [(0, 4, 7)])
    assert check(policy, "alice", capacity, use) is None
    assert check(policy, "bob", capacity, use) is not None
    assert headroom(policy, "alice", capacity, use)[0, 0] == 1
    assert headroom(policy, "bob", capacity, use)[0, 0] == 0
    long_use = held(30, [(0, 30, 5)])
    assert check(policy, "ops", capacity, long_use) is None
    violation = check(policy, "bob", capacity, long_use)
    assert violation is not None and violation.limit == AVERAGE


def test_check_reports_the_instantaneous_limit_first() -> None:
    policy = SharingPolicy(instantaneous=0.5, average=0.1, window=5)
    violation = check(policy, "alice", constant(10, 10), held(10, [(0, 10, 6)]))
    assert violation is not None and violation.limit == INSTANTANEOUS


# Against brute force


def brute_average(use: list[list[int]], capacity: list[list[int]], percent: int, window: int
                  ) -> list[tuple[Fraction, int, int]]:
    """(share, resource, start) of every window over the limit, by a plain loop in exact arithmetic."""
    steps = len(use[0])
    found = []
    for resource in range(len(use)):
        for start in range(-(window - 1), steps):
            span = range(start, start + window)
            total = sum(use[resource][t] for t in span if 0 <= t < steps)
            room = sum(capacity[resource][min(max(t, 0), steps - 1)] for t in span)
            if 100 * total > percent * room:
                share = Fraction(total, room) if room else Fraction(10**9)
                found.append((share, resource, start))
    return found


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[list[int]], list[list[int]], int, int]:
    resources = draw(st.integers(1, 2))
    steps = draw(st.integers(1, 12))
    row = st.lists(st.integers(0, 6), min_size=steps, max_size=steps)
    capacity = draw(st.lists(row, min_size=resources, max_size=resources))
    use = draw(st.lists(row, min_size=resources, max_size=resources))
    return use, capacity, draw(st.integers(0, 100)), draw(st.integers(1, 15))


@settings(max_examples=300, deadline=None)
@given(plans())
def test_average_violation_agrees_with_a_loop_over_every_window(
        case: tuple[list[list[int]], list[list[int]], int, int]) -> None:
    use, capacity, percent, window = case
    policy = SharingPolicy(average=percent / 100, window=window)
    violation = average_violation(policy, "u", np.array(capacity, dtype=float), np.array(use, dtype=float))
    expected = brute_average(use, capacity, percent, window)
    assert (violation is None) == (not expected)
    if violation is not None:
        worst = max(share for share, _, _ in expected)
        assert (violation.resource, violation.start) in {(r, s) for share, r, s in expected if share == worst}


@settings(max_examples=200, deadline=None)
@given(plans())
def test_instantaneous_violation_and_headroom_agree_with_a_loop_over_every_step(
        case: tuple[list[list[int]], list[list[int]], int, int]) -> None:
    use, capacity, percent, _ = case
    policy = SharingPolicy(instantaneous=percent / 100)
    cap, used = np.array(capacity, dtype=float), np.array(use, dtype=float)
    over = [(r, t) for r in range(len(use)) for t in range(len(use[0])) if 100 * use[r][t] > percent * capacity[r][t]]
    violation = instantaneous_violation(policy, "u", cap, used)
    assert (violation is None) == (not over)
    if violation is not None:
        assert (violation.resource, violation.at) in over
    room = headroom(policy, "u", cap, used)
    for r in range(len(use)):
        for t in range(len(use[0])):
            exact = max(Fraction(percent * capacity[r][t], 100) - use[r][t], Fraction(0))
            assert abs(Fraction(room[r, t]) - exact) < Fraction(1, 10**9)
