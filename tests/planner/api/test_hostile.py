"""What a hostile user sends the API (issue #29): 422 naming the place, nothing stored, every other user unharmed.

In process: each test has its own store and app, so a poisoned store cannot leak into another test.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest

from planner.api.app import create_app
from planner.api.auth import Principal, TokenError, TokenRegistry, append_token, hash_token
from planner.api.clockwork import ClockMode, WallClock
from planner.store.facade import Store
from rdl.errors import RDLErrors
from rdl.forms.jsonform import from_json
from rdl.forms.yarn import from_yarn
from rdl.syntax.parser import parse_text
from tests.planner.api.support import CLUSTER, epoch_ms, pinned, snapshot, yarn_body

TOKENS = {"alice-token": Principal("alice", "user"), "bob-token": Principal("bob", "user"),
          "ops-token": Principal("ops", "admin")}
B = {"memory": "1GiB", "vcores": 1}


def call(app: AnyType, method: str, path: str, user: str = "alice", headers: dict[str, str] | None = None,
         **kwargs: AnyType) -> httpx.Response:
    """One request to the app in this process, as `user`."""
    headers = {"Authorization": f"Bearer {user}-token", **(headers or {})}

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
            return await client.request(method, path, headers=headers, **kwargs)

    return asyncio.run(go())


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    return state


@pytest.fixture
def app(state: Path) -> AnyType:
    return create_app(state, TokenRegistry({hash_token(t): p for t, p in TOKENS.items()}))


def post(app: AnyType, data: AnyType, user: str = "alice") -> httpx.Response:
    return call(app, "POST", "/v1/reservations", user, content=json.dumps(data),
                headers={"Content-Type": "application/json"})


def reservation(name: str, **header: AnyType) -> dict[str, AnyType]:
    return {"name": name, **header, "expr": {"atom": {"b": B, "w": "1h"}}}


HOSTILE = [
    reservation("p1", arrival="0999-06-01T00:00:00Z"),
    {"name": "p1", "expr": {"window": {"s": "0999-06-01T00:00:00Z", "e": "0999-06-02T00:00:00Z",
                                       "expr": {"atom": {"b": B, "w": "1h"}}}}},
    reservation("p1", arrival="0001-01-01T00:00:00Z", every="12h"),
    reservation("p1", arrival="9999-12-31T23:59:59Z"),
    reservation("p1", every="99999999999d"),
    reservation("p1", every="1e300h"),
]


@pytest.mark.parametrize("data", HOSTILE)
def test_a_hostile_time_or_period_is_bad_input_and_changes_nothing(app: AnyType, state: Path, data: AnyType) -> None:
    before = snapshot(state)
    answer = post(app, data)
    assert answer.status_code in (400, 422), answer.text
    assert answer.json()["error"]["code"] == "input"
    assert snapshot(state) == before
    assert call(app, "POST", "/v1/reservations", "bob", content=pinned("fine", 0, 10, 2)).status_code == 201
    assert call(app, "GET", "/v1/plan/use", "bob").status_code == 200


def test_a_yarn_arrival_past_9000_is_422(app: AnyType) -> None:
    rid = call(app, "POST", "/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
    body = yarn_body(rid, 0, 10)
    body["reservation-definition"]["deadline"] = epoch_ms(0) + 7000 * 365 * 86400 * 1000  # the year 9026
    answer = call(app, "POST", "/ws/v1/cluster/reservation/submit", content=json.dumps(body),
                  headers={"Content-Type": "application/json"})
    assert answer.status_code in (400, 422) and "1970 and 9000" in answer.text, answer.text


def test_readiness_says_so_when_the_plans_clock_cannot_move(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #29: a clock that could not advance (here any failure, even one of ours) made 0 advances while
    /v1/ready said ready; now readiness is 503 `clock` until an advance succeeds, and the clock's thread lives on."""
    broken = {"on": True}
    original = Store.advance

    def advance(self: Store, *args: AnyType, **kwargs: AnyType) -> AnyType:
        if broken["on"]:
            raise OverflowError("date value out of range")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "advance", advance)
    app = create_app(state, TokenRegistry({}), clock=ClockMode("wall"))

    async def go() -> list[tuple[int, AnyType]]:
        answers = []
        async with app.router.lifespan_context(app):  # starts the clock: its first tick fails
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://rayon") as client:
                answer = await client.get("/v1/ready")
                answers.append((answer.status_code, answer.json()))
                broken["on"] = False
                app.state.service.clock_stuck = lambda: None  # as the next tick that succeeds leaves it
                answer = await client.get("/v1/ready")
                answers.append((answer.status_code, answer.json()["status"]))
        return answers

    (first, then) = asyncio.run(go())
    assert first[0] == 503 and first[1]["reason"] == "clock" and first[1]["status"] == "unavailable"
    assert then == (200, "ready")


