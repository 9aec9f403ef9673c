"""The queue tree: fair ranking of children, maximums, and the QueueControl operations the follower uses."""

from __future__ import annotations

import inspect

import pytest

from follower.scheduler import AppState, QueueError, Resources, Scheduler
from follower.scheduler.queues import Queue, QueueSettings, fair_key

from .conftest import app, cluster, served

TWO = {"placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]}


def leaf(name: str, used: dict[str, float], guaranteed: dict[str, float] | None = None, weight: float = 1.0) -> Queue:
    queue = Queue(name, f"root.{name}", None, QueueSettings(guaranteed=Resources(guaranteed or {}), weight=weight))
    queue.used = Resources(used)
    return queue


CAPACITY = Resources({"memory": 1000.0, "vcores": 100.0})


def ranked(*queues: Queue) -> list[str]:
    return [queue.name for queue in sorted(queues, key=lambda queue: fair_key(queue, CAPACITY))]


def test_a_child_below_its_guarantee_comes_before_any_child_at_or_above_it() -> None:
    below = leaf("below", {"memory": 900.0}, {"memory": 1000.0})
    idle = leaf("idle", {"memory": 1.0})  # no guarantee: always at or above it
    assert ranked(idle, below) == ["below", "idle"]


def test_children_below_guarantee_compare_their_largest_share_of_it_first() -> None:
    a = leaf("a", {"memory": 50.0, "vcores": 5.0}, {"memory": 100.0, "vcores": 10.0})    # 0.5, 0.5
    b = leaf("b", {"memory": 60.0, "vcores": 1.0}, {"memory": 100.0, "vcores": 10.0})    # 0.6, 0.1
    c = leaf("c", {"memory": 50.0, "vcores": 1.0}, {"memory": 100.0, "vcores": 10.0})    # 0.5, 0.1
    assert ranked(a, b, c) == ["c", "a", "b"]


def test_children_above_guarantee_compare_weighted_shares_of_the_cluster_and_tie_by_name() -> None:
    heavy = leaf("heavy", {"memory": 400.0}, weight=4.0)  # 0.4 / 4
    light = leaf("light", {"memory": 200.0})              # 0.2
    twin = leaf("a-twin", {"memory": 100.0}, weight=1.0)  # 0.1, ties `heavy`, first by name
    assert ranked(light, heavy, twin) == ["a-twin", "heavy", "light"]


def test_children_above_guarantee_keep_being_measured_against_it() -> None:
    """YuniKorn's fair queue sort (`CompUsageRatioSeparately`): used / guaranteed, above the guarantee too."""
    small = leaf("small", {"memory": 120.0}, {"memory": 100.0})  # 1.2 of its guarantee (0.12 of the cluster)
    big = leaf("big", {"memory": 330.0}, {"memory": 300.0})      # 1.1 of its guarantee (0.33 of the cluster)
    assert ranked(small, big) == ["big", "small"]


def test_what_is_left_over_guarantees_goes_in_proportion_to_them_as_the_real_core_shares_it() -> None:
    """Two siblings guaranteed 1 and 3 of 8 slots, both asking for all 8: 2 and 6, as yunikorn-core 1.4.0 and
    1.9.0 share it (tests/peers/yunikorn/test_shim.py), not 4 and 4."""
    config = {**TWO, "queues": {"x": {"guaranteed": {"memory": 1024, "vcores": 1}},
                                "y": {"guaranteed": {"memory": 3072, "vcores": 3}}}}
    scheduler = cluster(config, nodes=1)
    app(scheduler, "in-x", 0.0, queue="x", count=8)
    app(scheduler, "in-y", 0.0, queue="y", count=8)
    got = served(scheduler, 1.0)
    assert (got.count("in-x"), got.count("in-y")) == (2, 6)


def test_scheduling_brings_queues_up_to_their_guarantees_before_sharing_the_rest() -> None:
    config = {**TWO, "queues": {"prod": {"guaranteed": {"memory": 6144, "vcores": 6}}, "adhoc": {}}}
    scheduler = cluster(config, nodes=1)
    app(scheduler, "adhoc-job", 0.0, queue="adhoc", count=8)
    app(scheduler, "prod-job", 1.0, queue="prod", count=8)
    got = served(scheduler, 2.0)
    assert got[:6] == ["prod-job"] * 6
    assert got[6:] == ["adhoc-job"] * 2  # beyond guarantees, the smaller share of the cluster goes first


def test_no_queue_goes_above_its_max_or_its_parents() -> None:
    config = {**TWO, "queues": {"p": {"max": {"memory": 3072, "vcores": 8}, "queues": {
        "x": {"max": {"memory": 2048, "vcores": 8}}, "y": {}}}}}
    scheduler = cluster(config, nodes=2)
    app(scheduler, "in-x", 0.0, queue="p.x", count=5)
    app(scheduler, "in-y", 0.0, queue="p.y", count=5)
    scheduler.schedule(1.0)
    assert scheduler.tree.get("root.p.x").used["memory"] <= 2048
    assert scheduler.tree.get("root.p").used == Resources({"memory": 3072, "vcores": 3})


def test_ensure_queue_creates_a_reservation_leaf_and_later_only_changes_its_guarantee() -> None:
    scheduler = cluster({"queues": {"plan": {"parent": True, "child_template": {"policy": "fair"}}}})
    scheduler.ensure_queue("root.plan.r1", Resources({"memory": 0, "vcores": 0}))
    queue = scheduler.tree.get("root.plan.r1")
    assert queue.is_leaf and queue.settings.policy == "fair"
    scheduler.submit("job", "u", 0.0, reservation="r1")
    scheduler.ensure_queue("root.plan.r1", Resources({"memory": 2048, "vcores": 2}),
                           Resources({"memory": 4096, "vcores": 4}))
    assert queue.guaranteed == Resources({"memory": 2048, "vcores": 2})
    assert queue.maximum == Resources({"memory": 4096, "vcores": 4})
    assert scheduler.applications_in("root.plan.r1") == ["job"]
    assert scheduler.queue_paths("root.plan") == ["root.plan.r1"]
    assert scheduler.queue_paths("root.nowhere") == []


def test_ensure_queue_refuses_a_guarantee_above_the_max_and_changes_nothing() -> None:
    scheduler = cluster({})
    with pytest.raises(QueueError, match="more than max"):
        scheduler.ensure_queue("root.plan.r1", Resources({"vcores": 4}), Resources({"vcores": 2}))
    assert scheduler.tree.find("root.plan") is None


def test_remove_queue_only_removes_a_queue_without_applications() -> None:
    scheduler = cluster({"queues": {"plan": {"parent": True}}})
    scheduler.ensure_queue("root.plan.r1", Resources({"vcores": 1}))
    scheduler.submit("job", "u", 0.0, reservation="r1")
    with pytest.raises(QueueError, match="still holds"):
        scheduler.remove_queue("root.plan.r1")
    scheduler.complete_application("job", 1.0)
    scheduler.remove_queue("root.plan.r1")
    assert scheduler.queue_paths("root.plan") == []


def test_move_application_keeps_its_running_containers_and_moves_their_usage() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}, "b": {}}})
    app(scheduler, "job", 0.0, queue="a", count=3)
    scheduler.schedule(1.0)
    app_record = scheduler.application("job")
    scheduler.add_ask("job", "later", {"memory": 1024, "vcores": 1}, 2.0)
    scheduler.move_application("job", "root.b")
    assert len(app_record.containers) == 3 and all(c.queue == "root.b" for c in app_record.containers.values())
    assert scheduler.tree.get("root.a").used.is_zero()
    assert scheduler.tree.get("root.b").used == Resources({"memory": 3072, "vcores": 3})
    assert scheduler.tree.get("root.a").pending == 0 and scheduler.tree.get("root.b").pending == 1
    assert [a.queue for a in scheduler.schedule(3.0)] == ["root.b"]


