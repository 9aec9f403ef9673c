"""The store commands: init, submit (and dry run), list, show, cancel, log — and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any as AnyType

import pytest
from click.testing import CliRunner

from follower.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def rayon(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = str(tmp_path / "plan.db")

    def run(*args: str) -> object:
        return CliRunner().invoke(main, [*args, "--state", state], prog_name="rayon")

    return run


def test_init_submit_list_show_cancel_log(rayon) -> None:  # type: ignore[no-untyped-def]
    assert rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml")).exit_code == 0
    result = rayon("submit", "--json", str(EXAMPLES / "etl_nightly.rdl"), str(EXAMPLES / "urgent_retrain.rdl"))
    assert result.exit_code == 0, result.stderr
    decisions = {d["reservation"]: d for d in json.loads(result.stdout)["decisions"]}
    assert decisions["etl_nightly"]["accepted"] and not decisions["urgent_retrain"]["accepted"]
    listed = {r["reservation"]: r["state"] for r in json.loads(rayon("list", "--json").stdout)["items"]}
    assert listed == {"etl_nightly": "accepted", "urgent_retrain": "rejected"}
    assert [r["reservation"] for r in json.loads(rayon("list", "--json", "--status", "rejected").stdout)["items"]] == [
        "urgent_retrain"]
    shown = json.loads(rayon("show", "etl_nightly", "--json").stdout)
    assert shown["allocations"] and "reservation etl_nightly" in shown["rdl"]
    assert rayon("cancel", "etl_nightly").exit_code == 0
    assert json.loads(rayon("show", "etl_nightly", "--json").stdout)["state"] == "cancelled"
    actions = [e["action"] for e in json.loads(rayon("log", "--json").stdout)["items"]]
    assert actions == ["submit", "submit", "cancel"]


def test_dry_run_commits_nothing(rayon) -> None:  # type: ignore[no-untyped-def]
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    result = rayon("submit", "--dry-run", "--json", str(EXAMPLES / "mpi_solver.rdl"))
    assert json.loads(result.stdout)["decisions"][0]["accepted"]
    assert json.loads(rayon("list", "--json").stdout)["items"] == []
    assert json.loads(rayon("log", "--json").stdout)["items"] == []


def test_bad_input_and_unknown_names_exit_2_and_change_nothing(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert rayon("list").exit_code == 2  # not initialised yet: says how to initialise
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    bad = tmp_path / "bad.rdl"
    bad.write_text("reservation r { atom(b={memory: 1GiB, vcores: 1}, w=30) }\n")
    result = rayon("submit", str(bad))
    assert result.exit_code == 2 and "bad.rdl:1:" in result.stderr and "nothing was submitted" in result.stderr
    assert rayon("show", "nope").exit_code == 2
    assert rayon("cancel", "nope").exit_code == 2
    assert rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml")).exit_code == 2  # already initialised
    assert json.loads(rayon("log", "--json").stdout)["items"] == []


@pytest.mark.parametrize("command", [["list"], ["show", "etl_nightly"], ["log"], ["follow"], ["plot"],
                                     ["submit", str(EXAMPLES / "etl_nightly.rdl")]])
def test_a_missing_store_is_an_error_that_creates_nothing(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "plan.db"
    result = CliRunner().invoke(main, [*command, "--state", str(missing)], prog_name="rayon")
    assert result.exit_code == 2, result.output
    assert (f"no plan store at {missing}; create one with `rayon init --cluster CLUSTER.yaml --state {missing}`"
            in result.stderr)
    assert not missing.parent.exists()


def test_a_failed_init_leaves_no_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("capacity: [\n")
    state = tmp_path / "new" / "plan.db"
    result = CliRunner().invoke(main, ["init", "--cluster", str(bad), "--state", str(state)])
    assert result.exit_code == 2 and "bad.yaml:" in result.stderr
    assert list(tmp_path.iterdir()) == [bad]


def test_a_state_named_like_a_reservation_state_suggests_status(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    listed = CliRunner().invoke(main, ["list", "--state", "accepted"])
    assert listed.exit_code == 2 and "did you mean `--status`?" in listed.stderr
    made = CliRunner().invoke(main, ["init", "--cluster", str(EXAMPLES / "cluster.yaml"), "--state", "rejected"])
    assert made.exit_code == 2 and "did you mean `--status`?" in made.stderr
    assert list(tmp_path.iterdir()) == []


def test_init_twice_names_the_force_flag(rayon) -> None:  # type: ignore[no-untyped-def]
    assert rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml")).exit_code == 0
    again = rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    assert again.exit_code == 2 and "`rayon init --force`" in again.stderr


def test_store_times_may_be_relative_to_the_plan_clock(rayon) -> None:  # type: ignore[no-untyped-def]
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    assert rayon("advance", "--to", "+1h").exit_code == 0  # the clock: 01:00
    submitted = rayon("submit", "--now", "+30m", "--json", str(EXAMPLES / "etl_nightly.rdl"))
    assert submitted.exit_code == 0, submitted.stderr
    listed = json.loads(rayon("list", "--json").stdout)["items"]
    assert listed[0]["submitted"] == "2026-11-23T01:30:00Z"
    assert json.loads(rayon("list", "--json", "--from", "+1d").stdout)["items"] == []
    assert len(json.loads(rayon("list", "--json", "--from", "+0s", "--to", "+1d").stdout)["items"]) == 1
    changed = json.loads(rayon("capacity", "--at", "+2h", "--set", "{vcores: 1000}", "--dry-run", "--json").stdout)
    assert changed["change"]["at"] == "2026-11-23T03:00:00Z"
    moved = json.loads(rayon("advance", "--to", "+1h", "--json").stdout)
    assert moved["to"] == "2026-11-23T02:00:00Z"


def test_plot_window_may_be_relative_to_the_plan_clock(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    out = tmp_path / "plan.svg"
    assert rayon("plot", "--from", "+1h", "--to", "+2h", "--out", str(out)).exit_code == 0
    assert "2026-11-23 01:00" in out.read_text()
    far = rayon("plot", "--from", "+8d", "--out", str(out))
    assert far.exit_code == 2 and "when the plan has ended" in far.stderr


def test_submit_fail_on_reject_and_no_reservation(rayon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    paths = [str(EXAMPLES / "etl_nightly.rdl"), str(EXAMPLES / "urgent_retrain.rdl")]
    result = rayon("submit", "--fail-on-reject", "--dry-run", *paths)
    assert result.exit_code == 3 and "1 of 2 reservations rejected (urgent_retrain)" in result.stderr
    assert rayon("submit", "--dry-run", *paths).exit_code == 0
    empty = tmp_path / "empty.rdl"
    empty.write_text("")
    nothing = rayon("submit", "--json", str(empty))
    assert nothing.exit_code == 2 and f"no reservations found in {empty}" in nothing.stderr
    assert json.loads(nothing.stdout)["error"]["message"] == f"no reservations found in {empty}"
    assert json.loads(nothing.stdout)["error"]["code"] == "empty"


def test_list_shows_queue_and_the_reserved_span_as_full_dates(rayon) -> None:  # type: ignore[no-untyped-def]
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    rayon("submit", str(EXAMPLES / "etl_nightly.rdl"), str(EXAMPLES / "urgent_retrain.rdl"))
    table = rayon("list").stdout.splitlines()
    assert table[0].split() == ["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "REASON"]
    assert max(len(line) for line in table) <= 100  # the default columns fit 100 characters
    wide = rayon("list", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "REASON", "AGENT",
                               "SUBMITTED", "ALLOCATIONS", "VALUE", "PRIORITY"]
    etl = next(line.split() for line in table if line.startswith("etl_nightly"))
    shown = json.loads(rayon("show", "etl_nightly", "--json").stdout)
    assert etl[3] == shown["queue"] and etl[4] == shown["start"] and etl[5] == shown["end"]
    assert shown["start"].startswith("2026-11-23T") and shown["end"].endswith("Z")
    assert shown["start"] == min(a["start"] for a in shown["allocations"])
    assert shown["end"] == max(a["end"] for a in shown["allocations"])
    rejected = next(line.split() for line in table if line.startswith("urgent_retrain"))
    assert rejected[4:6] == ["-", "-"]
    helped = " ".join(rayon("list", "--help").stdout.split())  # as one line, whatever the wrapping
    assert all(state in helped for state in ("accepted (", "rejected (", "cancelled (", "expired (", "dropped ("))


def test_update_usage_and_text_both_say_file(rayon) -> None:  # type: ignore[no-untyped-def]
    helped = rayon("update", "--help").stdout
    assert "rayon update [OPTIONS] NAME FILE" in helped and "the version in FILE" in helped


def test_version_has_a_short_form() -> None:
    long = CliRunner().invoke(main, ["--version"])
    short = CliRunner().invoke(main, ["-V"])
    assert short.exit_code == 0 and short.stdout == long.stdout and "version" in short.stdout


def test_replan_s_time_limit_covers_the_whole_command(rayon, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore
    """The solver gets `REPLAN_SOLVE_SHARE` of `--time-limit`, and re-admitting stops at the limit itself (issue #30:
    `--time-limit 10` took 25 s in all); what it did not try is said."""
    from planner.store.facade import Store
    from planner.store.lifecycle import REPLAN_SOLVE_SHARE

    asked: dict[str, AnyType] = {}
    real_replan, real_readmit = Store.replan, Store.readmit

    def replan(self: Store, **options: AnyType) -> AnyType:
        asked["solve"] = options["time_limit"]
        return real_replan(self, **options)

    def readmit(self: Store, actor: str | None = None, until: float | None = None,
                skipped: list[str] | None = None) -> AnyType:
        asked["until"] = until
        return real_readmit(self, actor, 0.0, skipped)  # as if the limit were up already

    monkeypatch.setattr(Store, "replan", replan)
    monkeypatch.setattr(Store, "readmit", readmit)
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    rayon("submit", str(EXAMPLES / "etl_nightly.rdl"), str(EXAMPLES / "urgent_retrain.rdl"))
    started = time.perf_counter()
    result = rayon("replan", "--time-limit", "4")
    assert result.exit_code == 0, result.stderr
    assert asked["solve"] == pytest.approx(4 * REPLAN_SOLVE_SHARE)
    assert started <= asked["until"] - 4 <= time.perf_counter()  # the limit counts from the command's start
    assert "1 rejected for capacity not tried again: the time limit was up" in result.stdout


def test_an_interrupted_submit_says_what_was_done_exits_130_and_resumes(  # type: ignore[no-untyped-def]
        rayon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after two of three decisions (issue #30: "Aborted!", exit 1, with 398 of 400 committed): the two are
    committed and shown, exit 130, and `--skip-existing` submits the third."""
    from planner.store.facade import Store

    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    batch = tmp_path / "batch.rdl"
    batch.write_text("".join(f"reservation {name} {{ atom(b={{vcores: 1}}, w=10m) }}\n" for name in "abc"))
    real, calls = Store.submit, []

    def submit(self: Store, *args: AnyType, **options: AnyType) -> AnyType:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **options)

    monkeypatch.setattr(Store, "submit", submit)
    stopped = rayon("submit", str(batch))
    assert stopped.exit_code == 130, stopped.output
    assert "interrupted: 2 of 3 submitted" in stopped.stderr and "--skip-existing" in stopped.stderr
    assert "2 of 2 accepted" in stopped.stdout and "Aborted!" not in stopped.output
    monkeypatch.undo()
    assert {r["reservation"] for r in json.loads(rayon("list", "--json").stdout)["items"]} == {"a", "b"}
    resumed = rayon("submit", "--skip-existing", "--json", str(batch))
    assert resumed.exit_code == 0, resumed.output
    assert [d["reservation"] for d in json.loads(resumed.stdout)["decisions"]] == ["c"]
    assert "skipped 2 the store holds already: a, b" in resumed.stderr