def test_the_clock_recovers_its_readiness_once_an_advance_succeeds(state: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(state) as store:
        wall = WallClock(store, ClockMode("wall"), lambda: datetime(2026, 11, 23, 1, tzinfo=UTC))
        monkeypatch.setattr(Store, "advance", lambda *args, **kwargs: 1 / 0)
        wall._advance()
        assert wall.stuck is not None and "ZeroDivisionError" in wall.stuck
        monkeypatch.undo()
        wall._advance()
        assert wall.stuck is None and store.now() == datetime(2026, 11, 23, 1, tzinfo=UTC)


BAD_TOKEN_FILES = {
    "invalid UTF-8": b"tokens:\n  - {user: \xff\xfe, role: user}\n",
    "3,000 deep": b"tokens: " + b"[" * 3000 + b"]" * 3000 + b"\n",
    "mixed key types": b"tokens:\n  - {1: x, b: y, user: alice}\n",
    "mixed key types at the top": b"tokens: []\n1: 2\n",
    "unhashable key": b"tokens:\n  - {? [a, b] : c}\n",
}


@pytest.mark.parametrize("content", BAD_TOKEN_FILES.values(), ids=BAD_TOKEN_FILES.keys())
def test_a_bad_token_file_keeps_the_tokens_read_before(tmp_path: Path, content: bytes) -> None:
    """Issue #29: such files made 14 of 30 requests 500; the docs promise the tokens read before stay in force."""
    path = tmp_path / "tokens.yaml"
    token = append_token(path, "alice", "user")
    registry = TokenRegistry.load(path, {})
    path.write_bytes(content)
    registry.refresh(force=True)
    principal = registry.authenticate(token)
    assert principal is not None and principal.user == "alice"
    with pytest.raises(TokenError):  # and at start, the file is refused with its name: exit 2, not a traceback
        TokenRegistry.load(path, {})


JSON = {"Content-Type": "application/json"}
ATOM = {"atom": {"b": {"vcores": 1}, "w": "1h"}}
NUL_REQUESTS = {
    "JSON queue": ("POST", "/v1/reservations", {"content": json.dumps({"name": "a", "queue": "q\0x", "expr": ATOM}),
                                                "headers": JSON}),
    "JSON user": ("POST", "/v1/reservations", {"content": json.dumps({"name": "a", "user": "alice\0", "expr": ATOM}),
                                               "headers": JSON}),
    "raw NUL in RDL": ("POST", "/v1/reservations", {"content": "reservation a { atom(b={vcores: 1}, w=1h) } # \0"}),
    "path": ("GET", "/v1/reservations/a%00b", {}),
    "path of a cancel": ("DELETE", "/v1/reservations/a%00b", {}),
    "query": ("GET", "/v1/reservations?queue=a%00b", {}),
    "log query": ("GET", "/v1/log?reservation=a%00b", {}),
    "YARN query": ("GET", "/ws/v1/cluster/reservation/list?queue=a%00b", {}),
    "YARN body": ("POST", "/ws/v1/cluster/reservation/submit", {"content": "\0", "headers": JSON}),
}


@pytest.mark.parametrize(("method", "path", "kwargs"), NUL_REQUESTS.values(), ids=NUL_REQUESTS.keys())
def test_a_nul_anywhere_in_a_request_is_422_before_any_backend_sees_it(app: AnyType, state: Path, method: str,
                                                                     path: str, kwargs: AnyType) -> None:
    """Issue #29: PostgreSQL refuses NUL in text (503 `database`); SQLite stored it or answered 404. Now bad input:
    422 in our API, 400 in YARN's dialect (whose every bad input is 400)."""
    before = snapshot(state)
    answer = call(app, method, path, **kwargs)
    assert answer.status_code == (400 if path.startswith("/ws/") else 422), answer.text
    assert "NUL" in answer.text and snapshot(state) == before


@pytest.mark.parametrize("key", ["queue", "user"])
def test_a_queue_or_user_with_a_nul_is_an_error_in_every_form(key: str) -> None:
    with pytest.raises(RDLErrors, match="holds a NUL character"):
        from_json({"name": "a", key: "q\0x", "expr": ATOM})
    with pytest.raises(RDLErrors, match="holds a NUL character"):
        parse_text(f'reservation a {key}="q\\u0000x" {{ atom(b={{vcores: 1}}, w=1h) }}'.replace("\\u0000", "\0"))


def test_a_yarn_queue_with_a_nul_is_an_error() -> None:
    body = yarn_body("reservation_1_0001", 0, 10, queue="prod\0")
    with pytest.raises(RDLErrors, match="holds a NUL character"):
        from_yarn(body)


def test_a_client_gone_before_its_body_arrived_is_no_internal_error(app: AnyType,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Issue #29: a malformed chunked body (the server answers it 400 and reports a disconnect) was logged as an
    internal 500 with ClientDisconnect's traceback."""
    sent: list[AnyType] = []
    scope = {"type": "http", "method": "POST", "path": "/v1/reservations", "raw_path": b"/v1/reservations",
             "query_string": b"", "headers": [(b"authorization", b"Bearer alice-token"),
                                              (b"content-type", b"text/plain")],
             "scheme": "http", "server": ("rayon", 80), "client": ("127.0.0.1", 1), "root_path": "",
             "http_version": "1.1", "asgi": {"version": "3.0"}}

    async def receive() -> AnyType:
        return {"type": "http.disconnect"}

    async def send(message: AnyType) -> None:
        sent.append(message)

    async def go() -> None:
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)

    with caplog.at_level(logging.INFO):
        asyncio.run(go())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    assert not [m for m in sent if m.get("status") == 500]


@pytest.mark.parametrize(("method", "path", "kwargs"), NUL_REQUESTS.values(), ids=NUL_REQUESTS.keys())
def test_a_nul_is_422_on_postgresql_too(postgres: str, method: str, path: str, kwargs: AnyType) -> None:
    """The backend that answered 503 `database` (5 of 5) before."""
    with Store.open(postgres) as store:
        store.init(CLUSTER, "cluster.yaml", force=True)
    on_postgres = create_app(postgres, TokenRegistry({hash_token(t): p for t, p in TOKENS.items()}))
    try:
        answer = call(on_postgres, method, path, **kwargs)
        assert answer.status_code == (400 if path.startswith("/ws/") else 422), answer.text
    finally:
        on_postgres.state.service.close()