def test_kill_application_releases_its_containers_and_records_why() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}}})
    app(scheduler, "job", 0.0, count=2)
    scheduler.schedule(1.0)
    held = [c.id for c in scheduler.containers_of("job")]
    scheduler.kill_application("job", "reservation r1 ended")
    record = scheduler.application("job")
    assert record.state is AppState.KILLED and record.reason == "reservation r1 ended"
    assert not any(container in scheduler.containers for container in held)
    assert scheduler.capacity() == Resources({"memory": 16384, "vcores": 16})
    assert all(node.used.is_zero() for node in scheduler.nodes.by_name.values())


def test_removing_a_node_returns_and_releases_the_containers_lost_with_it() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}}}, nodes=2)
    app(scheduler, "job", 0.0, count=2)
    placed = {a.node for a in scheduler.schedule(1.0)}
    assert placed == {"n0", "n1"}
    lost = scheduler.remove_node("n0", 2.0)
    assert [c.node for c in lost] == ["n0"]
    assert scheduler.capacity() == Resources({"memory": 8192, "vcores": 8})
    assert scheduler.tree.get("root.a").used == Resources({"memory": 1024, "vcores": 1})


def test_application_states_follow_new_accepted_starting_running_completing_completed() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}}})
    scheduler.submit("job", "u", 0.0, queue="a")
    seen = [scheduler.application("job").state]
    scheduler.add_ask("job", "driver", {"memory": 1024, "vcores": 1}, 0.0)
    seen.append(scheduler.application("job").state)
    scheduler.schedule(1.0)
    seen.append(scheduler.application("job").state)
    scheduler.add_ask("job", "executor", {"memory": 1024, "vcores": 1}, 2.0)
    scheduler.schedule(2.0)
    seen.append(scheduler.application("job").state)
    for container in scheduler.containers_of("job"):
        scheduler.release(container.id, 3.0)
    seen.append(scheduler.application("job").state)
    scheduler.complete_application("job", 4.0)
    seen.append(scheduler.application("job").state)
    assert [state.value for state in seen] == ["New", "Accepted", "Starting", "Running", "Completing", "Completed"]
    assert scheduler.state_counts()[AppState.COMPLETED] == 1


