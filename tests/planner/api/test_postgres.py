"""The API over a PostgreSQL plan store, and two servers sharing one plan.

Runs when RAYON_TEST_POSTGRES_URL names a server (as the store tests do: `.ci/run` starts one);
the tests drop and recreate the store's tables there.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.store.facade import Store
from tests.planner.api.support import (
    Load,
    Server,
    make_tokens,
    pinned,
    post_json,
    running,
    stored_violations,
    submit,
    yarn_body,
)


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
    answers: dict[str, bool] = {}

    def run(thread: int) -> None:
        with (first if thread % 2 else second).client(f"u{thread}") as client:
            for name, text in load.shares[thread]:
                answer = submit(client, text)
                assert answer.status_code in (200, 201)
                answers[name] = answer.json()["accepted"]

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
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
