"""Preemption: a reservation queue below its guarantee gets it back after the delay, youngest containers first."""

from __future__ import annotations

from typing import Any

from follower.scheduler import Resources, Scheduler

from .conftest import app, cluster

UNIT = {"memory": 1024.0, "vcores": 1.0}


def setup(besteffort: dict[str, Any] | None = None, delay: str = "30s", enabled: bool = True) -> Scheduler:
    """One 8-vcore node; `root.besteffort` fills it one container per second; `root.plan.r1` is guaranteed 4."""
    config = {"queues": {"plan": {"parent": True}, "besteffort": besteffort or {}},
              "preemption": {"delay": delay, "enabled": enabled},
              "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]}
    scheduler = cluster(config, nodes=1)
    scheduler.ensure_queue("root.plan.r1", Resources({"memory": 4096, "vcores": 4}))
    app(scheduler, "greedy", 0.0, queue="besteffort", count=8)
    for second in range(8):  # one container a second, so their ages differ
        scheduler.ensure_queue("root.besteffort", Resources(), Resources({"memory": 1024 * (second + 1), "vcores": 8}))
        assert len(scheduler.schedule(float(second))) == 1
    scheduler.ensure_queue("root.besteffort", Resources((besteffort or {}).get("guaranteed", {})))
    scheduler.submit("prod", "u", 10.0, reservation="r1")
    scheduler.add_ask("prod", "work", UNIT, 10.0, count=4)
    assert scheduler.schedule(10.0) == []  # the cluster is full
    return scheduler


def test_a_starved_reservation_queue_is_not_preempted_for_before_the_delay() -> None:
    scheduler = setup()
    assert scheduler.next_event_time() == 40.0
    assert scheduler.preempt(39.0) == []
    assert scheduler.preemptions == 0


def test_preemption_restores_a_reservation_queues_guarantee_after_the_delay() -> None:
    scheduler = setup()
    taken = scheduler.preempt(40.0)
    assert len(taken) == 4 and scheduler.preemptions == 4
    assert {p.victim_queue for p in taken} == {"root.besteffort"} and {p.for_queue for p in taken} == {"root.plan.r1"}
    allocations = scheduler.schedule(40.0)
    assert [a.app_id for a in allocations] == ["prod"] * 4
    assert scheduler.tree.get("root.plan.r1").used == Resources({"memory": 4096, "vcores": 4})
    assert scheduler.preempt(80.0) == []  # satisfied: nothing more taken


def test_preemption_takes_the_youngest_containers_first() -> None:
    scheduler = setup()
    taken = scheduler.preempt(40.0)
    assert sorted(p.container_id for p in taken) == ["greedy/c5", "greedy/c6", "greedy/c7", "greedy/c8"]


def test_preemption_never_takes_a_victim_queue_below_its_own_guarantee() -> None:
    scheduler = setup({"guaranteed": {"memory": 6144, "vcores": 6}})
    taken = scheduler.preempt(40.0)
    assert len(taken) == 2  # 8 used, 6 guaranteed: only two may go
    scheduler.schedule(40.0)
    assert scheduler.tree.get("root.besteffort").used["vcores"] == 6
    assert scheduler.tree.get("root.plan.r1").used["vcores"] == 2


def test_preemption_counts_every_container_taken_per_victim_queue() -> None:
    scheduler = setup()
    scheduler.preempt(40.0)
    assert scheduler.preemptions_by_queue == {"root.besteffort": 4}


def test_disabled_preemption_takes_nothing() -> None:
    scheduler = setup(enabled=False)
    assert scheduler.preempt(100.0) == []


def test_a_queue_below_guarantee_with_free_room_needs_no_victims() -> None:
    config = {"queues": {"plan": {"parent": True}}, "preemption": {"delay": 0}}
    scheduler = cluster(config, nodes=1)
    scheduler.ensure_queue("root.plan.r1", Resources({"memory": 4096, "vcores": 4}))
    scheduler.submit("prod", "u", 0.0, reservation="r1")
    scheduler.add_ask("prod", "work", UNIT, 0.0, count=2)
    assert scheduler.preempt(0.0) == []
    assert len(scheduler.schedule(0.0)) == 2


def test_a_due_preemption_no_victim_can_serve_is_not_reported_as_an_event_to_come() -> None:
    scheduler = setup({"guaranteed": {"memory": 8192, "vcores": 8}})  # besteffort at its guarantee: no victim
    assert scheduler.preempt(40.0) == []
    assert scheduler.next_event_time() is None
    scheduler.release("greedy/c8", 41.0)
    assert [a.app_id for a in scheduler.schedule(41.0)] == ["prod"]  # Starting now, still starved
    assert scheduler.next_event_time() == 341.0  # its starting timeout, not the past preemption time 40

