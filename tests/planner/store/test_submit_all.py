"""`Store.submit_all`: reservations decided in order and committed in one transaction, or none of them: a group
refused in part (another user's name, input that does not hold up) writes nothing, and the others of its batch are
decided without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from planner.store import deciding
from planner.store.deciding import WITHDRAWN
from planner.store.facade import Store, StoreError, _Ticket
from rdl import parse_text
from tests.planner.support import cluster_text, pinned

CLUSTER = cluster_text({"vcores": 8}, steps=60)


def one(text: str, user: str = "alice") -> object:
    return dataclasses.replace(parse_text(text)[0], user=user)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    opened = Store.open(tmp_path / "plan.db")
    opened.init(CLUSTER)
    return opened


def test_all_are_decided_in_order_on_the_plan_the_earlier_left_and_committed_together(store: Store) -> None:
    batches: list[int] = []
    store.count_batches(batches.append)
    decisions = store.submit_all([one(pinned("a", 0, 10, 4)), one(pinned("b", 0, 10, 6)), one(pinned("c", 0, 10, 4))],
                                 "gree", actor="alice", owner="alice")
    assert [(d.reservation, d.accepted) for d in decisions] == [("a", True), ("b", False), ("c", True)]
    assert [(r.name, r.state) for r in store.list()] == [("a", "accepted"), ("b", "rejected"), ("c", "accepted")]
    assert batches == [3]  # one write transaction


def test_a_dry_run_decides_them_in_order_and_writes_nothing(store: Store) -> None:
    decisions = store.submit_all([one(pinned("a", 0, 10, 4)), one(pinned("b", 0, 10, 6))], "gree", dry_run=True)
    assert [(d.reservation, d.accepted) for d in decisions] == [("a", True), ("b", False)]
    assert store.list() == [] and store.log() == []


def test_another_user_s_name_in_the_batch_writes_none_of_it(store: Store) -> None:
    store.submit(one(pinned("taken", 40, 10, 1), user="bob"), "gree", actor="bob")
    version = int(store.meta()["plan_version"])
    with pytest.raises(StoreError) as refused:
        store.submit_all([one(pinned("mine", 0, 10, 4)), one(pinned("taken", 0, 10, 1))], "gree", actor="alice",
                         owner="alice")
    assert refused.value.code == "forbidden" and "`taken` belongs to another user" in refused.value.message
    assert [r.name for r in store.list()] == ["taken"] and store.get("taken").user == "bob"
    assert int(store.meta()["plan_version"]) == version


def test_a_group_refused_in_part_leaves_the_rest_of_its_batch_decided_as_if_it_were_not_there(store: Store) -> None:
    store.submit(one(pinned("taken", 40, 10, 1), user="bob"), "gree", actor="bob")
    grouped = [_Ticket(one(pinned("g1", 0, 10, 6)), "gree", "alice", None, False, False, "alice", None, "g"),
               _Ticket(one(pinned("taken", 0, 10, 1)), "gree", "alice", None, False, False, "alice", None, "g")]
    outside = _Ticket(one(pinned("o", 0, 10, 6), user="carol"), "gree", "carol", None, False, False, "carol")
    outcomes = store._submit_batch([*grouped, outside])
    assert isinstance(outcomes[0], StoreError) and outcomes[0].code == WITHDRAWN
    assert "`taken`, in the same batch, was refused" in outcomes[0].message
    assert isinstance(outcomes[1], StoreError) and outcomes[1].code == "forbidden"
    assert not isinstance(outcomes[2], BaseException) and outcomes[2].accepted  # g1's 6 vcores are not held
    assert sorted(r.name for r in store.list()) == ["o", "taken"]


def test_a_group_member_whose_decision_fails_withdraws_the_others(store: Store,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(planner: object, ticket: _Ticket, key: object) -> object:  # as an agent's internal error would
        return ValueError("boom") if ticket.reservation.name == "bad" else attempt(planner, ticket, key)

    attempt = deciding._attempt
    monkeypatch.setattr(deciding, "_attempt", failing)
    grouped = [_Ticket(one(pinned("g1", 0, 10, 6)), "gree", "alice", None, False, False, "alice", None, "g"),
               _Ticket(one(pinned("bad", 20, 10, 1)), "gree", "alice", None, False, False, "alice", None, "g")]
    outside = _Ticket(one(pinned("o", 0, 10, 6), user="carol"), "gree", "carol", None, False, False, "carol")
    outcomes = store._submit_batch([*grouped, outside])
    assert isinstance(outcomes[0], StoreError) and outcomes[0].code == WITHDRAWN
    assert isinstance(outcomes[1], ValueError)
    assert not isinstance(outcomes[2], BaseException) and outcomes[2].accepted
    assert [r.name for r in store.list()] == ["o"]
    with pytest.raises(ValueError):  # submit_all raises the refused one's own error, not a withdrawal
        store.submit_all([one(pinned("g2", 30, 10, 1)), one(pinned("bad", 40, 10, 1))], "gree", actor="alice",
                         owner="alice")
    assert [r.name for r in store.list()] == ["o"]
