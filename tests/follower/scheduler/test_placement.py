"""Queue placement rules (YARN Fair Scheduler style), rejection, creation, and reservation queues."""

from __future__ import annotations

from typing import Any

import pytest

from follower.follow.follower import queue_name
from follower.scheduler import AppState, ConfigError, PlacementRejected, Resources, Scheduler
from follower.scheduler.placement import reservation_of_queue, reservation_queue

QUEUES = {"default": {}, "users": {"parent": True}, "engineering": {"parent": True, "queues": {"alice": {}}},
          "analytics": {}, "plan": {"parent": True}}


def placed(rules: list[Any], user: str = "alice", groups: tuple[str, ...] = (), queue: str | None = None) -> str:
    scheduler = Scheduler({"queues": QUEUES, "placement": rules})
    return scheduler.submit("job", user, 0.0, groups=groups, queue=queue)


def test_specified_places_in_the_requested_queue_and_passes_on_when_none_is_requested() -> None:
    rules = [{"rule": "specified", "create": False}, {"rule": "default"}]
    assert placed(rules, queue="analytics") == "root.analytics"
    assert placed(rules, queue="root.analytics") == "root.analytics"
    assert placed(rules) == "root.default"
    assert placed(rules, queue="default") == "root.default"


def test_specified_without_create_passes_on_a_missing_queue_and_with_create_makes_it() -> None:
    assert placed([{"rule": "specified", "create": False}, {"rule": "default"}], queue="new") == "root.default"
    scheduler = Scheduler({"queues": QUEUES, "placement": [{"rule": "specified"}, {"rule": "default"}]})
    assert scheduler.submit("job", "u", 0.0, queue="users.fresh") == "root.users.fresh"
    assert scheduler.tree.get("root.users.fresh").is_leaf


def test_specified_rejects_a_parent_queue_and_a_malformed_name() -> None:
    rules = [{"rule": "specified"}, {"rule": "default"}]
    with pytest.raises(PlacementRejected, match="parent queue"):
        placed(rules, queue="users")
    with pytest.raises(PlacementRejected, match="not a queue name"):
        placed(rules, queue=".q1")


def test_user_rule_places_in_a_queue_named_after_the_user_with_periods_replaced() -> None:
    scheduler = Scheduler({"queues": QUEUES, "placement": [{"rule": "user", "parent": "root.users"}]})
    assert scheduler.submit("job", "first.last", 0.0) == "root.users.first_dot_last"


def test_primary_group_without_create_passes_on_when_its_queue_is_missing() -> None:
    rules = [{"rule": "primaryGroup", "create": False}, {"rule": "default"}]
    assert placed(rules, groups=("analytics", "x")) == "root.analytics"
    assert placed(rules, groups=("sales",)) == "root.default"
    assert placed(rules) == "root.default"  # no groups at all


def test_secondary_group_existing_queue_takes_the_first_secondary_group_with_a_leaf() -> None:
    rules = [{"rule": "secondaryGroupExistingQueue"}, {"rule": "default"}]
    assert placed(rules, groups=("primary", "sales", "analytics")) == "root.analytics"
    assert placed(rules, groups=("analytics",)) == "root.default"  # the primary group does not count


def test_nested_user_queue_puts_the_user_under_the_queue_the_nested_rule_names() -> None:
    rules = [{"rule": "nestedUserQueue", "nested": {"rule": "primaryGroup", "create": False}}, {"rule": "default"}]
    assert placed(rules, user="alice", groups=("engineering",)) == "root.engineering.alice"
    assert placed(rules, user="bob", groups=("engineering",)) == "root.engineering.bob"
    assert placed(rules, user="bob", groups=("analytics",)) == "root.default"  # a leaf is no parent
    assert placed(rules, user="bob", groups=("sales",)) == "root.default"      # missing, not created


