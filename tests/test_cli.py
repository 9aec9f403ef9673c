"""The `rayon` command line: `check`, `fmt` and `plan` (spec: rdl.md, decisions.md).

Most cases run in-process through click's CliRunner with standard output and standard
error kept apart; a few end-to-end cases run the installed console script as a real
subprocess. Every plan printed is read back and handed to the independent checker.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any as AnyType

import click
import pytest
from click.testing import CliRunner, Result

from follower.cli import main
from planner.agents.registry import AGENTS
from planner.core.check import check_plan
from rdl import units
from rdl.cli import RelativeTime, TimeParam, resolve_time
from rdl.cluster import Cluster, load_cluster
from rdl.forms.jsonform import from_json
from rdl.forms.yarn import parse_yarn_text
from rdl.load import load
from rdl.syntax.parser import parse_text
from rdl.syntax.printer import format_reservations
from rdl.tree import Absolute, Reservation, labelled_atoms

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CLUSTER = EXAMPLES / "cluster.yaml"
REASON_CODES = ("capacity", "policy", "window", "invalid", "timeout")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
GREEDY = ("gree", "gree-l")  # decide reservations one by one, in submission order

# A one-day toy cluster of 32 bundles of {2GiB, 1 vcore} (64 GiB, 32 vcores).
SMALL_CLUSTER = """\
start: 2026-11-23T00:00:00Z
step: 1m
horizon: 2d
capacity: {memory: 64GiB, vcores: 32}
"""
# 16 bundles for 3h inside [00:00, 04:00): placed, it leaves room for 24 bundles only 1h long.
GANG = """\
reservation gang user=u deadline=+4h {
  solve: atom(b={memory: 2GiB, vcores: 1}, g=16, h=16, l=3h, w=48h)
}
"""
# 24 bundles for 2h inside [00:00, 04:00): fits alone, but not next to `gang` (and `gang` not next to it).
OTHER = """\
reservation other user=v deadline=+4h {
  run: atom(b={memory: 2GiB, vcores: 1}, g=24, h=24, l=2h, w=48h)
}
"""
BAD_LINE = "  atom(b={memory: 2GiB, vcores: 1}, h=10, l=5, w=5h)"  # `l=5`: a duration without its unit
BAD_RDL = f"reservation bad user=x deadline=+6h {{\n{BAD_LINE}\n}}\n"


# --- running the command -------------------------------------------------------------------------------------------

def make_runner() -> CliRunner:
    """A runner that keeps stderr out of stdout: click < 8.2 needs `mix_stderr=False`, later ones always do."""
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    return CliRunner()


def rayon(*args: str | Path) -> Result:
    """`rayon ARGS` in-process; a Python exception escaping the command fails the test with its traceback."""
    return make_runner().invoke(main, [str(a) for a in args], catch_exceptions=False, prog_name="rayon")


def rayon_command() -> list[str]:
    """The installed console script, or the same entry point through this interpreter."""
    script = Path(sys.executable).parent / "rayon"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from follower.cli import main; sys.exit(main())"]


def rayon_process(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`rayon ARGS` as a real process, run from the repository root on this checkout's code."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([*rayon_command(), *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def plan_json(*paths: str | Path, cluster: str | Path = CLUSTER, agent: str | None = None,
              now: str | None = None) -> dict[str, AnyType]:
    """`rayon plan --json`: exit 0 and exactly one JSON document on stdout."""
    args: list[str | Path] = ["plan", "--cluster", cluster, "--json"]
    if agent is not None:
        args += ["--agent", agent]
    if now is not None:
        args += ["--now", now]
    result = rayon(*args, *paths)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# --- reading a plan back -------------------------------------------------------------------------------------------

def reservations_of(paths: Sequence[str | Path], cluster: Cluster, now: datetime | None = None) -> list[Reservation]:
    """The reservations of these files, in submission order, parsed and validated independently of the CLI."""
    files = [f for f in load(list(paths), None, cluster, now) if f.cluster is None]
    for loaded in files:
        assert loaded.errors is None, loaded.errors.render()
    return [r for f in files for r in f.reservations]


def lease_seconds_on_grid(lease: float | None, step: int) -> int:
    """The lease length rounded up to whole steps (one step when omitted), in seconds."""
    return step * max(1, math.ceil((lease if lease is not None else step) / step - 1e-9))


def assert_plan_document(document: Mapping[str, AnyType], reservations: Sequence[Reservation], cluster: Cluster,
                         agent: str | None = None) -> None:
    """The shape and allocation semantics of decisions.md."""
    assert {"cluster", "agent", "decisions"} <= set(document)
    header = document["cluster"]
    assert {"start", "step", "horizon"} <= set(header)
    assert header["start"] == units.format_instant(cluster.start)
    assert ISO_UTC.match(header["start"])
    assert units.parse_duration(header["step"]) == cluster.step
    assert units.parse_duration(header["horizon"]) == cluster.horizon
    if agent is not None:
        assert document["agent"] == agent
    decisions = document["decisions"]
    assert [d["reservation"] for d in decisions] == [r.name for r in reservations], "one decision each, in order"
    by_name = {r.name: r for r in reservations}
    for decision in decisions:
        reservation = by_name[decision["reservation"]]
        assert isinstance(decision["accepted"], bool)
        if decision["accepted"]:
            assert decision["allocations"], f"{reservation.name} accepted without allocations"
            atoms = {label: atom for _, label, atom in labelled_atoms(reservation.expr)}
            for entry in decision["allocations"]:
                assert {"atom", "start", "end", "bundles", "resources"} <= set(entry)
                atom = atoms[entry["atom"]]
                assert ISO_UTC.match(entry["start"]) and ISO_UTC.match(entry["end"]), entry
                start, end = units.parse_instant(entry["start"]), units.parse_instant(entry["end"])
                assert (end - start).total_seconds() == lease_seconds_on_grid(atom.lease, cluster.step), entry
                bundles = entry["bundles"]
                assert isinstance(bundles, int) and bundles > 0 and bundles % atom.gang == 0, entry
                assert set(entry["resources"]) == set(atom.bundle), entry
                for resource, quantity in atom.bundle.items():  # memory in MiB, as the tree keeps it
                    assert entry["resources"][resource] == pytest.approx(bundles * quantity), entry
        else:
            assert not decision.get("allocations"), f"{reservation.name} rejected but holds allocations"
            reason = decision["reason"]
            assert reason["code"] in REASON_CODES, reason
            assert isinstance(reason["message"], str) and reason["message"], reason
            if "atom" in reason:
                assert reason["atom"] in {label for _, label, _ in labelled_atoms(reservation.expr)}, reason
            if "earliest_deadline" in reason:
                assert ISO_UTC.match(reason["earliest_deadline"]), reason


def assert_plan_ok(document: Mapping[str, AnyType], paths: Sequence[str | Path], cluster_path: str | Path = CLUSTER,
                   now: str | None = None, agent: str | None = None) -> dict[str, AnyType]:
    """The document has the contract's shape, and the independent checker finds no broken promise."""
    cluster = load_cluster(cluster_path)
    clock = units.parse_instant(now) if now is not None else None
    reservations = reservations_of(paths, cluster, clock)
    assert_plan_document(document, reservations, cluster, agent)
    assert check_plan(cluster, reservations, document["decisions"], submitted=clock, now=clock) == []
    return {d["reservation"]: d for d in document["decisions"]}


