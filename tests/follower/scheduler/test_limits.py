"""Running-application limits: excess applications wait (never rejected) and are promoted oldest first."""

from __future__ import annotations

from follower.scheduler import AppState

from .conftest import app, cluster, served

RULES = [{"rule": "specified", "create": False}, {"rule": "reject"}]


def test_a_queue_limit_holds_back_excess_applications_without_rejecting_them() -> None:
    scheduler = cluster({"queues": {"a": {"max_running_apps": 2}}, "placement": RULES})
    for index in range(4):
        app(scheduler, f"j{index}", float(index))
    assert [a.id for a in scheduler.waiting] == ["j2", "j3"]
    assert sorted(set(served(scheduler, 5.0))) == ["j0", "j1"]
    assert scheduler.application("j3").state is AppState.ACCEPTED


def test_waiting_applications_are_promoted_oldest_first_as_slots_free() -> None:
    scheduler = cluster({"queues": {"a": {"max_running_apps": 1}}, "placement": RULES})
    app(scheduler, "first", 0.0)
    app(scheduler, "third", 2.0)
    app(scheduler, "second", 1.0)
    assert [a.id for a in scheduler.waiting] == ["second", "third"]
    scheduler.complete_application("first", 3.0)
    assert [a.id for a in scheduler.waiting] == ["third"]
    assert served(scheduler, 3.0) == ["second"]
    scheduler.kill_application("second", "test")
    assert served(scheduler, 4.0) == ["third"]


def test_a_parent_queue_limit_counts_every_application_below_it() -> None:
    config = {"queues": {"p": {"max_running_apps": 2, "queues": {"x": {}, "y": {}}}}, "placement": RULES}
    scheduler = cluster(config)
    app(scheduler, "x1", 0.0, queue="p.x")
    app(scheduler, "y1", 1.0, queue="p.y")
    app(scheduler, "x2", 2.0, queue="p.x")
    assert [a.id for a in scheduler.waiting] == ["x2"]


def test_a_user_limit_applies_across_queues_with_per_user_overrides() -> None:
    config = {"queues": {"a": {}, "b": {}}, "placement": RULES,
              "user_limits": {"max_running_apps": 1, "users": {"ops": 3}}}
    scheduler = cluster(config)
    app(scheduler, "alice1", 0.0, queue="a", user="alice")
    app(scheduler, "alice2", 1.0, queue="b", user="alice")
    for index in range(3):
        app(scheduler, f"ops{index}", 2.0 + index, queue="b", user="ops")
    assert [a.id for a in scheduler.waiting] == ["alice2"]
    scheduler.complete_application("alice1", 9.0)
    assert scheduler.waiting == []
    assert served(scheduler, 9.0) == ["alice2", "ops0", "ops1", "ops2"]


def test_promotion_skips_an_older_application_still_over_its_user_limit() -> None:
    config = {"queues": {"a": {"max_running_apps": 2}}, "placement": RULES,
              "user_limits": {"users": {"bob": 1}}}
    scheduler = cluster(config)
    app(scheduler, "bob1", 0.0, user="bob")
    app(scheduler, "carol1", 1.0, user="carol")
    app(scheduler, "bob2", 2.0, user="bob")
    app(scheduler, "carol2", 3.0, user="carol")
    scheduler.complete_application("carol1", 4.0)
    assert [a.id for a in scheduler.waiting] == ["bob2"]  # bob is still at his limit; carol2 goes first
    assert scheduler.application("carol2").runnable