def test_reject_refuses_with_a_reason_and_the_rejection_is_counted() -> None:
    scheduler = Scheduler({"queues": QUEUES, "placement": [{"rule": "specified", "create": False},
                                                           {"rule": "reject"}]})
    with pytest.raises(PlacementRejected, match="`reject` matched"):
        scheduler.submit("job", "u", 0.0, queue="nowhere")
    assert scheduler.state_counts()[AppState.REJECTED] == 1
    assert "job" not in scheduler.apps


def test_a_rule_list_whose_last_rule_is_not_terminal_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"scheduler\.placement\[1\]: the last rule `primaryGroup` may pass"):
        Scheduler({"placement": [{"rule": "specified"}, {"rule": "primaryGroup", "create": False}]})


def test_a_rule_after_a_terminal_rule_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"placement\[1\]: can never be reached"):
        Scheduler({"placement": [{"rule": "default"}, {"rule": "reject"}]})


def test_an_application_with_a_reservation_goes_to_its_reservation_queue() -> None:
    scheduler = Scheduler({"queues": QUEUES, "placement": [{"rule": "reject"}]})
    scheduler.ensure_queue("root.plan.nightly", Resources({"vcores": 4}))
    assert scheduler.submit("job", "u", 0.0, reservation="nightly") == "root.plan.nightly"


def test_an_unknown_or_ended_reservation_is_refused_with_a_clear_reason() -> None:
    scheduler = Scheduler({"queues": QUEUES})
    with pytest.raises(PlacementRejected, match=r"reservation `ghost` is not active: no queue `root\.plan\.ghost`"):
        scheduler.submit("a", "u", 0.0, reservation="ghost")
    scheduler.ensure_queue("root.plan.done", Resources({"vcores": 1}))
    scheduler.remove_queue("root.plan.done")
    with pytest.raises(PlacementRejected, match="reservation `done` is no longer active"):
        scheduler.submit("b", "u", 1.0, reservation="done")


def test_a_reservation_with_a_dot_goes_to_the_queue_the_follower_made_for_it() -> None:
    scheduler = Scheduler({"queues": QUEUES, "placement": [{"rule": "reject"}]})
    scheduler.ensure_queue(f"root.plan.{queue_name('etl.nightly')}", Resources({"vcores": 4}))
    assert scheduler.submit("job", "u", 0.0, reservation="etl.nightly") == "root.plan.etl_dot_nightly"
    assert scheduler.application("job").reservation == "etl.nightly"


def test_the_follower_names_reservation_queues_with_the_schedulers_mapping() -> None:
    for name in ("nightly", "etl.nightly", "a.b.c"):
        assert queue_name(name) == reservation_queue(name)
        assert reservation_of_queue(reservation_queue(name)) == name


def test_an_ended_reservation_with_a_dot_is_refused_as_no_longer_active() -> None:
    scheduler = Scheduler({"queues": QUEUES})
    scheduler.ensure_queue("root.plan.etl_dot_nightly", Resources({"vcores": 1}))
    scheduler.remove_queue("root.plan.etl_dot_nightly")
    with pytest.raises(PlacementRejected, match=r"reservation `etl\.nightly` is no longer active"):
        scheduler.submit("late", "u", 1.0, reservation="etl.nightly")
    assert "etl.nightly" in scheduler.rejected["late"]


def test_no_reservation_submits_into_the_plans_configured_default_queue() -> None:
    scheduler = Scheduler({"queues": QUEUES, "default_queue": "shared"})
    scheduler.ensure_queue("root.plan.shared", Resources({"vcores": 4}))
    scheduler.ensure_queue("root.plan.default", Resources({"vcores": 4}))  # a reservation named `default` here
    with pytest.raises(PlacementRejected, match=r"would be the plan's default queue `root\.plan\.shared`"):
        scheduler.submit("sneaky", "u", 0.0, reservation="shared")
    assert scheduler.submit("job", "u", 0.0, reservation="default") == "root.plan.default"
