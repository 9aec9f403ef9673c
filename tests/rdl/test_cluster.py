"""The cluster file: checked as strictly as RDL, with positions; capacity changes keep what they do not name."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rdl.cluster import MAX_CELLS, parse_cluster
from rdl.errors import RDLErrors
from rdl.validate import validate
from tests.rdl.support import one

BASE = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {memory: 100GiB, vcores: 10}\n"


def errors_of(text: str) -> list[str]:
    with pytest.raises(RDLErrors) as caught:
        parse_cluster(text, "cluster.yaml")
    return [error.headline() for error in caught.value.errors]


def test_a_share_over_100_percent_is_refused_where_it_is_written() -> None:
    (message,) = errors_of(BASE + "policies:\n  user_limits:\n    instantaneous: 200%\n")
    assert message.startswith("cluster.yaml:7:20: `policies.user_limits.instantaneous` must be a share from 0% to 100%")


def test_a_policy_error_inside_a_user_override_points_at_that_user() -> None:
    text = BASE + "policies:\n  user_limits:\n    window: 24h\n    users:\n      alice: {average: 2}\n"
    (message,) = errors_of(text)
    assert message.startswith("cluster.yaml:9:24: `policies.user_limits.users.alice.average`")


def test_an_unknown_policy_key_suggests_the_right_one() -> None:
    (message,) = errors_of(BASE + "policies:\n  user_limit:\n    instantaneous: 50%\n")
    assert message.startswith("cluster.yaml:6:3: `policies.user_limit` is not a policy setting")
    assert "did you mean `user_limits`?" in message


def test_partial_capacity_changes_keep_the_resources_they_do_not_name() -> None:
    text = BASE + ("changes:\n"
                   "  - {at: +2d, capacity: {memory: 50GiB}}\n"
                   "  - {at: +1d, capacity: {vcores: 5}}\n"
                   "  - {at: +3d, capacity: {vcores: 8}}\n")
    cluster = parse_cluster(text, "cluster.yaml")
    day = 86400
    start = datetime(2026, 11, 23, tzinfo=UTC)
    assert [(int((c.at - start).total_seconds()) // day, dict(c.capacity)) for c in cluster.changes] == [
        (1, {"memory": 100 * 1024, "vcores": 5.0}),
        (2, {"memory": 50 * 1024, "vcores": 5.0}),
        (3, {"memory": 50 * 1024, "vcores": 8.0}),
    ]


def test_the_policy_is_checked_with_the_default_step_too() -> None:
    text = "start: 2026-11-23T00:00:00Z\ncapacity: {vcores: 10}\npolicies:\n  user_limits:\n    instantaneous: 150%\n"
    (message,) = errors_of(text)
    assert message.startswith("cluster.yaml:5:20: `policies.user_limits.instantaneous` must be a share")


def test_the_plans_size_is_bounded_where_the_horizon_is_written() -> None:
    (message,) = errors_of("start: 2026-11-23T00:00:00Z\nhorizon: 5000w\ncapacity: {vcores: 4}\n")
    assert message.startswith("cluster.yaml:2:10: the plan would be 50,400,000 steps of 1m for 1 resource(s); "
                              f"at most {MAX_CELLS:,} steps x resources")


def test_a_capacity_naming_no_resource_is_an_error() -> None:
    (message,) = errors_of("start: 2026-11-23T00:00:00Z\ncapacity: {}\n")
    assert message.startswith("cluster.yaml:2:11: `capacity` names no resource")


WEEKLY = BASE + "changes:\n  - {at: 2026-11-26T00:00:00Z, every: 7d, for: 6h, capacity: {vcores: 5}}\n"


def test_a_recurring_change_is_a_window_of_what_it_names() -> None:
    cluster = parse_cluster(WEEKLY, "cluster.yaml")
    (window,) = cluster.windows
    assert cluster.changes == () and window.every == 7 * 86400 and window.length == 6 * 3600
    assert dict(window.capacity.items()) == {"vcores": 5.0}
    thursdays = list(window.occurrences(datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 12, 11, tzinfo=UTC)))
    assert [begins.isoformat() for begins, _ in thursdays] == ["2026-11-26T00:00:00+00:00",
                                                               "2026-12-03T00:00:00+00:00",
                                                               "2026-12-10T00:00:00+00:00"]
    assert thursdays[0][1] == datetime(2026, 11, 26, 6, tzinfo=UTC)


@pytest.mark.parametrize(("change", "expected"), [
    ("{at: +3d, every: 7d, capacity: {vcores: 5}}", "cluster.yaml:6:5: a recurring capacity change needs both "
     "`every` and `for`"),
    ("{at: +3d, every: 7d, for: 7d, capacity: {vcores: 5}}", "cluster.yaml:6:31: `for` (7d) must be shorter than "
     "`every` (7d)"),
    ("{at: +3d, every: 30s, for: 10s, capacity: {vcores: 5}}", "cluster.yaml:6:22: `every` (30s) must be at least "
     "the plan step (1m)"),
    ("{at: +3d, evry: 7d, for: 6h, capacity: {vcores: 5}}", "cluster.yaml:6:15: unknown key `evry` in a capacity "
     "change"),
])
def test_a_recurring_change_is_checked_where_it_is_written(change: str, expected: str) -> None:
    messages = errors_of(BASE + f"changes:\n  - {change}\n")
    assert any(message.startswith(expected) for message in messages), messages


def test_reservable_queues_are_read_in_order() -> None:
    assert parse_cluster(BASE + "queues: [dedicated, prod]\n", "cluster.yaml").queues == ("dedicated", "prod")
    assert parse_cluster(BASE, "cluster.yaml").queues == ()  # none listed: any queue


@pytest.mark.parametrize(("queues", "expected"), [
    ("queues: dedicated\n", "cluster.yaml:5:9: `queues` must be a non-empty list of queue names"),
    ("queues: []\n", "cluster.yaml:5:9: `queues` must be a non-empty list of queue names"),
    ("queues: [a, a]\n", "cluster.yaml:5:13: queue `a` is listed twice in `queues`"),
    ("queues: [a, {b: 1}]\n", "cluster.yaml:5:13: a queue name must be a non-empty word"),
])
def test_reservable_queues_are_checked_where_they_are_written(queues: str, expected: str) -> None:
    (message,) = errors_of(BASE + queues)
    assert message.startswith(expected)


def test_a_reservation_in_a_queue_the_cluster_does_not_list_is_invalid() -> None:
    cluster = parse_cluster(BASE + "queues: [dedicated, prod]\n", "cluster.yaml")
    validate([one("reservation r queue=prod { atom(b={vcores: 1}, w=1h, l=1h) }")], cluster)
    validate([one("reservation r { atom(b={vcores: 1}, w=1h, l=1h) }")], cluster)  # no queue: the default
    with pytest.raises(RDLErrors) as caught:
        validate([one("reservation r queue=prd { atom(b={vcores: 1}, w=1h, l=1h) }")], cluster)
    (error,) = caught.value.errors
    assert "names queue `prd`, which is not one of the cluster's reservable `queues`" in error.message
    assert error.hint == "did you mean `prod`?"
    assert (error.span.line, error.span.col) == (1, 21)  # at `queue=`'s value, not at the reservation
