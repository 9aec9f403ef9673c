"""YARN's submissions take the native path: no server lock, decided and committed in the store's batches.

In-process, with the store's first batch held open: what arrives meanwhile must reach the store and wait there,
to be committed together, as native submissions are (a server-wide lock around each YARN submission made every
batch a batch of one).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest

from planner.api.app import create_app
from planner.api.auth import Principal, TokenRegistry, hash_token
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, stored_violations, yarn_body

TOKENS = {"alice-token": Principal("alice", "user"), "bob-token": Principal("bob", "user")}
SUBMIT = "/ws/v1/cluster/reservation/submit"
POLLS = 2000  # looks, 10 ms apart, for the submissions to be waiting in the store (a starved machine is slow)


@pytest.fixture
def app(tmp_path: Path) -> AnyType:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    return create_app(state, TokenRegistry({hash_token(t): p for t, p in TOKENS.items()}))


class HeldBatches:
    """The store's batches, the first held until `release`; the size of each batch run."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch):
        self.sizes: list[int] = []
        self.entered, self.gate = threading.Event(), threading.Event()
        self._store, self._run = store, store._submit_batch
        monkeypatch.setattr(store, "_submit_batch", self._held)

    def _held(self, tickets: Sequence[AnyType]) -> AnyType:
        self.sizes.append(len(tickets))
        self.entered.set()
        self.gate.wait()
        return self._run(tickets)

    def waiting(self) -> int:
        return len(self._store._submissions._waiting)


async def until(condition: AnyType) -> None:
    for _ in range(POLLS):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the submissions never reached the store's batches")


def post(client: httpx.AsyncClient, token: str, body: dict[str, AnyType]) -> AnyType:
    return client.post(SUBMIT, json=body, headers={"Authorization": f"Bearer {token}"})


def run_held(app: AnyType, monkeypatch: pytest.MonkeyPatch, first: dict[str, AnyType],
             together: list[tuple[str, dict[str, AnyType]]]) -> tuple[HeldBatches, list[httpx.Response]]:
    """Submit `first` (alice's) and, while its batch is held, `together` (token, body) at once; the batches and
    every answer (the first's first)."""
    held = HeldBatches(app.state.service.store, monkeypatch)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
            leading = asyncio.ensure_future(post(client, "alice-token", first))
            try:
                await until(held.entered.is_set)
                rest = [asyncio.ensure_future(post(client, token, body)) for token, body in together]
                await until(lambda: held.waiting() == len(together))
            finally:
                held.gate.set()  # a failure above must not leave the batch held
            return [await leading, *[await answer for answer in rest]]

    return held, asyncio.run(go())


def test_yarn_submissions_arriving_together_are_committed_in_one_batch(
        app: AnyType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"reservation_1_{n:04d}" for n in range(1, 5)]
    held, answers = run_held(app, monkeypatch, yarn_body(ids[0], 0, 120),
                             [("bob-token" if n % 2 else "alice-token", yarn_body(rid, 0, 120))
                              for n, rid in enumerate(ids[1:])])
    assert [answer.status_code for answer in answers] == [202] * 4
    assert held.sizes == [1, 3]  # the three that came while the first was deciding: one batch, one commit
    with Store.open(tmp_path / "plan.db") as store:
        assert {record.name: record.user for record in store.list(state="accepted")} == {
            ids[0]: "alice", ids[1]: "alice", ids[2]: "bob", ids[3]: "alice"}
    assert stored_violations(tmp_path / "plan.db") == []


def test_the_same_id_submitted_twice_at_once_is_accepted_once_and_both_are_answered_with_it(
        app: AnyType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = "reservation_1_0009"
    held, answers = run_held(app, monkeypatch, yarn_body("reservation_1_0001", 0, 120),
                             [("alice-token", yarn_body(rid, 0, 120)), ("alice-token", yarn_body(rid, 0, 120))])
    assert held.sizes == [1, 2]
    assert [answer.status_code for answer in answers] == [202] * 3
    first, again = (answer.json()["decision"] for answer in answers[1:])
    assert first["accepted"] and again["allocations"] == first["allocations"]  # YARN's idempotent submit
    with Store.open(tmp_path / "plan.db") as store:
        assert [record.name for record in store.list(state="accepted")] == ["reservation_1_0001", rid]


def test_another_users_id_submitted_meanwhile_is_403_and_changes_nothing(
        app: AnyType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = "reservation_1_0007"
    held, answers = run_held(app, monkeypatch, yarn_body("reservation_1_0001", 0, 120),
                             [("bob-token", yarn_body(rid, 0, 120)), ("alice-token", yarn_body(rid, 0, 60))])
    assert held.sizes == [1, 2]
    # Both came while the first batch was held: whichever reached the batch first owns the id, and the store checks
    # the owner in the write, so the other is 403 (which one depends on how the two requests were scheduled).
    users = ("bob", "alice")
    statuses = [answer.status_code for answer in answers[1:]]
    assert answers[0].status_code == 202 and sorted(statuses) == [202, 403]
    owner, refused = users[statuses.index(202)], answers[1 + statuses.index(403)]
    assert refused.json()["RemoteException"]["message"] == f"reservation {rid} belongs to another user"
    with Store.open(tmp_path / "plan.db") as store:
        assert store.get(rid).user == owner
