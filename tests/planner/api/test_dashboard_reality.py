"""`GET /v1/queues/history` (planner/api/reality.py): the plan against reality per queue over time, under the
token rules of `GET /v1/queues`. The view that draws it: tests/planner/api/test_dashboard_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from follower.follow.allocated import YuniKornAllocated
from follower.follow.service import QueuePublisher
from planner.api.reality import summed
from planner.store.facade import Store
from planner.store.queuelog import QueueLog
from tests.planner.api.support import eventually, make_tokens, pinned, running
from tests.planner.support import at, cluster_text, instant, one


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "plan.db") as opened:
        opened.init(cluster_text({"vcores": 8, "memory": "16GiB"}, steps=60), "cluster.yaml")
        yield opened


def yunikorn(held: dict[str, int]) -> YuniKornAllocated:
    """A YuniKorn whose queues under root.plan hold `held` vcores each."""
    tree = {"queuename": "root", "children": [{"queuename": "root.plan", "children": [
        {"queuename": f"root.plan.{name}", "allocatedResource": {"vcore": 1000 * v}} for name, v in held.items()]}]}
    return YuniKornAllocated("http://yunikorn:9080", get=lambda _: tree)


def test_a_user_sees_their_queues_by_name_and_the_others_summed_an_admin_every_one(store: Store,
                                                                                   tmp_path: Path) -> None:
    store.submit(one(pinned("a", 0, 20, 4, user="alice")))
    store.submit(one(pinned("b", 0, 10, 2, user="bob")))
    store.submit(one(pinned("c", 1, 10, 1, user="carol")))
    log = QueueLog(store.engine)
    for step in range(3):
        store.advance(instant(step))
        QueuePublisher(store, history=log, allocated=yunikorn({"a": 3, "b": 2, "c": 0, "foreign": 1})).tick()
    tokens = make_tokens(tmp_path / "tokens.yaml")
    with running(store.where, tmp_path / "tokens.yaml", tokens) as server, server.client("alice") as alice, \
            server.client("ops") as ops:
        mine = alice.get("/v1/queues/history", params={"from": at(0), "to": at(3)}).json()
        every = ops.get("/v1/queues/history", params={"from": at(0), "to": at(3)}).json()
        assert server.client().get("/v1/queues/history").status_code == 401
        assert alice.get("/v1/queues/history", params={"source": "kueue"}).status_code == 422
        assert alice.get("/v1/queues/history", params={"from": at(3), "to": at(0)}).status_code == 422
    names = {q["queue"]: q for q in mine["queues"]}
    assert set(names) == {"root.plan", "root.plan.default", "root.plan.a", None}
    (a_written,) = names["root.plan.a"]["follower"]
    assert (a_written["start"], a_written["end"], a_written["guaranteed"]) == (at(0), at(3),
                                                                          {"memory": 0, "vcores": 4})
    assert names["root.plan.a"]["allocated"]["yunikorn"][0]["allocated"] == {"vcores": 3}
    others = names[None]
    assert others["kind"] == "others" and others["count"] == 2 and "bob" not in str(others)
    assert [(r["start"], r["end"], r["guaranteed"]["vcores"]) for r in others["follower"]] == [
        (at(0), at(1), 2), (at(1), at(3), 3)]  # c's queue opens with its window, at step 1
    assert others["allocated"]["yunikorn"][0]["allocated"] == {"vcores": 2}  # b's 2 and c's 0, never `foreign`
    assert {q["queue"] for q in every["queues"]} >= {"root.plan.b", "root.plan.c", "root.plan.foreign", "root"}
    assert {q["user"] for q in every["queues"] if q["kind"] == "reservation"} == {"alice", "bob", "carol"}


def test_rayon_serve_records_the_round_as_its_clock_ticks(store: Store, tmp_path: Path) -> None:
    store.submit(one(pinned("a", 0, 20, 4, user="alice")))
    tokens = make_tokens(tmp_path / "tokens.yaml")
    with running(store.where, tmp_path / "tokens.yaml", tokens) as server, server.client("alice") as alice:
        # the clock's thread does the first tick's work once the server has started: the step now is recorded
        eventually(lambda: any(q["queue"] == "root.plan.a" for q in alice.get("/v1/queues/history").json()["queues"]),
                   "the step now recorded")
        answer = alice.get("/v1/queues/history").json()
    (queue,) = [q for q in answer["queues"] if q["queue"] == "root.plan.a"]
    assert queue["follower"][0]["start"] == at(0) and queue["follower"][0]["planned"]["vcores"] == 4
    assert answer["now"] == at(0) and answer["to"] == at(1)


def test_rayon_serve_with_the_queue_log_off_records_nothing(store: Store, tmp_path: Path) -> None:
    tokens = make_tokens(tmp_path / "tokens.yaml")
    with running(store.where, tmp_path / "tokens.yaml", tokens, "--queue-log", "off") as server, \
            server.client("ops") as ops:
        assert ops.get("/v1/queues/history").json()["queues"] == []
        assert ops.get("/v1/queues/history", params={"to": "0001-01-01T00:00:00Z"}).status_code == 422
        year = {"from": "2026-01-01T00:00:00Z", "to": "2027-01-03T00:00:00Z"}
        assert "at most 366 days" in ops.get("/v1/queues/history", params=year).json()["error"]["message"]


def test_step_functions_are_summed_where_any_is_defined() -> None:
    one_ = [{"start": at(0), "end": at(2), "allocated": {"vcores": 1}}]
    two = [{"start": at(1), "end": at(3), "allocated": {"vcores": 2}},
           {"start": at(5), "end": at(6), "allocated": {"vcores": 2}}]
    assert [(r["start"], r["end"], r["allocated"]["vcores"]) for r in summed([one_, two], ("allocated",))] == [
        (at(0), at(1), 1), (at(1), at(2), 3), (at(2), at(3), 2), (at(5), at(6), 2)]


def test_an_admin_loads_what_a_simulation_allocated_and_users_see_it_by_the_same_rules(store: Store,
                                                                                       tmp_path: Path) -> None:
    store.submit(one(pinned("a", 0, 20, 4, user="alice")))
    store.submit(one(pinned("b", 0, 10, 2, user="bob")))
    QueuePublisher(store, history=QueueLog(store.engine)).tick()  # the follower says whose queues they are

    def runs(*queues: tuple[str, int]) -> dict:
        return {"source": "simulate", "runs": [{"queue": f"root.plan.{q}", "start": at(0), "end": at(5),
                                                "allocated": {"vcores": v}} for q, v in queues]}

    tokens = make_tokens(tmp_path / "tokens.yaml")
    with running(store.where, tmp_path / "tokens.yaml", tokens) as server, server.client("alice") as alice, \
            server.client("ops") as ops:
        assert alice.post("/v1/queues/allocated", json=runs(("a", 1))).status_code == 403
        bad = runs(("a", 1), ("b", 1))
        bad["runs"][1]["end"] = at(0)
        refused = ops.post("/v1/queues/allocated", json=bad)
        assert refused.status_code == 422
        assert "runs[1]: `end` must come after `start`" in refused.json()["error"]["message"]
        assert ops.get("/v1/queues/history", params={"source": "simulate", "from": at(0)}).json()["queues"] == []
        loaded = ops.post("/v1/queues/allocated", json=runs(("a", 3), ("b", 2), ("mystery", 1)))
        assert loaded.status_code == 200 and loaded.json() == {"source": "simulate", "runs": 3, "queues": 3}
        mine = alice.get("/v1/queues/history", params={"source": "simulate", "from": at(0), "to": at(5)}).json()
        every = ops.get("/v1/queues/history", params={"source": "simulate", "from": at(0), "to": at(5)}).json()
    seen = {q["queue"]: q["allocated"]["simulate"][0]["allocated"]["vcores"] for q in mine["queues"]}
    assert seen == {"root.plan.a": 3, None: 2}  # bob's as others; `mystery`, which the follower never wrote: hidden
    assert {q["queue"] for q in every["queues"]} == {"root.plan.a", "root.plan.b", "root.plan.mystery"}
