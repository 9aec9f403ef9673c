"""Bearer tokens: hashed at rest, read from a file or the environment, with errors that name the place."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from planner.api.auth import (
    ENV_TOKENS,
    Principal,
    TokenError,
    TokenRegistry,
    append_token,
    hash_token,
    new_token,
    parse_env_tokens,
    read_token_file,
)


def test_a_token_file_keeps_only_hashes_and_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    alice = append_token(path, "alice", "user")
    ops = append_token(path, "ops", "admin")
    text = path.read_text()
    assert alice not in text and ops not in text and hash_token(alice) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    registry = TokenRegistry.load(path, environ={})
    assert registry.authenticate(alice) == Principal("alice", "user")
    assert registry.authenticate(ops) == Principal("ops", "admin")
    assert registry.authenticate(alice + "x") is None and registry.authenticate("") is None
    assert registry.users() == ["alice", "ops"] and registry.admins() == {"ops"}


def test_tokens_are_random_and_hashed_with_sha256() -> None:
    first, second = new_token(), new_token()
    assert first != second and first.startswith("rayon_") and len(first) > 40
    assert hash_token("abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_environment_adds_hashed_entries_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    alice = append_token(path, "alice", "user")
    env = {ENV_TOKENS: f"bob:user:{hash_token('b-secret')}, ci:admin:{hash_token('c-secret')}"}
    registry = TokenRegistry.load(path, environ=env)
    assert registry.authenticate("b-secret") == Principal("bob", "user")
    assert registry.authenticate("c-secret") == Principal("ci", "admin")
    assert registry.authenticate(alice) == Principal("alice", "user")
    assert len(TokenRegistry.load(None, environ=env)) == 2


@pytest.mark.parametrize(("text", "message"), [
    ("tokens:\n  - {user: a, role: admn, hash: 'sha256:" + "0" * 64 + "'}\n", "did you mean `admin`"),
    ("tokens:\n  - {user: a, role: user, hash: rayon_abcdef}\n", "a token, not a hash"),
    ("tokens:\n  - {user: a, role: user, hash: 'md5:00'}\n", "64 hex digits"),
    ("tokens:\n  - {user: a, rol: user, hash: 'sha256:" + "0" * 64 + "'}\n", "did you mean `role`"),
    ("tokens:\n  - {user: 'a b', role: user, hash: 'sha256:" + "0" * 64 + "'}\n", "user name"),
    ("- just a list\n", "one key, `tokens`"),
    ("tokens: [\n", "not valid YAML"),
    ("tokens:\n  - {user: a, role: user, hash: 'sha256:" + "0" * 64 + "'}\n"
     "  - {user: b, role: user, hash: 'sha256:" + "0" * 64 + "'}\n", "already given to `a`"),
])
def test_a_bad_token_file_is_refused_naming_the_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    with pytest.raises(TokenError, match=message) as caught:
        TokenRegistry.load(path, environ={})
    assert str(path) in str(caught.value)


def test_a_bad_environment_entry_is_refused_naming_it() -> None:
    with pytest.raises(TokenError, match=r"\$RAYON_TOKENS entry 2: unknown role 'root'"):
        parse_env_tokens(f"a:user:{hash_token('x')},b:root:{hash_token('y')}")
    with pytest.raises(TokenError, match="entry 1"):
        parse_env_tokens("alice:user:plaintext-token")


def test_a_missing_token_file_is_an_error_not_an_empty_registry(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="cannot read the token file"):
        TokenRegistry.load(tmp_path / "absent.yaml", environ={})


def test_admins_may_act_for_anyone_users_for_themselves() -> None:
    assert Principal("ops", "admin").may_act_for("alice")
    assert Principal("alice", "user").may_act_for("alice")
    assert not Principal("bob", "user").may_act_for("alice")
    assert not Principal("bob", "user").may_act_for(None)  # a reservation without an owner is an admin's


def test_a_token_expires_at_its_time(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    soon = datetime(2026, 12, 24, tzinfo=UTC)
    token = append_token(path, "alice", "user", expires=soon)
    principal = TokenRegistry.load(path, environ={}).authenticate(token)
    assert principal is not None and principal.expires == soon
    assert not principal.expired(soon - timedelta(seconds=1)) and principal.expired(soon)


def test_a_running_registry_takes_the_token_files_changes_and_keeps_its_tokens_when_the_file_breaks(
        tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    alice = append_token(path, "alice", "user")
    registry = TokenRegistry.load(path, environ={})
    bob = append_token(path, "bob", "user")
    registry.refresh(force=True)
    assert registry.authenticate(bob) == Principal("bob", "user")
    path.write_text("\n".join(line for line in path.read_text().splitlines() if "alice" not in line) + "\n")
    registry.refresh(force=True)
    assert registry.authenticate(alice) is None  # revoked without a restart
    path.write_text("tokens: [{user: bob, hash: rayon_not_a_hash}]\n")
    registry.refresh(force=True)
    assert registry.authenticate(bob) == Principal("bob", "user")


def test_rayon_token_expires_takes_a_duration(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    made = CliRunner().invoke(main, ["token", "alice", "--tokens", str(path), "--expires", "30d"])
    assert made.exit_code == 0 and "valid until" in made.output
    (entry,) = read_token_file(path)
    assert entry[1].expires is not None
    refused = CliRunner().invoke(main, ["token", "alice", "--tokens", str(path), "--expires", "30"])
    assert refused.exit_code == 2 and "--expires" in refused.output


def test_rayon_token_says_an_admin_token(tmp_path: Path) -> None:
    """Not "added a admin token" (issue #30)."""
    path = tmp_path / "tokens.yaml"
    made = CliRunner().invoke(main, ["token", "ops", "--role", "admin", "--tokens", str(path)])
    assert made.exit_code == 0 and "added an admin token for `ops`" in made.stderr, made.output
    user = CliRunner().invoke(main, ["token", "alice", "--tokens", str(path)])
    assert "added a user token for `alice`" in user.stderr
