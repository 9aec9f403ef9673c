"""Hostile times and periods on the command line: exit 2, a positioned message, the store unchanged (issue #29)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "examples" / "cluster.yaml"
B = "b={memory: 1GiB, vcores: 1}"
ORDINARY = f"reservation fine user=bob {{ atom({B}, w=1h) }}\n"


@pytest.fixture
def rayon(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = str(tmp_path / "plan.db")

    def run(*args: str) -> object:
        return CliRunner().invoke(main, [*args, "--state", state], prog_name="rayon")

    assert run("init", "--cluster", str(CLUSTER)).exit_code == 0  # type: ignore[attr-defined]
    return run


def write(tmp_path: Path, text: str, name: str = "r.rdl") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


HOSTILE = [
    f"reservation p1 user=alice {{ window(s=0999-06-01T00:00:00Z, e=0999-06-02T00:00:00Z, atom({B}, w=1h)) }}\n",
    f"reservation p1 user=alice arrival=0999-06-01T00:00:00Z {{ atom({B}, w=1h) }}\n",
    f"reservation p1 user=alice arrival=9999-12-31T23:59:59Z {{ atom({B}, w=1h) }}\n",
    f"reservation p1 user=alice every=99999999999d {{ atom({B}, w=1h) }}\n",
    f"reservation p1 user=alice every=1e300h {{ atom({B}, w=1h) }}\n",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_time_is_refused_and_every_later_submission_still_works(rayon, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                          text: str) -> None:
    before = rayon("list", "--json").output
    refused = rayon("submit", write(tmp_path, text))
    assert refused.exit_code == 2, refused.output
    assert "r.rdl:1:" in refused.output and "Traceback" not in refused.output
    assert rayon("list", "--json").output == before
    later = rayon("submit", write(tmp_path, ORDINARY, "later.rdl"))
    assert later.exit_code == 0, later.output
    assert rayon("advance", "--to", "+1d").exit_code == 0


def test_a_series_ending_at_the_end_of_the_range_is_decided_not_crashed(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = f"reservation late user=alice arrival=8999-01-01T00:00:00Z until=9000-12-31T00:00:00Z every=1d " \
           f"{{ atom({B}, w=1h) }}\n"
    result = rayon("submit", write(tmp_path, text))
    assert result.exit_code == 0 and "rejected (window)" in result.output, result.output


@pytest.mark.parametrize("text", HOSTILE)
def test_plan_exits_2_on_a_hostile_time_not_1(tmp_path: Path, text: str) -> None:
    result = CliRunner().invoke(main, ["plan", "--cluster", str(CLUSTER), write(tmp_path, text)], prog_name="rayon")
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00Z", "9500-01-01T00:00:00Z"])
def test_a_cluster_starting_outside_the_years_1970_to_9000_is_refused_by_init(tmp_path: Path, start: str) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(f"start: {start}\ncapacity: {{vcores: 4}}\n")
    result = CliRunner().invoke(main, ["init", "--cluster", str(cluster), "--state", str(tmp_path / "p.db")])
    assert result.exit_code == 2 and "c.yaml:1:8:" in result.output and "1970 and 9000" in result.output
    assert not (tmp_path / "p.db").exists()


@pytest.mark.parametrize("to", ["9500-01-01T00:00:00Z", "+3000000d", "+36526d"])
def test_the_clock_cannot_be_moved_past_9000(rayon, to: str) -> None:  # type: ignore[no-untyped-def]
    result = rayon("advance", "--to", to)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("retention", ["3000000d", "1000000w", "99999999999999d"])
def test_a_retention_too_long_to_count_back_is_refused_and_the_clock_still_moves(rayon,  # type: ignore[no-untyped-def]
                                                                                retention: str) -> None:
    before = rayon("retention").output
    refused = rayon("retention", retention)
    assert refused.exit_code == 2 and "longer than 100 years" in refused.output, refused.output
    assert rayon("retention").output == before
    moved = rayon("advance", "--to", "+1d")
    assert moved.exit_code == 0, moved.output


def test_a_retention_stored_before_the_bound_keeps_everything_and_the_clock_still_moves(
        rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with sqlite3.connect(tmp_path / "plan.db") as connection:
        connection.execute("UPDATE rayon_meta SET value = '3000000d' WHERE key = 'retention'")
    assert rayon("submit", write(tmp_path, ORDINARY)).exit_code == 0
    moved = rayon("advance", "--to", "+30d")
    assert moved.exit_code == 0 and "Traceback" not in moved.output, moved.output
    assert "fine" in rayon("log").output


def test_the_plan_store_and_its_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    """Issue #29: under umask 022 the plan (every user's reservations, the tokens' hashes) was world-readable."""
    state = tmp_path / "home" / ".local" / "state" / "rayon" / "plan.db"
    previous = os.umask(0o022)
    try:
        result = CliRunner().invoke(main, ["init", "--cluster", str(CLUSTER), "--state", str(state)])
        assert result.exit_code == 0, result.output
        assert CliRunner().invoke(main, ["submit", "--state", str(state), write(tmp_path, ORDINARY)]).exit_code == 0
    finally:
        os.umask(previous)
    files = [path for path in state.parent.iterdir() if path.name.startswith("plan.db")]
    assert state in files and all(stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 for path in files), \
        {path.name: oct(path.stat().st_mode) for path in files}
    for folder in (state.parent, state.parent.parent, state.parent.parent.parent, tmp_path / "home"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


SERVE_CONFIGS = {
    "5,000 deep": ("port: " + "[" * 5000 + "]" * 5000 + "\n", "serve.yaml:1:", "nested deeper than 100 levels"),
    "a path for a host": ("host: '../../etc'\n", "serve.yaml:1:7:", "is not a host name or an IP address"),
}


@pytest.mark.parametrize(("text", "place", "message"), SERVE_CONFIGS.values(), ids=SERVE_CONFIGS.keys())
def test_a_hostile_serve_configuration_is_a_positioned_error_not_a_traceback(tmp_path: Path, text: str,
                                                                            place: str, message: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    result = CliRunner().invoke(main, ["serve", "--config", str(config), "--state", str(tmp_path / "p.db")])
    assert result.exit_code == 2, result.output
    assert f"{tmp_path}/{place}" in result.output and message in result.output, result.output


def test_a_host_flag_that_is_no_host_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--host", "../../etc", "--state", str(tmp_path / "p.db")])
    assert result.exit_code == 2 and "is not a host name or an IP address" in result.output


def test_a_scenario_nested_thousands_deep_is_a_positioned_error(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: x\ncluster: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")
    result = CliRunner().invoke(main, ["simulate", str(scenario)])
    assert result.exit_code == 2 and "nested deeper than 100 levels" in result.output, result.output[-500:]
