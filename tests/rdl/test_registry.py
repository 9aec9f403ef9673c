"""The one registry helper: names listed up front, things built on `get`, unknown names that teach."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from planner.agents.registry import AGENTS
from rdl.cli import NameParam
from rdl.errors import RayonError
from rdl.registry import Registry, UnknownName


def test_a_thing_is_built_only_when_asked_for() -> None:
    built: list[str] = []
    registry = Registry("widget", {"a": lambda: built.append("a") or "A", "b": lambda: built.append("b") or "B"})
    assert registry.names == ("a", "b") and "a" in registry and len(registry) == 2
    assert built == []
    assert registry.get("b") == "B" and built == ["b"]


def test_an_unknown_name_lists_the_valid_ones_and_suggests_one() -> None:
    registry = Registry.of("widget", {"gree": 1, "gree-l": 2})
    with pytest.raises(UnknownName) as caught:
        registry.get("gre-l")
    error = caught.value
    assert isinstance(error, RayonError) and isinstance(error, KeyError) and isinstance(error, ValueError)
    assert str(error) == "unknown widget `gre-l`; use one of gree, gree-l (did you mean `gree-l`?)"
    assert error.exit_code == 2


def test_every_agent_is_listed_and_built_by_name() -> None:
    assert AGENTS.names == ("gree", "gree-l", "milp")
    assert AGENTS.get("milp").name == "milp"


def test_a_name_option_fails_with_the_suggestion() -> None:
    @click.command()
    @click.option("--agent", type=NameParam(AGENTS))
    def command(agent: str) -> None:
        click.echo(agent)

    result = CliRunner().invoke(command, ["--agent", "gre"])
    assert result.exit_code == 2 and "did you mean `gree`?" in result.output
    assert CliRunner().invoke(command, ["--agent", "milp"]).output == "milp\n"
