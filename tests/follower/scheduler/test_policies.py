"""Every application sorting policy's order on hand-made cases."""

from __future__ import annotations

import pytest

from follower.scheduler import AppState, Scheduler
from follower.scheduler.applications import DISABLE_STATE_AWARE_TAG
from follower.scheduler.policies import APP_POLICIES, get_policy

from .conftest import app, cluster, place_on, served


def queue_config(policy: str, **leaf: object) -> dict[str, object]:
    return {"queues": {"a": {"policy": policy, **leaf}},
            "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]}


def order(scheduler: Scheduler, path: str = "root.a") -> list[str]:
    ordering = scheduler.tree.get(path).ordering
    assert ordering is not None
    return [application.id for application in ordering.ordered()]


def test_policies_are_registered_by_name_and_a_typo_suggests_the_right_one() -> None:
    assert set(APP_POLICIES) == {"fifo", "fair", "stateaware", "drf", "uwfq"}
    with pytest.raises(ValueError, match="did you mean `fifo`"):
        get_policy("fiffo")


# ---- fifo ----------------------------------------------------------------------------------------


def test_fifo_serves_the_oldest_submission_first_and_ties_by_id() -> None:
    scheduler = cluster(queue_config("fifo"), nodes=1, size={"memory": 2048.0, "vcores": 2.0})
    app(scheduler, "late", 5.0)
    app(scheduler, "b-tied", 1.0)
    app(scheduler, "a-tied", 1.0)
    assert order(scheduler) == ["a-tied", "b-tied", "late"]
    assert served(scheduler, 6.0) == ["a-tied", "b-tied"]  # the node holds two; the latest waits


def test_fifo_puts_priority_first_when_the_queue_enables_it_and_last_when_not() -> None:
    enabled = cluster(queue_config("fifo"))
    app(enabled, "old", 0.0)
    app(enabled, "urgent", 1.0, priority=5)
    assert order(enabled) == ["urgent", "old"]
    disabled = cluster(queue_config("fifo", priority_sort=False))
    app(disabled, "old", 0.0)
    app(disabled, "urgent", 1.0, priority=5)
    assert order(disabled) == ["old", "urgent"]


# ---- fair ----------------------------------------------------------------------------------------


def test_fair_serves_the_application_with_the_smallest_largest_share_of_the_guarantee() -> None:
    config = queue_config("fair", guaranteed={"memory": 4096, "vcores": 8})
    scheduler = cluster(config, nodes=1, size={"memory": 16384.0, "vcores": 16.0})
    app(scheduler, "memory-heavy", 0.0, size={"memory": 2048.0, "vcores": 1.0})  # shares 0.5, 0.125
    app(scheduler, "cpu-heavy", 1.0, size={"memory": 512.0, "vcores": 3.0})      # shares 0.375, 0.125
    scheduler.schedule(2.0)
    scheduler.add_ask("memory-heavy", "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    scheduler.add_ask("cpu-heavy", "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["cpu-heavy", "memory-heavy"]  # 0.375 < 0.5 on the largest share


def test_fair_compares_the_second_largest_share_when_the_largest_ties() -> None:
    config = queue_config("fair", guaranteed={"memory": 4096, "vcores": 8})
    scheduler = cluster(config, nodes=1, size={"memory": 16384.0, "vcores": 16.0})
    app(scheduler, "x", 0.0, size={"memory": 2048.0, "vcores": 2.0})  # 0.5, 0.25
    app(scheduler, "y", 1.0, size={"memory": 2048.0, "vcores": 1.0})  # 0.5, 0.125
    scheduler.schedule(2.0)
    for name in ("x", "y"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["y", "x"]


def test_fair_weights_divide_an_applications_shares() -> None:
    config = queue_config("fair", guaranteed={"memory": 8192, "vcores": 8})
    scheduler = cluster(config, nodes=1, size={"memory": 16384.0, "vcores": 16.0})
    app(scheduler, "heavy", 0.0, size={"memory": 4096.0, "vcores": 4.0}, weight=4.0)  # 0.5 / 4
    app(scheduler, "light", 1.0, size={"memory": 2048.0, "vcores": 2.0})              # 0.25
    scheduler.schedule(2.0)
    for name in ("heavy", "light"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["heavy", "light"]


def test_fair_spreads_a_queue_evenly_over_its_applications() -> None:
    scheduler = cluster(queue_config("fair", guaranteed={"memory": 8192, "vcores": 8}), nodes=1)
    app(scheduler, "first", 0.0, count=8)
    app(scheduler, "second", 1.0, count=8)
    got = served(scheduler, 2.0)
    assert got.count("first") == got.count("second") == 4


# ---- stateaware ----------------------------------------------------------------------------------


def test_stateaware_reproduces_the_yunikorn_design_example_run() -> None:
    """App1's driver, then its executors E11 and E12, and only then App2's driver (YuniKorn 1.3 design)."""
    scheduler = cluster(queue_config("stateaware"), nodes=4)
    scheduler.submit("App1", "u", 0.0, queue="a")
    scheduler.add_ask("App1", "D1", {"memory": 1024, "vcores": 1}, 0.0)
    scheduler.submit("App2", "u", 1.0, queue="a")
    scheduler.add_ask("App2", "D2", {"memory": 1024, "vcores": 1}, 1.0)
    assert [a.application(x).state for a, x in ((scheduler, "App1"), (scheduler, "App2"))] == [AppState.ACCEPTED] * 2

    first = scheduler.schedule(2.0)
    assert [(a.app_id, a.ask_id) for a in first] == [("App1", "D1")]  # App2's driver is ignored while App1 starts
    assert scheduler.application("App1").state is AppState.STARTING
    assert scheduler.application("App2").state is AppState.ACCEPTED

    scheduler.add_ask("App1", "E11", {"memory": 1024, "vcores": 1}, 3.0)
    scheduler.add_ask("App1", "E12", {"memory": 1024, "vcores": 1}, 3.0)
    second = scheduler.schedule(4.0)
    assert [(a.app_id, a.ask_id) for a in second] == [("App1", "E11"), ("App1", "E12"), ("App2", "D2")]
    assert scheduler.application("App1").state is AppState.RUNNING
    assert scheduler.application("App2").state is AppState.STARTING

    scheduler.add_ask("App2", "E21", {"memory": 1024, "vcores": 1}, 5.0)
    assert [(a.app_id, a.ask_id) for a in scheduler.schedule(6.0)] == [("App2", "E21")]
    assert scheduler.application("App2").state is AppState.RUNNING


def stateaware_queue(states: dict[str, str]) -> Scheduler:
    """A stateaware queue whose applications (submitted in name order) are brought to the given states."""
    scheduler = cluster(queue_config("stateaware"), nodes=4)
    for index, (name, state) in enumerate(sorted(states.items())):
        scheduler.submit(name, "u", float(index), queue="a")
        allocations = {"new": 0, "accepted": 0, "starting": 1, "running": 2}[state]
        for count in range(allocations):
            place_on(scheduler, name, "n0", float(index), size={"memory": 1, "vcores": 0}, ask=f"got{count}")
        if state != "new":
            scheduler.add_ask(name, "more", {"memory": 1, "vcores": 0}, float(index))
    return scheduler


@pytest.mark.parametrize(("states", "expected"), [
    ({"a1": "accepted", "a2": "accepted"}, ["a1"]),                       # one accepted: the oldest
    ({"a1": "starting", "a2": "accepted"}, ["a1"]),                       # a starting one blocks accepted ones
    ({"a1": "accepted", "a2": "starting"}, ["a2"]),                       # ... even a younger starting one
    ({"a1": "running", "a2": "running", "a3": "accepted"}, ["a1", "a2", "a3"]),
    ({"a1": "running", "a2": "starting", "a3": "accepted"}, ["a1", "a2"]),
    ({"a1": "accepted", "a2": "running", "a3": "starting"}, ["a2", "a3"]),  # by submission time
    ({"a1": "new", "a2": "accepted"}, ["a2"]),                            # New asks for nothing
    ({"a1": "running", "a2": "new"}, ["a1"]),
])
def test_stateaware_drip_feeds_one_new_application_in_every_state_combination(
        states: dict[str, str], expected: list[str]) -> None:
    scheduler = stateaware_queue(states)
    assert {name: scheduler.application(name).state.value.lower() for name in states} == states
    assert order(scheduler) == expected


def test_stateaware_a_starting_application_without_asks_still_blocks_accepted_ones() -> None:
    scheduler = cluster(queue_config("stateaware"), nodes=2)
    app(scheduler, "driver-only", 0.0)
    app(scheduler, "next", 1.0)
    assert served(scheduler, 2.0) == ["driver-only"]
    assert served(scheduler, 3.0) == []  # nothing pending for the Starting app, and it blocks `next`
    assert order(scheduler) == []


def test_stateaware_starting_times_out_into_running_after_five_minutes_by_default() -> None:
    scheduler = cluster(queue_config("stateaware"), nodes=2)
    app(scheduler, "single", 0.0)
    app(scheduler, "next", 1.0)
    assert served(scheduler, 2.0) == ["single"]
    assert scheduler.next_event_time() == pytest.approx(302.0)
    assert served(scheduler, 301.0) == []
    assert served(scheduler, 302.0) == ["next"]
    assert scheduler.application("single").state is AppState.RUNNING


def test_stateaware_starting_timeout_is_configurable() -> None:
    config = {**queue_config("stateaware"), "stateaware": {"starting_timeout": "30s"}}
    scheduler = cluster(config, nodes=2)
    app(scheduler, "single", 0.0)
    app(scheduler, "next", 1.0)
    assert served(scheduler, 2.0) == ["single"]
    assert served(scheduler, 32.0) == ["next"]


def test_stateaware_disable_tag_lets_a_single_container_application_run_at_once() -> None:
    scheduler = cluster(queue_config("stateaware"), nodes=2)
    app(scheduler, "single", 0.0, tags={DISABLE_STATE_AWARE_TAG: "true"})
    app(scheduler, "next", 1.0)
    assert served(scheduler, 2.0) == ["single", "next"]
    assert scheduler.application("single").state is AppState.RUNNING


# ---- drf -----------------------------------------------------------------------------------------


def drf_cluster() -> Scheduler:
    return cluster(queue_config("drf"), nodes=1, size={"memory": 10000.0, "vcores": 100.0})


def test_drf_serves_the_smallest_dominant_share_first() -> None:
    scheduler = drf_cluster()
    app(scheduler, "memory-user", 0.0, size={"memory": 3000.0, "vcores": 1.0})  # dominant 0.3 memory
    app(scheduler, "cpu-user", 1.0, size={"memory": 100.0, "vcores": 20.0})     # dominant 0.2 vcores
    scheduler.schedule(2.0)
    for name in ("memory-user", "cpu-user"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["cpu-user", "memory-user"]


def test_drf_puts_an_application_below_its_min_share_first_whatever_its_dominant_share() -> None:
    scheduler = drf_cluster()
    app(scheduler, "big-needy", 0.0, size={"memory": 4000.0, "vcores": 1.0}, min_share={"memory": 8000})
    app(scheduler, "small", 1.0, size={"memory": 100.0, "vcores": 1.0})
    scheduler.schedule(2.0)
    for name in ("big-needy", "small"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["big-needy", "small"]


def test_drf_compares_needy_applications_by_their_share_of_the_min_share() -> None:
    scheduler = drf_cluster()
    app(scheduler, "half", 0.0, size={"memory": 1000.0, "vcores": 1.0}, min_share={"memory": 2000})   # 0.5
    app(scheduler, "tenth", 1.0, size={"memory": 1000.0, "vcores": 1.0}, min_share={"memory": 10000})  # 0.1
    scheduler.schedule(2.0)
    for name in ("half", "tenth"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["tenth", "half"]


def test_drf_weights_divide_the_dominant_share() -> None:
    scheduler = drf_cluster()
    app(scheduler, "weighted", 0.0, size={"memory": 3000.0, "vcores": 1.0}, weight=3.0)  # 0.3 / 3
    app(scheduler, "plain", 1.0, size={"memory": 2000.0, "vcores": 1.0})                # 0.2
    scheduler.schedule(2.0)
    for name in ("weighted", "plain"):
        scheduler.add_ask(name, "more", {"memory": 1.0, "vcores": 1.0}, 3.0)
    assert order(scheduler) == ["weighted", "plain"]


# ---- uwfq ----------------------------------------------------------------------------------------


def uwfq_cluster(**options: object) -> Scheduler:
    config = queue_config("uwfq", guaranteed={"vcores": 10}, policy_options=options)
    return cluster(config, nodes=1, size={"memory": 100000.0, "vcores": 10.0})


def deadline(scheduler: Scheduler, app_id: str) -> float:
    ordering = scheduler.tree.get("root.a").ordering
    value = ordering.virtual_deadline(app_id)  # type: ignore[union-attr]
    assert value is not None
    return value


def test_uwfq_chains_each_users_deadlines_so_a_user_with_many_jobs_does_not_crowd_out_one_with_few() -> None:
    scheduler = uwfq_cluster()
    for index in range(3):  # alice: three jobs of 100 vcore-seconds; bob: one
        app(scheduler, f"alice{index}", 0.0, user="alice", estimated_work=100.0)
    app(scheduler, "bob0", 0.0, user="bob", estimated_work=100.0)
    assert [deadline(scheduler, f"alice{i}") for i in range(3)] == pytest.approx([100.0, 200.0, 300.0])
    assert deadline(scheduler, "bob0") == pytest.approx(100.0)
    assert order(scheduler) == ["alice0", "bob0", "alice1", "alice2"]


def test_uwfq_global_virtual_time_advances_at_capacity_over_active_users() -> None:
    scheduler = uwfq_cluster()
    app(scheduler, "alice0", 0.0, user="alice", estimated_work=1000.0)
    app(scheduler, "bob0", 0.0, user="bob", estimated_work=1000.0)
    scheduler.schedule(10.0)  # 10 vcores shared by 2 users: 5 vcore-seconds per user per second
    ordering = scheduler.tree.get("root.a").ordering
    assert ordering.virtual_time == pytest.approx(50.0)  # type: ignore[union-attr]
    app(scheduler, "carol0", 10.0, user="carol", estimated_work=10.0)
    assert deadline(scheduler, "carol0") == pytest.approx(60.0)  # starts at V = 50
    assert order(scheduler)[0] == "carol0"


def test_uwfq_a_short_job_of_a_user_overtakes_its_long_one() -> None:
    scheduler = uwfq_cluster()
    app(scheduler, "long", 0.0, user="alice", estimated_work=1000.0)
    app(scheduler, "short", 0.0, user="alice", estimated_work=10.0)
    assert deadline(scheduler, "short") == pytest.approx(10.0)
    assert deadline(scheduler, "long") == pytest.approx(1010.0)


def test_uwfq_user_weights_shorten_a_users_deadlines() -> None:
    scheduler = uwfq_cluster(user_weights={"ops": 2})
    app(scheduler, "ops0", 0.0, user="ops", estimated_work=100.0)
    app(scheduler, "dev0", 0.0, user="dev", estimated_work=100.0)
    assert deadline(scheduler, "ops0") == pytest.approx(50.0)
    assert deadline(scheduler, "dev0") == pytest.approx(100.0)


def test_uwfq_a_user_returning_within_the_grace_period_for_the_same_job_keeps_its_place() -> None:
    scheduler = uwfq_cluster(grace_period="10s")
    app(scheduler, "other", 0.0, user="bob", estimated_work=10000.0)
    app(scheduler, "stage1", 0.0, user="alice", estimated_work=10.0, job="etl")
    scheduler.schedule(5.0)  # alice's 10 vcore-seconds finish virtually at t=2 (5 per second)
    ordering = scheduler.tree.get("root.a").ordering
    assert ordering.users["alice"].jobs == {}  # type: ignore[union-attr]
    app(scheduler, "stage2", 8.0, user="alice", estimated_work=10.0, job="etl")
    assert deadline(scheduler, "stage2") == pytest.approx(20.0)  # resumes from where it ended (V was 10)
    app(scheduler, "late-stage", 100.0, user="carol", estimated_work=10.0, job="x")
    assert deadline(scheduler, "late-stage") > 20.0


def test_uwfq_a_user_returning_after_the_grace_period_starts_at_the_current_virtual_time() -> None:
    scheduler = uwfq_cluster(grace_period="1s")
    app(scheduler, "other", 0.0, user="bob", estimated_work=10000.0)
    app(scheduler, "stage1", 0.0, user="alice", estimated_work=10.0, job="etl")
    scheduler.schedule(5.0)
    app(scheduler, "stage2", 8.0, user="alice", estimated_work=10.0, job="etl")
    ordering = scheduler.tree.get("root.a").ordering
    assert deadline(scheduler, "stage2") == pytest.approx(ordering.virtual_time + 10.0)  # type: ignore[union-attr]
