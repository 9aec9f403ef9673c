"""`rayon simulate` from the command line: tables, pure JSON, the event trace, and errors that name the place."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from follower.cli import main

TINY = str(Path(__file__).parents[3] / "examples" / "scenarios" / "tiny.yaml")


def test_json_output_is_one_document_and_the_trace_one_line_per_event(tmp_path: Path) -> None:
    trace = tmp_path / "events.jsonl"
    result = CliRunner().invoke(main, ["simulate", TINY, "--json", "--trace-out", str(trace), "--progress"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["production"]["jobs"] == 2 and document["agent"] == "gree-l"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {"time", "application", "event", "queue", "node", "resources"} <= set(events[0])
    assert [e["application"] for e in events if e["event"] == "finish"] == ["adhoc", "etl", "late"]


def test_options_override_the_scenario(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", TINY, "--agent", "none", "--policy", "fair", "--seed", "9",
                                       "--json"])
    document = json.loads(result.stdout)
    assert (document["agent"], document["policy"], document["seed"]) == ("none", "fair", 9)
    assert document["production"]["accepted"] == 0


def test_the_table_names_the_figures() -> None:
    result = CliRunner().invoke(main, ["simulate", TINY])
    assert result.exit_code == 0
    assert "SLA attainment" in result.stdout and "utilisation" in result.stdout


def test_a_bad_scenario_exits_2_naming_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster:\n  nodes: [{name: w, count: 1, memory: 1GiB, vcores: 1}]\nworkload: {synthetc: {}}\n")
    result = CliRunner().invoke(main, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:3:12: unknown key `synthetc`" in result.stderr and "did you mean `synthetic`" in result.stderr
    assert result.stdout == ""
