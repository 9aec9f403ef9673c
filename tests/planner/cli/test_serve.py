"""`rayon serve` refuses to start on what it cannot serve; `rayon token` makes a token and keeps its hash."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.api.auth import Principal, TokenRegistry
from planner.cli.serve import serve, token, tokens_for
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER


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
