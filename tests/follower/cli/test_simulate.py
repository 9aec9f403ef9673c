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


def test_a_trace_option_on_a_workload_without_a_trace_exits_2(tmp_path: Path) -> None:
    copy = tmp_path / "log.swf"
    copy.write_text("1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["simulate", TINY, "--trace", str(copy)])
    assert result.exit_code == 2 and "a trace file was given, but `workload.jobs` reads none" in result.stderr


def test_the_trace_option_runs_the_scenario_on_another_file(tmp_path: Path) -> None:
    copy = tmp_path / "copy.swf"
    copy.write_text("; MaxNodes: 2\n; MaxProcs: 8\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("cluster:\n  nodes: trace\nworkload:\n  trace: {format: swf, file: not-here.swf}\n")
    assert CliRunner().invoke(main, ["simulate", str(scenario)]).exit_code == 2
    result = CliRunner().invoke(main, ["simulate", str(scenario), "--trace", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["production"]["jobs"] + document["best_effort"]["jobs"] == 1
