"""The lazy `rayon` group: every command listed without importing it, each imported only when it runs."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from follower.cli import COMMANDS, main
from follower.cli.lazy import LazyCommand, LazyGroup

ROOT = Path(__file__).resolve().parents[3]
MODULES = ("rdl.cli", "planner.cli.plan", "planner.cli.store", "planner.cli.reads", "planner.cli.lifecycle",
           "planner.cli.free", "planner.cli.history", "planner.cli.serve",
           "planner.plot", "follower.cli.follow", "follower.cli.serve", "follower.cli.simulate",
           "follower.cli.spark")
HEAVY = ("numpy", "sqlalchemy", "fastapi", "pulp", "matplotlib", "simpy", "highspy", "ortools", "planner",
         "follower.sim")  # networkx is not among them: `check` computes critical paths with it


def test_the_table_names_every_command_of_every_module_once() -> None:
    listed = sorted((lazy.target.partition(":")[0], lazy.name) for lazy in COMMANDS)
    real = sorted((module, command.name) for module in MODULES for command in importlib.import_module(module).COMMANDS)
    assert listed == real


@pytest.mark.parametrize("lazy", COMMANDS, ids=lambda lazy: lazy.name)
def test_the_static_help_is_the_command_s_own(lazy: LazyCommand) -> None:
    assert lazy.help == lazy.load().get_short_help_str(limit=10_000)


def test_help_lists_every_command_as_the_imported_commands_would() -> None:
    eager = click.Group("rayon", commands=[lazy.load() for lazy in COMMANDS])
    lazy = LazyGroup("rayon", lazy_commands=COMMANDS)

    def section(group: click.Group) -> str:
        formatter = click.HelpFormatter(max_width=100)
        group.format_commands(click.Context(group), formatter)
        return formatter.getvalue()

    assert section(lazy) == section(eager)
    assert all(f"  {command.name} " in section(lazy) for command in COMMANDS)


def test_a_command_is_loaded_when_resolved() -> None:
    group = LazyGroup("rayon", lazy_commands=(LazyCommand("fmt", "rdl.cli:fmt_command", "Print."),))
    assert group.get_command(click.Context(group), "fmt") is importlib.import_module("rdl.cli").fmt_command
    assert group.get_command(click.Context(group), "nope") is None


def test_a_wrong_target_is_refused() -> None:
    with pytest.raises(TypeError, match="not the click command `check`"):
        LazyCommand("check", "rdl.cli:fmt_command", "Validate.").load()


def test_a_command_runs_through_the_group() -> None:
    result = CliRunner().invoke(main, ["fmt", str(ROOT / "examples" / "etl_nightly.rdl")])
    assert result.exit_code == 0, result.output
    assert "reservation etl_nightly" in result.output


PROBE = """
import json, sys
from follower.cli import main
try:
    main(sys.argv[1:], prog_name="rayon")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["check", "examples/etl_nightly.rdl"]])
def test_help_and_check_import_no_heavy_library(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    loaded = json.loads(done.stderr.splitlines()[-1])
    assert [name for name in loaded if name.startswith(HEAVY)] == []