def test_the_same_calls_give_the_same_allocations() -> None:
    def run() -> list[tuple[str, str, str]]:
        scheduler = cluster({**TWO, "queues": {"a": {"policy": "fair"}, "b": {"policy": "drf"}}}, nodes=3)
        for index in range(12):
            app(scheduler, f"j{index}", float(index % 3), queue="a" if index % 2 else "b", count=index % 4 + 1)
        return [(a.app_id, a.container_id, a.node) for a in scheduler.schedule(5.0)]
    assert run() == run()


def test_scheduler_implements_the_follower_queue_control_protocol() -> None:
    from follower.follow.follower import QueueControl

    methods = [name for name in vars(QueueControl) if not name.startswith("_")]
    assert len(methods) == 7
    for name in methods:
        wanted = inspect.signature(getattr(QueueControl, name))
        got = inspect.signature(getattr(Scheduler, name))
        assert list(got.parameters) == list(wanted.parameters), name
        assert [p.default for p in got.parameters.values()] == [p.default for p in wanted.parameters.values()], name


def test_advance_moves_the_clock_so_a_kill_is_recorded_at_that_time() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}}})
    app(scheduler, "job", 0.0)
    scheduler.schedule(1.0)
    scheduler.advance(50.0)
    scheduler.kill_application("job", "reservation r1 ended")
    record = scheduler.application("job")
    assert scheduler.now == 50.0 and record.state_since == 50.0


def test_advance_fires_the_starting_timeouts_that_fall_due_and_never_goes_back() -> None:
    scheduler = cluster({**TWO, "queues": {"a": {}}})
    app(scheduler, "job", 0.0)
    scheduler.schedule(1.0)
    assert scheduler.application("job").state is AppState.STARTING
    scheduler.advance(301.0)
    assert scheduler.application("job").state is AppState.RUNNING
    assert scheduler.application("job").state_since == 301.0 and scheduler.next_event_time() is None
    scheduler.advance(100.0)
    assert scheduler.now == 301.0

