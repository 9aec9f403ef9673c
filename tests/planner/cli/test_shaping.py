"""Output shaping: `-o table|wide|json|yaml|name`, `--no-headers`, `--watch`, and colour only where it belongs."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from follower.cli import main
from planner.cli import shaping

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def rayon(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = str(tmp_path / "plan.db")

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        return CliRunner(env=env).invoke(main, [*args, "--state", state], prog_name="rayon")

    assert run("init", "--cluster", str(EXAMPLES / "cluster.yaml")).exit_code == 0
    assert run("submit", str(EXAMPLES / "etl_nightly.rdl"), str(EXAMPLES / "urgent_retrain.rdl")).exit_code == 0
    return run


def test_json_and_yaml_give_the_api_s_list_shape(rayon) -> None:  # type: ignore[no-untyped-def]
    shaped = json.loads(rayon("list", "-o", "json").stdout)
    assert set(shaped) == {"items", "total", "offset", "limit", "next"}
    assert shaped["total"] == 2 and shaped["next"] is None
    assert json.loads(rayon("list", "--json").stdout) == shaped  # --json is -o json: one shape for a list
    assert yaml.safe_load(rayon("list", "-o", "yaml").stdout) == shaped
    assert {i["reservation"]: i["accepted"] for i in shaped["items"]} == {"etl_nightly": True,
                                                                           "urgent_retrain": False}
    log = json.loads(rayon("log", "-o", "json").stdout)
    assert log["total"] == 2 and [e["action"] for e in log["items"]] == ["submit", "submit"]
    assert json.loads(rayon("log", "--json").stdout) == log
    history = json.loads(rayon("history", "-o", "json").stdout)
    assert set(history) == {"items", "total", "offset", "limit", "next"} and history["total"] == 0
    assert json.loads(rayon("history", "--json").stdout) == history


def test_names_and_tables_without_headers(rayon) -> None:  # type: ignore[no-untyped-def]
    assert rayon("list", "-o", "name").stdout.split() == ["etl_nightly", "urgent_retrain"]
    assert rayon("list", "-o", "name", "--status", "cancelled").stdout == ""
    bare = rayon("list", "--no-headers").stdout.splitlines()
    assert [line.split()[0] for line in bare] == ["etl_nightly", "urgent_retrain"]  # no header, rule or clock line
    assert [line.split()[0] for line in rayon("log", "--no-headers").stdout.splitlines()] == ["1", "2"]
    assert len(rayon("free", "--no-headers", "--to", "+1h").stdout.splitlines()) >= 1
    assert "RESERVATION" not in rayon("history", "--no-headers").stdout


def test_show_sums_up_many_leases_and_lists_them_with_wide(rayon) -> None:  # type: ignore[no-untyped-def]
    shown = rayon("show", "etl_nightly").stdout
    leases = len(json.loads(rayon("show", "etl_nightly", "--json").stdout)["allocations"])
    assert leases > 12 and "ATOM" not in shown
    assert f"{leases} allocations of 3 atoms, at most {{" in shown and "(-o wide lists each one)" in shown
    wide = rayon("show", "etl_nightly", "-o", "wide").stdout
    assert wide.count("extract") > 5
    assert yaml.safe_load(rayon("show", "etl_nightly", "-o", "yaml").stdout)["reservation"] == "etl_nightly"


def test_colour_only_when_asked_for_and_never_off_a_terminal(rayon) -> None:  # type: ignore[no-untyped-def]
    assert "\x1b[" not in rayon("list").stdout  # not a terminal
    table = "RESERVATION  STATE\n-----------  --------\na            accepted\nb            rejected\n\naccepted"
    painted = shaping.coloured(table, "STATE", enabled=True)
    assert click.style("accepted", fg="green") in painted and click.style("rejected", fg="red") in painted
    assert click.unstyle(painted) == table and painted.endswith("\n\naccepted")  # prose after the table stays
    assert shaping.coloured(table, "STATE", enabled=False) == table


def test_no_color_turns_colour_off_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not shaping.colour_enabled()
    monkeypatch.delenv("NO_COLOR")
    assert shaping.colour_enabled()


def test_watch_shows_the_list_again_until_ctrl_c(rayon, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(shaping.time, "sleep", nap)
    watched = rayon("list", "--watch", "5s", "-o", "name")
    assert watched.exit_code == 0 and naps == [5.0, 5.0, 5.0]
    assert watched.stdout.split() == ["etl_nightly", "urgent_retrain"] * 3
    naps.clear()
    assert rayon("list", "-w", "--status", "accepted").exit_code == 0 and naps[0] == 2.0  # -w alone: every 2s
    assert rayon("list", "--watch", "0s").exit_code == 2


def test_a_column_of_memory_speaks_one_unit() -> None:
    from planner.cli.render import column_quantities

    assert column_quantities("memory", [4025 * 1024, 3982848, 0]) == ["4025GiB", "3889.5GiB", "0"]  # not 3982848MiB
    assert column_quantities("memory", [512, 8]) == ["512MiB", "8MiB"]
    assert column_quantities("vcores", [819, 2.5]) == ["819", "2.5"]
