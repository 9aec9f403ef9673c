"""A request that fails midway leaves nothing behind (in-process: the failure is injected into the store)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest

from planner.api.app import create_app
from planner.api.auth import Principal, TokenRegistry, hash_token
from planner.store import schema as store_schema
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, pinned, snapshot, stored_violations

TOKEN = "alice-token"


def call(app: AnyType, method: str, path: str, **kwargs: AnyType) -> httpx.Response:
    """One request to the app in this process (exceptions become the app's 500 answer, as on a server)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
            return await client.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"}, **kwargs)

    return asyncio.run(go())


@pytest.fixture
def app(tmp_path: Path) -> AnyType:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    return create_app(state, TokenRegistry({hash_token(TOKEN): Principal("alice", "user")}))


def test_a_submission_failing_while_its_leases_are_written_leaves_nothing_behind(
        app: AnyType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "plan.db"
    assert call(app, "POST", "/v1/reservations", content=pinned("before", 0, 10, 2)).status_code == 201
    before = snapshot(state)

    def disk_full(*args: AnyType, **kwargs: AnyType) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_schema, "insert_leases", disk_full)  # after the reservation's row, before its leases
    failed = call(app, "POST", "/v1/reservations", content=pinned("midway", 20, 10, 2))
    assert failed.status_code == 500
    assert failed.json()["error"]["code"] == "internal" and failed.json()["changed"] is None
    assert "No space left on device" in failed.json()["error"]["message"]
    assert snapshot(state) == before  # no row, no lease, no log entry, the same use
    monkeypatch.undo()
    assert call(app, "GET", "/v1/reservations/midway").status_code == 404
    again = call(app, "POST", "/v1/reservations", content=pinned("midway", 20, 10, 2))
    assert again.status_code == 201 and again.json()["accepted"]  # the server's cached plan is intact too
    assert stored_violations(state) == []


def test_a_cancel_failing_midway_leaves_the_reservation_holding_its_capacity(
        app: AnyType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "plan.db"
    call(app, "POST", "/v1/reservations", content=pinned("held", 0, 10, 2))
    before = snapshot(state)
    original = Store._log

    def failing_log(*args: AnyType, **kwargs: AnyType) -> None:
        original(*args, **kwargs)
        raise ConnectionError("database went away")

    monkeypatch.setattr(Store, "_log", staticmethod(failing_log))  # after the state change and the log row
    assert call(app, "DELETE", "/v1/reservations/held").status_code == 500
    assert snapshot(state) == before
    monkeypatch.undo()
    assert call(app, "GET", "/v1/reservations/held").json()["state"] == "accepted"
    assert call(app, "DELETE", "/v1/reservations/held").json()["state"] == "cancelled"


def test_readiness_answers_503_when_the_store_no_longer_holds_a_plan(app: AnyType, tmp_path: Path) -> None:
    assert call(app, "GET", "/v1/ready").status_code == 200
    with sqlite3.connect(tmp_path / "plan.db") as connection:
        connection.execute("DROP TABLE rayon_meta")
    answer = call(app, "GET", "/v1/ready")
    assert answer.status_code == 503 and answer.json() == {"status": "unavailable", "reason": "uninitialised"}
    assert call(app, "GET", "/v1/health").status_code == 200  # alive, not ready
    assert call(app, "GET", "/v1/reservations").status_code == 503
