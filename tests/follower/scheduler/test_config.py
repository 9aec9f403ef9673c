"""The configuration mapping: every mistake reported at once, with its key path and a likely fix."""

from __future__ import annotations

import pytest

from follower.scheduler import ConfigError, Resources, load_config


def problems(data: dict[str, object]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(data)
    return [str(problem) for problem in caught.value.problems]


def test_an_unknown_policy_names_its_key_path_and_suggests_the_likely_one() -> None:
    assert problems({"queues": {"etl": {"policy": "fiar"}}}) == [
        "scheduler.queues.etl.policy: unknown application sorting policy `fiar`; "
        "use one of fifo, fair, stateaware, drf, uwfq (did you mean `fair`?)"]


def test_every_mistake_is_reported_together_with_nested_paths() -> None:
    found = problems({
        "queues": {"p": {"queues": {"x": {"guaranted": {"vcores": 1}, "weight": -1}}}},
        "node_policy": "binpack",
        "preemption": {"delay": "30"},
    })
    assert found == [
        "scheduler.queues.p.queues.x.guaranted: unknown key (did you mean `guaranteed`?)",
        "scheduler.queues.p.queues.x.weight: must be a positive number, got -1",
        "scheduler.node_policy.type: unknown node policy `binpack`; use one of fair, binpacking "
        "(did you mean `binpacking`?)",
        "scheduler.preemption.delay: `30` needs a unit for a duration (did you mean `30m`?)",
    ]


def test_resource_amounts_take_memory_units_and_plain_counts() -> None:
    config = load_config({"queues": {"a": {"guaranteed": {"memory": "8GiB", "vcores": 4}}}})
    assert dict(config.queues)["root.a"].guaranteed == Resources({"memory": 8192, "vcores": 4})
    assert problems({"queues": {"a": {"max": {"vcores": "4GiB"}}}}) == [
        "scheduler.queues.a.max.vcores: `vcores` is a count and takes no unit, got `4GiB`"]


def test_a_guarantee_above_the_max_is_an_error() -> None:
    assert problems({"queues": {"a": {"guaranteed": {"vcores": 8}, "max": {"vcores": 4}}}})[0].startswith(
        "scheduler.queues.a.guaranteed:")


def test_policy_options_are_checked_by_the_policy() -> None:
    assert problems({"queues": {"a": {"policy": "uwfq", "policy_options": {"grace": "5s",
                                                                           "user_weights": {"ops": 0}}}}}) == [
        "scheduler.queues.a.policy_options.grace: not an option of `uwfq` "
        "(its options: resource, default_work, grace_period, user_weights)",
        "scheduler.queues.a.policy_options.user_weights.ops: must be a positive number"]


def test_an_unknown_placement_rule_suggests_the_likely_one() -> None:
    assert problems({"placement": [{"rule": "primarygroup"}, {"rule": "default"}]})[0] == (
        "scheduler.placement[0].rule: unknown placement rule `primarygroup`; use one of specified, user, "
        "primaryGroup, secondaryGroupExistingQueue, nestedUserQueue, default, reject (did you mean `primaryGroup`?)")


def test_the_prefix_of_the_key_paths_is_where_the_mapping_sits() -> None:
    with pytest.raises(ConfigError, match=r"^simulation\.scheduler\.plan_queue: must be a queue path"):
        load_config({"plan_queue": 3}, where="simulation.scheduler")


def test_defaults_give_a_working_scheduler_configuration() -> None:
    config = load_config(None)
    assert config.starting_timeout == 300.0 and config.preemption_delay == 30.0 and config.node_policy == "fair"
    assert [rule.name for rule in config.placement] == ["specified", "default"]


def test_the_plans_default_queue_name_is_read_and_must_be_one_name() -> None:
    assert load_config(None).default_queue == "default"
    assert load_config({"default_queue": "shared"}).default_queue == "shared"
    assert problems({"plan_queue": "plan", "default_queue": "a.b"}) == [
        "scheduler.default_queue: must be one queue name without `.` (the leaf root.plan.NAME), got 'a.b'"]
