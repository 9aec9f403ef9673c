"""The API over a PostgreSQL plan store, and two servers sharing one plan.

Runs when RAYON_TEST_POSTGRES_URL names a server (as the store tests do: `.ci/run` starts one);
the tests drop and recreate the store's tables there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.store.facade import Store
from tests.planner.api.support import (
    Load,
    Server,
    clock_moves,
    eventually,
    make_tokens,
    now_of,
    pinned,
    post_json,
    running,
    start,
    stop,
    stored_violations,
    submit,
    submit_shares,
    yarn_body,
)
from tests.planner.support import cluster_text


@pytest.fixture
def two_servers(postgres: str, tmp_path: Path) -> Iterator[tuple[Server, Server, Load]]:
    """Two server processes over one PostgreSQL plan, sized for a small concurrent load."""
    load = Load.make(4, 40)
    with Store.open(postgres) as store:
        store.init(load.cluster, "cluster.yaml", force=True)
    tokens_file = tmp_path / "tokens.yaml"
    users = {f"u{thread}": "user" for thread in range(4)} | {"alice": "user", "bob": "user", "ops": "admin"}
    tokens = make_tokens(tokens_file, users)
    with running(postgres, tokens_file, tokens) as first, running(postgres, tokens_file, tokens) as second:
        yield first, second, load


def test_two_servers_on_one_postgresql_plan_share_it_without_over_committing(
        two_servers: tuple[Server, Server, Load], postgres: str) -> None:
    first, second, load = two_servers
    answers = submit_shares(load, lambda thread: first if thread % 2 else second)
    assert len(answers) == 160 and 0 < sum(answers.values()) < 160
    with Store.open(postgres) as store:
        assert {r.name for r in store.list(state="accepted")} == {name for name, ok in answers.items() if ok}
    assert stored_violations(postgres) == []


def test_ownership_and_yarn_idempotency_hold_across_servers(two_servers: tuple[Server, Server, Load]) -> None:
    first, second, _ = two_servers
    with first.client("alice") as alice, second.client("bob") as bob, second.client("alice") as alice_there:
        assert submit(alice, pinned("alices", 0, 30, 1)).status_code == 201
        assert bob.delete("/v1/reservations/alices").status_code == 403
        assert alice_there.get("/v1/reservations/alices").json()["user"] == "alice"
        rid = alice.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
        body = yarn_body(rid, 0, 120)
        assert post_json(alice, "/ws/v1/cluster/reservation/submit", body).status_code == 202
        assert post_json(alice_there, "/ws/v1/cluster/reservation/submit", body).status_code == 202
        assert post_json(bob, "/ws/v1/cluster/reservation/delete", {"reservation-id": rid}).status_code == 403


def test_one_process_keeps_the_clock_and_another_takes_over_when_it_is_gone(postgres: str) -> None:
    first, second = Store.open(postgres), Store.open(postgres)
    try:
        deadline = time.monotonic() + 10  # a server of an earlier test may still be letting the lock go
        while not first.keeps_clock():
            assert time.monotonic() < deadline, "another process keeps the clock"
            time.sleep(0.1)
        assert first.keeps_clock()  # asked again: still the keeper
        assert not second.keeps_clock()
        first.close()  # its session ends: the lock is free
        assert second.keeps_clock()
    finally:
        first.close()
        second.close()


def test_two_servers_on_a_fast_clock_move_it_once_and_the_survivor_goes_on(postgres: str, tmp_path: Path) -> None:
    with Store.open(postgres) as store:
        store.init(cluster_text({"vcores": 8}, steps=24 * 60), "cluster.yaml", force=True)
    tokens_file = tmp_path / "tokens.yaml"
    tokens = make_tokens(tokens_file)
    servers = [start(postgres, tokens_file, tokens, "--clock", "fast:600") for _ in range(2)]  # 10 minutes a second
    try:
        eventually(lambda: len(clock_moves(postgres)) >= 2, "the clock did not move")
        moves = clock_moves(postgres)
        assert all(m and m["from"] != m["to"] for m in moves)  # one keeper: no second, idle move
        with Store.open(postgres) as store:
            before = store.now()
        servers[0].process.kill()  # whichever of them kept it: the clock goes on, within a step or so
        servers[0].process.wait()
        eventually(lambda: now_of(postgres) > before + timedelta(minutes=10), "the survivor did not go on")
        with Store.open(postgres) as store:
            moves = [e.decision for e in store.log() if e.action == "advance" and e.reservation is None]
            assert all(m and m["from"] != m["to"] for m in moves)
    finally:
        for server in servers:
            if server.process.poll() is None:
                stop(server)


def test_the_clock_keepers_session_is_never_left_idle_in_a_transaction(postgres: str) -> None:
    """Issue #29: the keeper's connection sat `idle in transaction` for minutes between its checks, holding back
    VACUUM on every table of the plan (dead rows "not yet removable")."""
    keeper, other = Store.open(postgres), Store.open(postgres)
    try:
        deadline = time.monotonic() + 10
        while not keeper.keeps_clock():
            assert time.monotonic() < deadline, "another process keeps the clock"
            time.sleep(0.1)
        assert keeper.keeps_clock()  # the check of a keeper that holds the lock already
        held = keeper._db._keeper
        assert held is not None
        pid = held.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        with other._db.engine.connect() as connection:
            state = connection.execute(sa.text("SELECT state FROM pg_stat_activity WHERE pid = :pid"),
                                       {"pid": pid}).scalar()
        assert state == "idle"
    finally:
        keeper.close()
        other.close()
