"""Concurrent submissions against one server never over-commit, and every accept answered is an accept stored.

8 client threads submit 500 reservations each at once (each thread as its own user) against one real
server; the plan is then read back from the store and handed to the independent plan checker. About
20-25 s on two shared cores (some 170-300 submissions a second, depending on what else runs).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any as AnyType

import pytest

from planner.store.facade import Store
from tests.planner.api.support import Load, Server, make_tokens, running, stored_violations, submit
from tests.planner.support import START

THREADS = 8


@pytest.fixture
def loaded(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Server, Load]]:
    """A server over a cluster sized so that the load asks for about 1.5 times its capacity."""
    load = Load.make(THREADS, request.param)
    state, tokens_file = tmp_path / "plan.db", tmp_path / "tokens.yaml"
    with Store.open(state) as store:
        store.init(load.cluster, "cluster.yaml")
    tokens = make_tokens(tokens_file, {f"u{thread}": "user" for thread in range(THREADS)})
    with running(state, tokens_file, tokens) as server:
        yield server, load


def hammer(server: Server, load: Load) -> dict[str, tuple[int, dict[str, AnyType]]]:
    """Submit every thread's load at once; the status and answer of every submission."""
    answers: dict[str, tuple[int, dict[str, AnyType]]] = {}
    failures: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def run(thread: int) -> None:
        try:
            with server.client(f"u{thread}") as client:
                barrier.wait()
                for name, text in load.shares[thread]:
                    answer = submit(client, text)
                    answers[name] = (answer.status_code, answer.json())
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    return answers


def check(server: Server, load: Load) -> None:
    answers = hammer(server, load)
    assert len(answers) == sum(len(share) for share in load.shares)
    statuses = {status for status, _ in answers.values()}
    assert statuses <= {200, 201}, statuses
    accepted = {name for name, (status, answer) in answers.items() if status == 201 and answer["accepted"]}
    assert all(answer["accepted"] == (status == 201) for status, answer in answers.values())
    assert 0 < len(accepted) < len(answers)  # the load is over capacity: some in, some out
    with Store.open(server.state) as store:
        records = {record.name: record for record in store.list()}
        clock = store.clock()
        assert store.now() == START
    stored = {name for name, record in records.items() if record.state == "accepted"}
    assert stored == accepted
    for name in accepted:  # every accepted reservation holds exactly the leases it was answered with
        assert records[name].decision().to_json(clock)["allocations"] == answers[name][1]["allocations"]
    assert {record.user for record in records.values()} == {f"u{thread}" for thread in range(THREADS)}
    assert stored_violations(server.state) == []


@pytest.mark.parametrize("loaded", [500], indirect=True)
def test_eight_threads_of_five_hundred_submissions_never_over_commit_and_every_accept_is_stored(
        loaded: tuple[Server, Load]) -> None:
    check(*loaded)