def test_a_decision_committed_as_ctrl_c_came_is_counted(  # type: ignore[no-untyped-def]
        rayon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The count comes from the store: Ctrl-C after the last commit, before its answer, still counts it."""
    from planner.store.facade import Store

    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    batch = tmp_path / "batch.rdl"
    batch.write_text("".join(f"reservation {name} {{ atom(b={{vcores: 1}}, w=10m) }}\n" for name in "ab"))
    real = Store.submit

    def submit(self: Store, reservation: AnyType, *args: AnyType, **options: AnyType) -> AnyType:
        decision = real(self, reservation, *args, **options)
        if reservation.name == "b":
            raise KeyboardInterrupt
        return decision

    monkeypatch.setattr(Store, "submit", submit)
    stopped = rayon("submit", str(batch))
    assert stopped.exit_code == 130 and "interrupted: 2 of 2 submitted" in stopped.stderr, stopped.output


@pytest.mark.parametrize("what", ["folder", "text file"])
def test_a_state_that_is_no_store_is_bad_input(tmp_path: Path, what: str) -> None:
    """`--state DIR` or a file that is no database: exit 2 with what to give instead, not an internal failure."""
    target = tmp_path / "here"
    if what == "folder":
        target.mkdir()
    else:
        target.write_text("not a database\n")
    for args in (["list"], ["init", "--cluster", str(EXAMPLES / "cluster.yaml")]):
        result = CliRunner().invoke(main, [*args, "--state", str(target)], prog_name="rayon")
        assert result.exit_code == 2 and "not a plan store" in result.stderr, (args, result.output)


@pytest.mark.parametrize("command", [["plan", "--cluster", str(EXAMPLES / "cluster.yaml")], ["submit"]])
def test_plan_and_submit_warn_of_a_bare_memory_number_as_check_does(  # type: ignore[no-untyped-def]
        rayon, tmp_path: Path, command: list[str]) -> None:
    """`memory: 2` is 2 MiB: `rayon check` warned, `plan` and `submit` said nothing (issue #30)."""
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    small = tmp_path / "small.rdl"
    small.write_text("reservation small { atom(b={memory: 2, vcores: 1}, w=1h) }\n")
    if command[0] == "plan":  # no store: no --state
        result = CliRunner().invoke(main, [*command, str(small)], prog_name="rayon")
    else:
        result = rayon(*command, str(small))
    assert result.exit_code == 0, result.output
    assert "`memory: 2` is 2 MiB; did you mean 2GiB?" in result.stderr


def test_advance_warns_when_another_process_keeps_the_clock(rayon, tmp_path: Path) -> None:  # type: ignore
    """As when a wall-clock server keeps the plan (issue #30: accepted without a word, the server's lag then
    negative); the move is still made."""
    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    lock = tmp_path / "plan.db.keeper"  # what a server holds (planner/store/keeper.py)
    script = "import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); " \
             "time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", script, str(lock)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"\n"
        moved = rayon("advance", "--to", "+1h")
        assert moved.exit_code == 0, moved.output
        assert "warning: another process keeps this plan's clock" in moved.stderr
    finally:
        holder.kill()
        holder.wait()
    alone = rayon("advance", "--to", "+1h")
    assert alone.exit_code == 0 and "warning" not in alone.stderr