def with_deadline(reservation: Reservation, deadline: str) -> str:
    """The same reservation as RDL text, with an absolute deadline instead."""
    return format_reservations([replace(reservation, deadline=Absolute(units.parse_instant(deadline)))])


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """The toy cluster file, and `gang.rdl`, `other.rdl` and `bad.rdl` beside it."""
    (tmp_path / "gang.rdl").write_text(GANG)
    (tmp_path / "other.rdl").write_text(OTHER)
    (tmp_path / "bad.rdl").write_text(BAD_RDL)
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_CLUSTER)
    return path


def example_names() -> list[str]:
    return [r.name for r in reservations_of([EXAMPLES], load_cluster(CLUSTER))]


# --- help ----------------------------------------------------------------------------------------------------------

def test_group_help_lists_the_commands() -> None:
    result = rayon("--help")
    assert result.exit_code == 0
    for command in ("check", "fmt", "plan"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), result.stdout


@pytest.mark.parametrize(("command", "options"), [
    ("check", ["--cluster", "--format", "--now", "--json"]),
    ("plan", ["--cluster", "--agent", "--now", "--json"]),
    ("fmt", ["--format", "--json"]),
])
def test_command_help_describes_its_options(command: str, options: list[str]) -> None:
    result = rayon(command, "--help")
    assert result.exit_code == 0, result.stderr
    assert f"Usage: rayon {command}" in result.stdout
    for option in options:
        assert option in result.stdout
    if command == "plan":
        for agent in GREEDY:
            assert agent in result.stdout  # the valid agents are listed
        assert "required" in result.stdout  # --cluster


# --- check ---------------------------------------------------------------------------------------------------------

def test_check_examples_lists_every_reservation() -> None:
    result = rayon("check", EXAMPLES)
    assert result.exit_code == 0, result.stderr
    for name in example_names():
        assert re.search(rf"^{re.escape(name)}\s", result.stdout, re.M), f"{name} missing from\n{result.stdout}"
    assert "0 file(s) with errors" in result.stderr


def test_check_json_is_one_document_with_per_file_summaries() -> None:
    result = rayon("check", "--json", EXAMPLES)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["valid"] is True
    files = {Path(f["path"]).name: f for f in document["files"]}
    cluster = load_cluster(CLUSTER)
    for path in sorted(EXAMPLES.iterdir()):
        if path.suffix not in (".rdl", ".json"):
            continue
        summary = files[path.name]
        assert summary["valid"] is True
        assert [r["name"] for r in summary["reservations"]] == [r.name for r in reservations_of([path], cluster)]
    assert files["cluster.yaml"]["format"] == "cluster"


