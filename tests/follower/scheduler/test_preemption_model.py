"""When the preemption delay starts: at the queue's starvation (`model: yarn`, the default) or at each ask's creation,
then a try every `retry` (`model: yunikorn`, yunikorn-core's `Preemptor.CheckPreconditions`)."""

from __future__ import annotations

import pytest

from follower.scheduler import Resources, Scheduler
from follower.scheduler.config import ConfigError, load_config

from .conftest import app, cluster

UNIT = {"memory": 1024.0, "vcores": 1.0}
FOUR = Resources({"memory": 4096, "vcores": 4})


def full(model: str, guaranteed_at: float, asked_at: float, count: int = 4) -> Scheduler:
    """One 8-vcore node filled by `root.besteffort` at 0; `prod` asks for `count` units in `root.plan.r1` at
    `asked_at`; the queue is guaranteed 4 units from `guaranteed_at` (before it, it is open but guarantees nothing)."""
    config = {"queues": {"plan": {"parent": True}, "besteffort": {}}, "preemption": {"model": model},
              "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]}
    scheduler = cluster(config, nodes=1)
    app(scheduler, "greedy", 0.0, queue="besteffort", count=8)
    assert len(scheduler.schedule(0.0)) == 8
    scheduler.ensure_queue("root.plan.r1", Resources())
    scheduler.submit("prod", "u", asked_at, reservation="r1")
    scheduler.add_ask("prod", "work", UNIT, asked_at, count=count)
    scheduler.schedule(asked_at)
    scheduler.advance(guaranteed_at)
    scheduler.ensure_queue("root.plan.r1", FOUR)
    scheduler.schedule(guaranteed_at)
    return scheduler


def first_preemption(scheduler: Scheduler, until: float) -> float | None:
    """Drive the scheduler as the simulator does (a cycle now, then at each event time it names) until something is
    taken."""
    at: float | None = scheduler.now
    while at is not None and at <= until:
        if scheduler.preempt(at):
            return at
        scheduler.schedule(at)
        at = scheduler.next_event_time()
    return None


def test_yarn_counts_the_delay_from_when_the_queue_became_starved() -> None:
    scheduler = full("yarn", guaranteed_at=95.0, asked_at=10.0)
    assert first_preemption(scheduler, 300.0) == 125.0


def test_yunikorn_counts_it_from_the_asks_creation_and_tries_on_its_retry_grid() -> None:
    # asked at 10: tries at 40, 55, 70, 85, 100, ... whether or not its queue is starved; starved from 95: 100
    scheduler = full("yunikorn", guaranteed_at=95.0, asked_at=10.0)
    assert scheduler.next_event_time() == 100.0
    assert scheduler.preempt(99.0) == []
    taken = scheduler.preempt(100.0)
    assert len(taken) == 4 and {p.for_queue for p in taken} == {"root.plan.r1"}
    assert [a.app_id for a in scheduler.schedule(100.0)] == ["prod"] * 4


def test_yunikorn_and_yarn_agree_when_the_ask_is_made_as_the_queue_starves() -> None:
    for model in ("yarn", "yunikorn"):
        assert first_preemption(full(model, guaranteed_at=50.0, asked_at=50.0), 300.0) == 80.0


def test_yunikorn_preempts_at_once_at_the_guarantee_when_a_try_falls_there() -> None:
    assert first_preemption(full("yunikorn", guaranteed_at=70.0, asked_at=10.0), 300.0) == 70.0


def test_an_ask_whose_try_found_nothing_waits_for_its_next_try() -> None:
    scheduler = full("yunikorn", guaranteed_at=35.0, asked_at=10.0)
    scheduler.ensure_queue("root.besteffort", Resources({"memory": 8192, "vcores": 8}))  # nothing may be taken
    assert scheduler.preempt(40.0) == []
    scheduler.ensure_queue("root.besteffort", Resources())
    assert scheduler.preempt(41.0) == [] and scheduler.preempt(54.0) == []  # tried at 40: the next try is 55
    assert scheduler.next_event_time() == 55.0
    assert len(scheduler.preempt(55.0)) == 4


def test_each_ask_tries_on_its_own_clock() -> None:
    scheduler = full("yunikorn", guaranteed_at=12.0, asked_at=10.0, count=2)
    scheduler.add_ask("prod", "more", UNIT, 20.0, count=2)
    assert len(scheduler.preempt(40.0)) == 2  # the first ask's two; the second's first try is at 50
    scheduler.schedule(40.0)
    assert scheduler.next_event_time() == 50.0
    assert len(scheduler.preempt(50.0)) == 2


def test_the_model_is_checked_with_its_key_path() -> None:
    assert load_config({}).preemption_model == "yarn" and load_config({}).preemption_retry == 15.0
    assert load_config({"preemption": {"model": "yunikorn", "retry": "20s"}}).preemption_retry == 20.0
    with pytest.raises(ConfigError) as raised:
        load_config({"preemption": {"model": "yunikron", "retry": "0s"}})
    text = str(raised.value)
    assert "scheduler.preemption.model" in text and "did you mean `yunikorn`" in text
    assert "scheduler.preemption.retry: must be a positive duration" in text
