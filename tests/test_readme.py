"""The README's walk-through of the stored plan runs as written after `rayon serve` has moved the plan's clock to
the wall clock (issue #30: fixed dates in the README and the examples were then refused), on any day."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from planner.store.facade import Store

ROOT = Path(__file__).resolve().parents[1]
PROMPT = ".venv/bin/rayon "
NOT_HERE = ("serve", "token", "simulate", "evaluate", "spark")  # a server, or long runs: tested where they live


def walk_through() -> list[list[str]]:
    """The README's `rayon` commands about the stored plan, in order (comments and redirections dropped)."""
    commands = []
    blocks = (ROOT / "README.md").read_text().split("```")
    client_mode = [b for b in blocks if "RAYON_SERVER" in b]  # against a server: tests/planner/cli/test_client.py
    assert client_mode, "the README shows client mode"
    for line in "\n".join(b for b in blocks if b not in client_mode).splitlines():
        if not line.startswith(PROMPT):
            continue
        words = shlex.split(line[len(PROMPT):], comments=True)
        words = words[:words.index(">")] if ">" in words else words
        if words[0] in NOT_HERE or "--apply" in words or "--from-yarn" in words:
            continue
        commands.append(words)
    return commands


def test_the_walk_through_has_the_store_and_the_follower() -> None:
    names = [words[0] for words in walk_through()]
    assert names[:2] == ["init", "submit"] and "follow" in names


def test_the_walk_through_runs_after_serve_moved_the_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.setenv("RAYON_STATE", str(tmp_path / "plan.db"))
    runner = CliRunner()
    for words in walk_through():
        result = runner.invoke(main, words, prog_name="rayon")
        assert result.exit_code == 0, (words, result.output)
        if words[0] == "init":
            with Store.open(tmp_path / "plan.db") as store:
                store.advance(datetime.now(UTC))  # what `rayon serve` does first
    every = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "examples").iterdir() if p.suffix == ".rdl")
    submitted = runner.invoke(main, ["submit", "--skip-existing", *every], prog_name="rayon")
    assert submitted.exit_code == 0, submitted.output
    assert "(window)" not in submitted.stdout, submitted.stdout  # no example is dated in the past