def test_check_folder_with_a_bad_file(small: Path) -> None:
    folder = small.parent
    result = rayon("check", folder)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r".*bad\.rdl:2:\d+: ", line)]
    assert heads, result.stderr
    head = heads[0]
    col = int(re.match(r".*bad\.rdl:2:(\d+): ", lines[head]).group(1))  # type: ignore[union-attr]
    assert BAD_LINE.index("l=5") + 1 <= col <= BAD_LINE.index("l=5") + 3, "points at `l=5`"
    assert "unit" in lines[head]
    source, caret = lines[head + 1], lines[head + 2]
    indent = source.index(BAD_LINE)
    assert caret.strip() == "^" and caret.index("^") - indent == col - 1
    # The good files are still reported.
    for name in ("gang", "other"):
        assert re.search(rf"^{name}\s", result.stdout, re.M), result.stdout
    assert "1 file(s) with errors" in result.stderr


def test_check_json_with_a_bad_file(small: Path) -> None:
    result = rayon("check", "--json", small.parent)
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["valid"] is False
    files = {Path(f["path"]).name: f for f in document["files"]}
    assert files["bad.rdl"]["valid"] is False
    [error] = files["bad.rdl"]["errors"]
    assert error["line"] == 2 and error["col"] and error["message"]
    assert [r["name"] for r in files["gang.rdl"]["reservations"]] == ["gang"]


def test_check_with_a_bad_cluster_file(tmp_path: Path) -> None:
    cluster = tmp_path / "broken.yaml"
    cluster.write_text(SMALL_CLUSTER.replace("memory: 64GiB", "memory: lots"))
    result = rayon("check", "--cluster", cluster, EXAMPLES / "etl_nightly.rdl")
    assert result.exit_code == 2
    assert re.search(r"broken\.yaml:4:\d+: .*lots", result.stderr), result.stderr
    assert "^" in result.stderr


def test_check_with_a_cluster_rejects_unknown_resources(tmp_path: Path, small: Path) -> None:
    path = tmp_path / "gpu.rdl"
    path.write_text("reservation g {\n  atom(b={gpu: 1}, w=1h)\n}\n")
    assert rayon("check", path).exit_code == 0  # no cluster: resource names are not checked
    result = rayon("check", "--cluster", small, path)
    assert result.exit_code == 2
    assert re.search(r"gpu\.rdl:2:\d+: .*gpu", result.stderr), result.stderr


def test_check_format_forces_a_form(tmp_path: Path) -> None:
    text = rayon("fmt", "--json", EXAMPLES / "etl_nightly.rdl").stdout
    path = tmp_path / "etl.txt"  # JSON form behind a suffix that says nothing: read as RDL by default
    path.write_text(text)
    assert rayon("check", "--cluster", CLUSTER, path).exit_code == 2
    result = rayon("check", "--cluster", CLUSTER, "--format", "json", path)
    assert result.exit_code == 0, result.stderr
    assert "etl_nightly" in result.stdout
    yarn = EXAMPLES / "yarn_spark_pipeline.json"
    assert rayon("check", "--cluster", CLUSTER, "--format", "yarn", yarn).exit_code == 0
    assert rayon("check", "--cluster", CLUSTER, "--format", "json", yarn).exit_code == 2  # not the RDL JSON form


def test_check_rejects_an_unknown_format() -> None:
    result = rayon("check", "--format", "xml", EXAMPLES)
    assert result.exit_code == 2
    assert "rdl" in result.stderr and "yarn" in result.stderr


# --- fmt -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["etl_nightly.rdl", "backfill_window.rdl", "training_shapes.rdl"])
def test_fmt_prints_canonical_rdl_that_parses_back(name: str) -> None:
    path = EXAMPLES / name
    result = rayon("fmt", path)
    assert result.exit_code == 0, result.stderr
    original = reservations_of([path], load_cluster(CLUSTER))
    assert parse_text(result.stdout, "<fmt>") == original
    assert format_reservations(parse_text(result.stdout, "<fmt>")) == result.stdout  # canonical: a fixed point


def test_fmt_json_prints_the_json_form() -> None:
    path = EXAMPLES / "mapreduce_wordcount.rdl"
    result = rayon("fmt", "--json", path)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert from_json(data) == reservations_of([path], load_cluster(CLUSTER))
    [wordcount] = data
    assert wordcount["name"] == "wordcount" and wordcount["deadline"] == "+4h"
    assert wordcount["expr"]["gap"] == "30m"
    assert [child["name"] for child in wordcount["expr"]["order"]] == ["map", "reduce"]


