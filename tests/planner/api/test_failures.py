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
from planner.api.limits import RequestLimits
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


def test_an_unexpected_failure_is_answered_inside_the_app_so_the_connection_stays_open(
        app: AnyType, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: AnyType, **kwargs: AnyType) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(store_schema, "insert_leases", broken)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # an exception escaping the app (which closes a connection) raises
        async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
            return await client.post("/v1/reservations", content=pinned("x", 0, 10, 2),
                                     headers={"Authorization": f"Bearer {TOKEN}"})

    answer = asyncio.run(go())
    assert answer.status_code == 500 and "connection" not in answer.headers
    assert answer.json()["error"]["message"] == "internal error: RuntimeError: boom"


def test_a_body_that_trickles_in_is_refused_in_time() -> None:
    async def reader(scope: AnyType, receive: AnyType, send: AnyType) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read"})

    async def trickle() -> AnyType:
        for _ in range(50):
            yield b"#"
            await asyncio.sleep(0.05)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=RequestLimits(reader, seconds=0.3))
        async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
            return await client.post("/v1/reservations", content=trickle())

    answer = asyncio.run(go())
    assert answer.status_code == 408 and answer.json()["error"]["code"] == "too_slow"
