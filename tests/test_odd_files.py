"""Files that are not UTF-8 text, given to every command that reads one: exit 2 and a message naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import CLUSTER, rayon

GOOD = "reservation r user=u deadline=+6h {\n  atom(b={memory: 2GiB, vcores: 1}, w=1h)\n}\n"
ODD = {
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "latin-1": "# caf\u00e9 au lait\n".encode("latin-1") + GOOD.encode(),
    "nul": GOOD.encode() + b"\x00",
}


def commands(path: Path, state: Path) -> dict[str, list[str | Path]]:
    """Each command that reads a file, reading `path` where it reads one."""
    return {
        "check": ["check", "--cluster", CLUSTER, path],
        "fmt": ["fmt", path],
        "plan": ["plan", "--cluster", CLUSTER, path],
        "plan --cluster": ["plan", "--cluster", path.with_suffix(".yaml"), CLUSTER.parent / "etl_nightly.rdl"],
        "init --cluster": ["init", "--state", state, "--cluster", path.with_suffix(".yaml")],
        "submit": ["submit", "--state", state, path],
        "simulate": ["simulate", path.with_suffix(".yaml")],
    }


@pytest.mark.parametrize("kind", list(ODD))
@pytest.mark.parametrize("command", list(commands(Path("x.rdl"), Path("s.db"))))
def test_a_file_that_is_not_utf8_text_is_bad_input_naming_the_file(tmp_path: Path, kind: str, command: str) -> None:
    path = tmp_path / "odd.rdl"
    path.write_bytes(ODD[kind])
    path.with_suffix(".yaml").write_bytes(ODD[kind])
    state = tmp_path / "plan.db"
    assert rayon("init", "--state", state, "--cluster", CLUSTER).exit_code == 0
    result = rayon(*commands(path, state)[command])
    assert result.exit_code == 2, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(str(tmp_path / "odd.")) and ("not UTF-8 text" in first or "not a text file" in first)
    assert "Traceback" not in result.stderr


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.rdl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert rayon("check", "--cluster", CLUSTER, path).exit_code == 0
    assert rayon("plan", "--cluster", CLUSTER, path).exit_code == 0


def test_json_nested_a_thousand_deep_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    result = rayon("check", path)
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}:1:1: JSON nested too deeply")


def test_a_scenario_setting_of_the_wrong_kind_is_bad_input_where_it_is_written(tmp_path: Path) -> None:
    scenario = (CLUSTER.parent / "scenarios" / "tiny.yaml").read_text()
    assert "  round_steps: 1\n" in scenario
    path = tmp_path / "tiny.yaml"
    path.write_text(scenario.replace("  round_steps: 1\n", "  round_steps: null\n"))
    line = scenario.splitlines().index("  round_steps: 1") + 1
    result = rayon("simulate", path)
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}:{line}:16: `round_steps` must be a whole")