def test_fmt_of_yarn_json() -> None:
    path = EXAMPLES / "yarn_spark_pipeline.json"
    result = rayon("fmt", path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("reservation spark-etl-nightly")
    assert parse_text(result.stdout, "<fmt>") == [parse_yarn_text(path.read_text(), str(path))]


def test_fmt_of_a_bad_file(small: Path) -> None:
    result = rayon("fmt", small.parent / "bad.rdl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert re.search(r"bad\.rdl:2:\d+: ", result.stderr)


# --- plan: the JSON document ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("agent", GREEDY)
def test_plan_json_document(agent: str) -> None:
    paths = sorted(EXAMPLES.glob("*.rdl"))
    document = plan_json(*paths, agent=agent)
    assert document["cluster"]["start"] == "2026-11-23T00:00:00Z"
    assert_plan_ok(document, paths, agent=agent)


def test_plan_resources_are_bundles_times_bundle_size_in_mib() -> None:
    document = plan_json(EXAMPLES / "etl_nightly.rdl")
    [decision] = document["decisions"]
    assert decision["accepted"]
    sizes = {"extract": (2048, 1), "transform": (4096, 2), "load": (8192, 4)}  # MiB, vcores per bundle
    lengths = {"extract": 5, "transform": 10, "load": 60}  # minutes
    for entry in decision["allocations"]:
        memory, vcores = sizes[entry["atom"]]
        assert entry["resources"] == {"memory": entry["bundles"] * memory, "vcores": entry["bundles"] * vcores}
        span = units.parse_instant(entry["end"]) - units.parse_instant(entry["start"])
        assert span == timedelta(minutes=lengths[entry["atom"]])
        if entry["atom"] == "load":
            assert entry["bundles"] % 10 == 0
    assert sum(e["bundles"] for e in decision["allocations"] if e["atom"] == "extract") == 600  # 50h / 5m


def test_plan_rounds_lease_lengths_up_to_steps(tmp_path: Path) -> None:
    path = tmp_path / "odd.rdl"
    path.write_text("reservation odd deadline=+2h {\n  a: atom(b={memory: 1GiB, vcores: 1}, h=2, l=90s, w=6m)\n}\n")
    document = plan_json(path)
    [decision] = assert_plan_ok(document, [path]).values()
    assert decision["accepted"]
    for entry in decision["allocations"]:
        assert units.parse_instant(entry["end"]) - units.parse_instant(entry["start"]) == timedelta(minutes=2)
    assert sum(e["bundles"] for e in decision["allocations"]) == 4  # ceil(6m / 90s), counted as written


def test_plan_human_table_names_every_reservation_and_reasons(small: Path) -> None:
    folder = small.parent
    document = plan_json(folder / "gang.rdl", folder / "other.rdl", cluster=small)
    reason = {d["reservation"]: d for d in document["decisions"]}["other"]["reason"]
    result = rayon("plan", "--cluster", small, folder / "gang.rdl", folder / "other.rdl")
    assert result.exit_code == 0, result.stderr
    assert re.search(r"^gang\s+accepted", result.stdout, re.M), result.stdout
    assert re.search(r"^other\s+rejected", result.stdout, re.M), result.stdout
    assert " ".join(reason["message"].split()) in " ".join(result.stdout.split())  # in words, not only a code
    assert "1 of 2 accepted" in result.stdout


def test_plan_table_of_the_examples() -> None:
    result = rayon("plan", "--cluster", CLUSTER, EXAMPLES)
    assert result.exit_code == 0, result.stderr
    for name in example_names():
        assert re.search(rf"^{re.escape(name)}\s+(accepted|rejected)", result.stdout, re.M), result.stdout


# --- plan: agents, bad input, clock, order -------------------------------------------------------------------------

@pytest.mark.parametrize("agent", GREEDY)
def test_plan_with_each_greedy_agent(agent: str) -> None:
    path = EXAMPLES / "mpi_solver.rdl"
    document = plan_json(path, agent=agent)
    assert document["agent"] == agent
    assert all(d["accepted"] for d in assert_plan_ok(document, [path], agent=agent).values())


def test_plan_with_an_unknown_agent_lists_the_valid_ones() -> None:
    result = rayon("plan", "--cluster", CLUSTER, "--agent", "gre", EXAMPLES / "mpi_solver.rdl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "gre" in result.stderr
    for agent in AGENTS:
        assert agent in result.stderr


def test_plan_of_bad_input_plans_nothing(small: Path) -> None:
    folder = small.parent
    result = rayon("plan", "--cluster", small, "--json", folder / "gang.rdl", folder / "bad.rdl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert re.search(r"bad\.rdl:2:\d+: ", result.stderr)
    assert "nothing was planned" in result.stderr


def test_plan_with_a_bad_cluster_file(tmp_path: Path) -> None:
    cluster = tmp_path / "broken.yaml"
    cluster.write_text(SMALL_CLUSTER.replace("step: 1m", "step: 1"))
    result = rayon("plan", "--cluster", cluster, "--json", EXAMPLES / "etl_nightly.rdl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert re.search(r"broken\.yaml:2:\d+: ", result.stderr), result.stderr


def test_plan_needs_a_cluster() -> None:
    result = rayon("plan", "--json", EXAMPLES / "etl_nightly.rdl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--cluster" in result.stderr


def test_plan_rejects_duplicate_names_across_files() -> None:
    path = EXAMPLES / "etl_nightly.rdl"
    result = rayon("plan", "--cluster", CLUSTER, "--json", path, path)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "etl_nightly" in result.stderr


def test_plan_relative_times_count_from_the_cluster_start() -> None:
    path = EXAMPLES / "etl_nightly.rdl"  # deadline=+6h
    document = plan_json(path)
    [decision] = assert_plan_ok(document, [path]).values()
    assert decision["accepted"]
    start = units.parse_instant("2026-11-23T00:00:00Z")
    for entry in decision["allocations"]:
        assert start <= units.parse_instant(entry["start"])
        assert units.parse_instant(entry["end"]) <= start + timedelta(hours=6)


def test_plan_relative_times_count_from_now() -> None:
    path, now = EXAMPLES / "etl_nightly.rdl", "2026-11-24T10:00:00Z"
    document = plan_json(path, now=now)
    [decision] = assert_plan_ok(document, [path], now=now).values()
    assert decision["accepted"]
    start = units.parse_instant(now)
    for entry in decision["allocations"]:
        assert start <= units.parse_instant(entry["start"])
        assert units.parse_instant(entry["end"]) <= start + timedelta(hours=6)
    assert document["cluster"]["start"] == "2026-11-23T00:00:00Z"  # the plan's grid is still the cluster's


def test_plan_window_already_past_is_rejected_with_window(tmp_path: Path) -> None:
    path, now = tmp_path / "past.rdl", "2026-11-23T15:00:00Z"  # its window is [02:00, 14:00)
    path.write_text((EXAMPLES / "mpi_solver.rdl").read_text().replace("arrival=+2h", "arrival=2026-11-23T02:00:00Z"))
    document = plan_json(path, now=now)
    [decision] = assert_plan_ok(document, [path], now=now).values()
    assert decision["accepted"] is False
    assert decision["reason"]["code"] == "window"


def test_plan_window_beyond_the_horizon_is_rejected_with_window(tmp_path: Path) -> None:
    path = tmp_path / "later.rdl"
    path.write_text("reservation later arrival=2026-12-10T00:00:00Z deadline=+2h {\n"
                    "  run: atom(b={memory: 2GiB, vcores: 1}, h=4, l=10m, w=1h)\n}\n")
    [decision] = assert_plan_ok(plan_json(path), [path]).values()
    assert decision["accepted"] is False
    assert decision["reason"]["code"] == "window"


def test_plan_window_cut_by_the_horizon_is_rejected_with_window() -> None:
    # etl_nightly needs 130 minutes of critical path; the horizon ends 60 minutes after `now`, on an empty cluster.
    path, now = EXAMPLES / "etl_nightly.rdl", "2026-11-29T23:00:00Z"
    [decision] = assert_plan_ok(plan_json(path, now=now), [path], now=now).values()
    assert decision["accepted"] is False
    assert decision["reason"]["code"] == "window"


def test_plan_now_before_the_cluster_start() -> None:
    path = EXAMPLES / "etl_nightly.rdl"  # deadline=+6h: [now, now + 6h) lies wholly before the plan's grid
    result = rayon("plan", "--cluster", CLUSTER, "--json", "--now", "2026-11-22T00:00:00Z", path)
    if result.exit_code == 2:  # refusing a clock before the grid is fine too
        assert result.stdout == "" and "--now" in result.stderr
        return
    assert result.exit_code == 0, result.stderr
    [decision] = json.loads(result.stdout)["decisions"]
    assert decision["accepted"] is False
    assert decision["reason"]["code"] == "window"
    assert "2026-11-23T00:00:00Z" in decision["reason"]["message"]  # the start of the plan is what it misses


@pytest.mark.parametrize("agent", GREEDY)
def test_plan_submits_files_in_argument_order(small: Path, agent: str) -> None:
    gang, other = small.parent / "gang.rdl", small.parent / "other.rdl"
    first = assert_plan_ok(plan_json(gang, other, cluster=small, agent=agent), [gang, other], small)
    assert [d["accepted"] for d in first.values()] == [True, False]
    second = assert_plan_ok(plan_json(other, gang, cluster=small, agent=agent), [other, gang], small)
    assert list(second) == ["other", "gang"]
    assert [d["accepted"] for d in second.values()] == [True, False]


@pytest.mark.parametrize("agent", GREEDY)
def test_rejection_names_the_atom_and_an_earliest_deadline_that_works(small: Path, agent: str) -> None:
    gang, other = small.parent / "gang.rdl", small.parent / "other.rdl"
    decisions = assert_plan_ok(plan_json(gang, other, cluster=small, agent=agent), [gang, other], small)
    reason = decisions["other"]["reason"]
    assert reason["code"] == "capacity"
    assert reason["atom"] == "run"
    assert re.search(r"\d", reason["message"]), reason
    assert "24" in reason["message"]  # how many bundles it needs
    deadline = reason["earliest_deadline"]
    assert units.parse_instant(deadline) > units.parse_instant("2026-11-23T04:00:00Z")
    # Re-planning the same request with that deadline, after the same plan, is accepted.
    [original] = reservations_of([other], load_cluster(small))
    retry = small.parent / "retry.rdl"
    retry.write_text(with_deadline(original, deadline))
    again = assert_plan_ok(plan_json(gang, retry, cluster=small, agent=agent), [gang, retry], small)
    assert again["other"]["accepted"], again["other"]


def test_plan_many_reservations_keeps_stdout_pure_json(tmp_path: Path) -> None:
    path = tmp_path / "many.rdl"
    path.write_text("\n".join(f"reservation r{i} user=u deadline=+{1 + i % 24}h {{\n"
                              "  atom(b={memory: 1GiB, vcores: 1}, h=4, l=10m, w=1h)\n}\n" for i in range(120)))
    result = rayon("plan", "--cluster", CLUSTER, "--json", path)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)  # nothing but the one document
    assert len(document["decisions"]) == 120
    assert_plan_ok(document, [path])



def test_no_explain_rejects_for_capacity_without_searching_a_deadline(small: Path) -> None:
    gang, other = small.parent / "gang.rdl", small.parent / "other.rdl"
    result = rayon("plan", "--cluster", small, "--json", "--no-explain", gang, other)
    assert result.exit_code == 0, result.stderr
    reason = json.loads(result.stdout)["decisions"][1]["reason"]
    assert reason["code"] == "capacity" and "earliest_deadline" not in reason


def test_a_long_plan_reports_progress_on_stderr_when_it_is_not_a_terminal(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rdl.progress.PERIOD", 0.0)  # a line after every reservation
    path = tmp_path / "many.rdl"
    path.write_text("\n".join(f"reservation r{i} user=u deadline=+{1 + i % 24}h {{\n"
                              "  atom(b={memory: 1GiB, vcores: 1}, h=4, l=10m, w=1h)\n}\n" for i in range(101)))
    result = rayon("plan", "--cluster", CLUSTER, "--json", path)
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("planning: ")]
    assert re.fullmatch(r"planning: 1 of 101 reservations \([\d,]+/s, about \S+ left\)", lines[0]), lines[0]
    assert re.fullmatch(r"planning: 101 of 101 reservations \([\d,]+/s\)", lines[-1]), lines[-1]
    assert len(json.loads(result.stdout)["decisions"]) == 101

# --- end to end: the installed command as a real process -----------------------------------------------------------

def test_process_help_and_version() -> None:
    result = rayon_process("--help")
    assert result.returncode == 0, result.stderr
    assert "plan" in result.stdout and "check" in result.stdout
    version = rayon_process("--version")
    assert version.returncode == 0 and re.search(r"\d+\.\d+", version.stdout)


def test_process_check_examples() -> None:
    result = rayon_process("check", "examples/")
    assert result.returncode == 0, result.stderr
    for name in example_names():
        assert name in result.stdout


def test_process_plan_examples_json() -> None:
    result = rayon_process("plan", "--cluster", "examples/cluster.yaml", "--json", "examples/")
    assert result.returncode == 0, result.stderr
    assert_plan_ok(json.loads(result.stdout), [EXAMPLES])


def test_process_plan_many_reservations_keeps_stdout_pure_json(tmp_path: Path) -> None:
    path = tmp_path / "many.rdl"
    path.write_text("\n".join(f"reservation r{i} deadline=+{2 + i % 12}h {{\n"
                              "  atom(b={memory: 2GiB, vcores: 1}, g=2, h=8, l=15m, w=2h)\n}\n" for i in range(110)))
    result = rayon_process("plan", "--cluster", "examples/cluster.yaml", "--json", path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert len(document["decisions"]) == 110
    assert_plan_ok(document, [path])


def test_process_plan_bad_input(small: Path) -> None:
    result = rayon_process("plan", "--cluster", small, "--json", small.parent / "bad.rdl")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "nothing was planned" in result.stderr
    assert re.search(r"bad\.rdl:2:\d+: ", result.stderr)


# --- relative times ------------------------------------------------------------------------------------------------

def time_options() -> list[tuple[str, click.Option]]:
    """Every option of every `rayon` command that takes a time."""
    context = click.Context(main)
    commands = {name: main.get_command(context, name) for name in main.list_commands(context)}  # the group is lazy
    return [(name, param) for name, command in commands.items() if command is not None for param in command.params
            if isinstance(param, click.Option) and isinstance(param.type, TimeParam)]


def test_every_time_option_takes_a_relative_time_and_says_so() -> None:
    found = {f"{name} {param.opts[0]}" for name, param in time_options()}
    assert {"advance --to", "capacity --at", "plan --now", "submit --now", "update --now", "check --now",
            "follow --from", "follow --to", "plot --from", "plot --to", "list --from", "list --to"} <= found
    for name, param in time_options():
        assert param.help is not None and "+2h" in param.help, f"{name} {param.opts[0]}"


def test_time_param_reads_absolute_and_relative_times() -> None:
    start = units.parse_instant("2026-11-23T00:00:00Z")
    assert TimeParam().convert("+90m", None, None) == RelativeTime(5400.0, "+90m")
    assert resolve_time(TimeParam().convert("+90m", None, None), start) == start + timedelta(minutes=90)
    assert resolve_time(TimeParam().convert("2026-11-23T06:00:00Z", None, None), start) == start + timedelta(hours=6)
    assert resolve_time(None, start) is None
    with pytest.raises(click.BadParameter, match="unknown duration unit"):
        TimeParam().convert("+5x", None, None)


def test_plan_now_may_be_relative_to_the_cluster_start() -> None:
    relative = plan_json(EXAMPLES / "etl_nightly.rdl", now="+30m")
    absolute = plan_json(EXAMPLES / "etl_nightly.rdl", now="2026-11-23T00:30:00Z")
    assert relative == absolute


def test_check_now_relative_needs_a_cluster() -> None:
    result = rayon("check", "--now", "+2h", EXAMPLES / "etl_nightly.rdl")
    assert result.exit_code == 2 and "counts from the cluster's start" in result.stderr and "--cluster" in result.stderr
    assert rayon("check", "--now", "+2h", "--cluster", CLUSTER, EXAMPLES / "etl_nightly.rdl").exit_code == 0


# --- exit statuses of plan and submit; errors as JSON -------------------------------------------------------------

def test_plan_fail_on_reject_exits_3_after_printing_every_decision() -> None:
    paths = [EXAMPLES / "etl_nightly.rdl", EXAMPLES / "urgent_retrain.rdl"]
    ran = rayon("plan", "--cluster", CLUSTER, "--json", *paths)
    assert ran.exit_code == 0  # the contract: planning ran
    failed = rayon("plan", "--cluster", CLUSTER, "--json", "--fail-on-reject", *paths)
    assert failed.exit_code == 3 and "urgent_retrain" in failed.stderr and "--fail-on-reject" in failed.stderr
    assert json.loads(failed.stdout) == json.loads(ran.stdout)  # still exactly one document: the plan's
    assert rayon("plan", "--cluster", CLUSTER, "--fail-on-reject", EXAMPLES / "etl_nightly.rdl").exit_code == 0


def test_a_name_repeated_across_files_is_reported_where_it_is_repeated(tmp_path: Path) -> None:
    atom = "atom(b={memory: 2GiB, vcores: 1}, w=30m)"
    (tmp_path / "a.rdl").write_text(f"reservation a {{ {atom} }}\n")
    (tmp_path / "b.rdl").write_text(f"# second\nreservation b {{ {atom} }}\nreservation a {{ {atom} }}\n")
    result = rayon("plan", "--cluster", CLUSTER, tmp_path / "a.rdl", tmp_path / "b.rdl")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"{tmp_path / 'b.rdl'}:3:1: reservation `a` is defined again (first at {tmp_path / 'a.rdl'}:1:1)" \
        in result.stderr
    assert "nothing was planned" in result.stderr


def test_plan_of_no_reservation_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty.rdl"
    empty.write_text("\n")
    result = rayon("plan", "--cluster", CLUSTER, empty)
    assert result.exit_code == 2 and f"no reservations found in {empty}" in result.stderr
    assert result.stdout == ""


def test_json_errors_are_one_document_on_stdout(small: Path, tmp_path: Path) -> None:
    bad = small.parent / "bad.rdl"
    result = rayon("fmt", "--json", bad)
    assert result.exit_code == 2 and "bad.rdl:2:" in result.stderr  # people still read it on stderr
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "input" and error["exit_code"] == 2 and error["errors"]
    assert error["errors"][0]["file"] == str(bad) and error["errors"][0]["line"] == 2
    assert set(error) >= {"code", "message", "hint", "exit_code", "errors"}
    missing = rayon("list", "--json", "--state", tmp_path / "none.db")
    assert missing.exit_code == 2 and missing.stderr.startswith("error: no plan store at")
    document = json.loads(missing.stdout)["error"]
    assert document["code"] == "missing" and document["errors"] == [] and "rayon init" in document["message"]
    assert rayon("list", "--state", tmp_path / "none.db").stdout == ""  # without --json, nothing on stdout


def test_plan_json_keeps_stdout_empty_on_bad_input(small: Path) -> None:
    result = rayon("plan", "--cluster", CLUSTER, "--json", small.parent / "bad.rdl")
    assert result.exit_code == 2 and result.stdout == ""  # the contract (decisions.md): no error document


def test_check_json_stays_one_document_when_a_file_is_bad(small: Path) -> None:
    result = rayon("check", "--json", small.parent / "bad.rdl")
    assert result.exit_code == 2 and "error" not in json.loads(result.stdout)


@pytest.mark.parametrize(("args", "hint"), [
    (["sumbit", "x.rdl"], "did you mean `submit`?"),
    (["simulate", "--agent", "gree_l", "examples/scenarios/tiny.yaml"], "did you mean `gree-l`?"),
])
def test_a_near_miss_of_a_name_gets_a_suggestion(args: list[str], hint: str) -> None:
    result = rayon(*args)
    assert result.exit_code == 2 and hint in result.stderr, result.stderr


# -- issue #30, item 6: silent mistakes said out loud --------------------------------------------------------------

CLUSTER_HEAD = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\n"


@pytest.mark.parametrize(("body", "place", "said"), [
    ("nodes: [{name: n, count: 64, memory: 32GiB, cpus: 32}]\n", ":4:45:",
     "node group `n` names `cpus`: rayon calls this resource `vcores` (did you mean `vcores`?)"),
    ("capacity: {memory: 4TiB, vcores: 819.2}\n", ":4:34:",
     "`vcores` in `capacity` must be a whole number (it is counted in units), got 819.2 (such as `vcores: 819`)"),
    ("nodes: [{name: n, count: 4, memory: 32GiB, vcores: 1.5}]\n", ":4:52:", "`vcores` in node group `n` must be"),
    ("capacity: {memory: 4TiB, vcores: 8, gpu: 0.5}\n", ":4:42:", "got 0.5 (such as `gpu: 1`)"),
    ("nodes: [{name: n, cont: 4, memory: 32GiB, vcores: 8}]\n", ":4:19:", "did you mean `count`?"),
    ("capacity: {memory: 4TiB, vcores: 8}\nchanges:\n  - {at: +1h, capacity: {vcores: 2.5}}\n", ":6:34:",
     "`vcores` in the changed capacity must be a whole number"),
    ("capacity: {mem: 4TiB, vcores: 8}\n", ":4:12:", "did you mean `memory`?"),
    ("capacity: {memroy: 4096, vcores: 8}\n", ":4:12:", "`memroy`, which looks like `memory` misspelt"),
    ("capacity: {memory: 4TiB, vcore: 8, gpu: 2}\n", ":4:26:", "did you mean `vcores`?"),
])
def test_a_cluster_file_s_likely_mistakes_are_errors(tmp_path: Path, body: str, place: str, said: str) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER_HEAD + body)
    result = CliRunner().invoke(main, ["check", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2, result.output
    assert f"c.yaml{place}" in result.stderr and said in result.stderr, result.stderr


def test_fractional_memory_and_whole_counts_stay_valid(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER_HEAD + "capacity: {memory: 1677721.6MiB, vcores: 819, gpu: 8}\n")
    assert CliRunner().invoke(main, ["check", str(tmp_path / "c.yaml")]).exit_code == 0


def test_a_scenario_given_to_check_and_a_cluster_given_to_simulate_are_named_for_what_they_are() -> None:
    scenario = EXAMPLES / "scenarios" / "tiny.yaml"
    checked = CliRunner().invoke(main, ["check", str(scenario)])
    assert checked.exit_code == 2
    assert checked.stderr.count(str(scenario)) == 2  # one error (and its hint), not one per scenario key
    assert "this is a simulation scenario (it has `workload`), not a cluster file" in checked.stderr
    assert f"`rayon simulate {scenario}` runs it" in checked.stderr
    simulated = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "cluster.yaml")])
    assert simulated.exit_code == 2
    assert simulated.stderr.startswith(f"{EXAMPLES / 'cluster.yaml'}: this is a cluster file")
    assert "unknown key" not in simulated.stderr


@pytest.mark.parametrize("after", ["", "reservation s { atom(b={vcores: 1}, w=1h) }\n"])
def test_a_missing_closing_brace_is_named_with_the_brace_it_closes(tmp_path: Path, after: str) -> None:
    (tmp_path / "r.rdl").write_text("reservation r {\n  atom(b={memory: 1GiB, vcores: 1}, w=1h)\n" + after)
    result = CliRunner().invoke(main, ["check", str(tmp_path / "r.rdl")])
    assert result.exit_code == 2
    assert "the `{` at line 1, column 15 is never closed: end the reservation with `}`" in result.stderr
    assert "all(...)" not in result.stderr


# -- issue #30, item 7: output that reads right ---------------------------------------------------------------------


def test_sla_attainment_says_it_counts_only_the_jobs_not_still_open() -> None:
    from types import SimpleNamespace

    from follower.cli.simulate import _summary_rows
    from follower.sim.engine import simulate
    from follower.sim.scenario import load_scenario

    result = simulate(load_scenario(EXAMPLES / "scenarios" / "tiny.yaml"))
    labels = [row[0].strip() for row in _summary_rows(result)]
    assert "SLA attainment" in labels  # every job of the tiny scenario is decided by its end
    production = {**result.summary["production"], "jobs": 168, "open": 55}
    opened = SimpleNamespace(summary={**result.summary, "production": production}, simulated_s=result.simulated_s,
                             wall_s=result.wall_s, events=result.events)
    assert "SLA attainment, of the 113 not still open" in [row[0].strip() for row in _summary_rows(opened)]


def test_a_progress_bar_on_a_terminal_names_its_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rdl.progress import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    with progress(100, "simulating", "simulated seconds", stream=out) as update:
        update(50)
    assert "simulating (simulated seconds)" in out.getvalue()
