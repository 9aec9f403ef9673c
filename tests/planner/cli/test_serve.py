"""`rayon serve` refuses to start on what it cannot serve; `rayon token` makes a token and keeps its hash."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from planner.api.auth import Principal, TokenRegistry
from planner.cli.serve import default_decider, serve, token, tokens_for
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, RAYON, STARTUP_TIMEOUT, make_tokens


@pytest.fixture(autouse=True)
def no_env_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAYON_TOKENS", raising=False)
    monkeypatch.delenv("RAYON_TOKENS_FILE", raising=False)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "plan.db"
    with Store.open(path) as store:
        store.init(CLUSTER, "cluster.yaml")
    return path


def test_token_prints_a_token_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    made = CliRunner().invoke(token, ["ops", "--role", "admin", "--tokens", str(path)])
    assert made.exit_code == 0, made.stderr
    secret = made.stdout.strip()
    assert secret not in path.read_text() and "shown only this once" in made.stderr
    assert TokenRegistry.load(path, environ={}).authenticate(secret) == Principal("ops", "admin")
    refused = CliRunner().invoke(token, ["ops", "--role", "root", "--tokens", str(path)])
    assert refused.exit_code == 2


def test_serve_refuses_to_start_without_any_token(state: Path) -> None:
    result = CliRunner().invoke(serve, ["--state", str(state), "--port", "0"])
    assert result.exit_code == 2 and "no tokens: every request would be refused" in result.stderr


def test_serve_refuses_a_bad_token_file_naming_its_entry(state: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {user: alice, role: user, hash: rayon_plaintext}\n")
    result = CliRunner().invoke(serve, ["--state", str(state), "--tokens", str(tokens), "--port", "0"])
    assert result.exit_code == 2 and f"{tokens}: tokens[0]" in result.stderr and "a token, not a hash" in result.stderr


def test_serve_refuses_a_store_without_a_plan(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    CliRunner().invoke(token, ["alice", "--tokens", str(tokens)])
    (tmp_path / "empty.db").touch()  # a store that exists (a missing one: the test below)
    result = CliRunner().invoke(serve, ["--state", str(tmp_path / "empty.db"), "--tokens", str(tokens)])
    assert result.exit_code == 2 and "holds no plan yet" in result.stderr


def test_serve_refuses_a_missing_store_and_creates_none(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    CliRunner().invoke(token, ["alice", "--tokens", str(tokens)])
    missing = tmp_path / "missing" / "plan.db"
    result = CliRunner().invoke(serve, ["--state", str(missing), "--tokens", str(tokens)])
    assert result.exit_code == 2
    assert (f"no plan store at {missing}; create one with `rayon init --cluster CLUSTER.yaml --state {missing}`"
            in result.stderr)
    assert not missing.parent.exists()


def test_serve_exits_1_when_its_port_is_taken(state: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    CliRunner().invoke(token, ["alice", "--tokens", str(tokens)])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(serve, ["--state", str(state), "--tokens", str(tokens), "--port", str(port)])
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_the_startup_line_counts_tokens_in_good_grammar(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    CliRunner().invoke(token, ["alice", "--tokens", str(path)])
    assert tokens_for(TokenRegistry.load(path, environ={})) == "1 token for alice"
    CliRunner().invoke(token, ["ops", "--role", "admin", "--tokens", str(path)])
    assert tokens_for(TokenRegistry.load(path, environ={})) == "2 tokens for alice, ops"


def test_the_decider_is_a_process_of_its_own_on_two_cores_or_more_or_with_several_workers() -> None:
    assert default_decider(workers=1, cores=1) == "inline"
    assert default_decider(workers=1, cores=2) == "process"
    assert default_decider(workers=1, cores=64) == "process"
    assert default_decider(workers=2, cores=1) == "process"


def start_line(state: Path, tokens: Path, on: set[int], *args: str) -> str:
    """The line `rayon serve` logs as it starts listening, run on these cores only; the server is then stopped."""
    process = subprocess.Popen([str(RAYON), "serve", "--state", str(state), "--tokens", str(tokens), "--port", "0",
                                "--clock", "manual", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, preexec_fn=lambda: os.sched_setaffinity(0, on))
    assert process.stderr is not None
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        for line in process.stderr:
            if "listening on http://" in line:
                url = line.rsplit("listening on ", 1)[1].strip()
                # serving (its handlers in place): SIGTERM ends it cleanly
                while httpx.get(url + "/v1/health", timeout=STARTUP_TIMEOUT).status_code != 200:
                    assert time.monotonic() < deadline, "the server never answered"
                    time.sleep(0.05)
                return line
            assert time.monotonic() < deadline, "the server never started"
        raise AssertionError(f"the server ended (exit status {process.wait()}) before it listened")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two cores and Linux's CPU affinity to start the server on one core and on two")
def test_serve_decides_inline_on_one_core_and_in_a_process_of_its_own_on_two(state: Path, tmp_path: Path) -> None:
    make_tokens(tmp_path / "tokens.yaml")
    first_two = set(sorted(os.sched_getaffinity(0))[:2])
    one = start_line(state, tmp_path / "tokens.yaml", {min(first_two)})
    assert "deciding process" not in one and "worker process" not in one  # one process, deciding inline
    two = start_line(state, tmp_path / "tokens.yaml", first_two)
    assert "1 worker process and a deciding process" in two
    pinned = start_line(state, tmp_path / "tokens.yaml", first_two, "--decider", "inline")
    assert "deciding process" not in pinned  # the flag wins over the rule

