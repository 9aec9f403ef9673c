"""What YuniKorn reports each queue holds (follower/follow/allocated.py), read from a recorded answer in the shape
YuniKorn's REST documentation gives for `GET /ws/v1/partition/{partition}/queues` (not a live YuniKorn: see
docs/dashboard.md), and recorded by the follower in `rayon serve` beside its own round."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any as AnyType

import pytest

from follower.follow.allocated import YuniKornAllocated, allocations
from follower.follow.follower import FollowerError
from follower.follow.service import QueuePublisher
from planner.store.facade import Store
from planner.store.queuelog import QueueLog
from tests.planner.support import cluster_text, instant, one, pinned

RECORDED = json.loads((Path(__file__).parent / "data" / "yunikorn-queues.json").read_text())


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "plan.db") as opened:
        opened.init(cluster_text({"vcores": 8, "memory": "16GiB"}, steps=60), "cluster.yaml")
        yield opened


def test_every_queue_of_the_tree_in_the_plans_units() -> None:
    held = allocations(RECORDED)
    assert set(held) == {"root", "root.plan", "root.plan.a", "root.plan.default", "root.plan.b"}
    assert held["root.plan.a"] == {"memory": 4096, "vcores": 3, "pods": 3}  # bytes to MiB, millicores to vcores
    assert held["root.plan.default"]["vcores"] == 0.5
    assert held["root.plan.b"] == {}  # nothing allocated: YuniKorn leaves the field out


def test_a_bare_queue_name_is_joined_to_its_parents_path() -> None:
    older = {"queuename": "root", "children": [{"queuename": "plan", "allocatedResource": {"vcore": 2000}}]}
    assert allocations(older)["root.plan"] == {"vcores": 2}


@pytest.mark.parametrize("answer, message", [
    ({"partitions": []}, "without `queuename`"),
    ({"queuename": "root", "allocatedResource": "[memory:1000 vcore:1000]"}, "not the queue tree"),
    ({"queuename": "root", "allocatedResource": {"vcore": "2"}}, "`vcore` is '2', not a number"),
])
def test_an_answer_that_is_not_a_queue_tree_is_refused_saying_so(answer: AnyType, message: str) -> None:
    with pytest.raises(FollowerError, match=message):
        allocations(answer)


def test_the_poller_asks_the_partitions_queues_at_the_address() -> None:
    asked: list[str] = []
    poller = YuniKornAllocated("http://yunikorn:9080/", "gpu", get=lambda url: asked.append(url) or RECORDED)
    assert poller.poll()["root.plan.a"]["memory"] == 4096
    assert asked == ["http://yunikorn:9080/ws/v1/partition/gpu/queues"]
    with pytest.raises(ValueError, match="is not YuniKorn's address"):
        YuniKornAllocated("yunikorn:9080")


def test_a_yunikorn_that_does_not_answer_is_a_follower_error() -> None:
    with pytest.raises(FollowerError, match="does not answer"):
        YuniKornAllocated("http://127.0.0.1:9").poll()  # the discard port: nothing listens


def test_each_tick_records_the_round_and_what_yunikorn_holds(store: Store) -> None:
    store.submit(one(pinned("a", 0, 20, 4)))
    log = QueueLog(store.engine)
    publisher = QueuePublisher(store, history=log, allocated=YuniKornAllocated("http://y:9080", get=lambda _: RECORDED))
    publisher.tick()
    store.advance(instant(1))
    publisher.tick()
    runs = {(r.source, r.queue): r for r in log.read(instant(0), instant(5))}
    written = runs[("follower", "root.plan.a")]
    assert (written.start, written.end, written.reservation) == (instant(0), instant(2), "a")  # two equal steps
    assert written.figures["guaranteed"]["vcores"] == 4 and written.figures["planned"]["vcores"] == 4
    assert runs[("yunikorn", "root.plan.a")].figures == {"allocated": {"memory": 4096, "pods": 3, "vcores": 3}}
    assert runs[("yunikorn", "root.plan.a")].end == instant(2)


def test_a_failed_poll_leaves_the_round_recorded(store: Store) -> None:
    def away(url: str) -> AnyType:
        raise FollowerError(f"YuniKorn at {url} does not answer")

    log = QueueLog(store.engine)
    QueuePublisher(store, history=log, allocated=YuniKornAllocated("http://y:9080", get=away)).tick()
    assert {r.source for r in log.read(instant(0), instant(1))} == {"follower"}
