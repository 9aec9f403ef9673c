"""Crash safety of the plan store: a process killed (SIGKILL) at any point of a submit, update, cancel,
capacity change, clock advance or re-planning leaves a consistent store.

A subprocess works on a SQLite store under tmp_path and is killed at seeded random moments, several
rounds on the same file. The subprocess is tests/planner/store/crash_worker.py (a loop of store operations
with a journal of what it began and what it was answered) or, in one test, the `rayon` commands
themselves. After each kill the store is reopened and must hold together:

- it opens (SQLite's integrity and foreign-key checks pass), and the next round writes to it;
- every accepted reservation holds its leases, the independent checker (planner/core/check.py) finds
  nothing wrong with the stored reservations and their leases, and the plan rebuilt by `load_plan`
  is exactly the use summed from the records' own leases; no lease row belongs to a reservation
  that is not stored, and rejected reservations hold none;
- the decision log replayed from the start gives every reservation its stored state and leases,
  and every multi-row decision (capacity change, advance, re-planning) is logged whole;
- every answer the worker got is in the log as answered (an answered decision is durable), and the
  operation the kill interrupted is there entirely or not at all;
- a Store kept open in this process across the kills catches up to the same plan as a fresh one.

Two ways of killing the worker: from outside, 0.05-1.5 s after it opened the store; and from inside,
at a random *kill point* of one kind of operation (before or after any SQL statement of its write
transaction, before its COMMIT, or after the store returned but before the answer was journalled),
which lands inside the writes every time and replays exactly on the copy of the store kept from
before the round. `test_the_checks_see_a_torn_store` shows the checks catch half-written decisions.

Seeds: RAYON_CRASH_SEED=N replaces the base seed (each test adds its own offset); every failure
message names the seed, the round, what was interrupted, and how to run it again. The soaks are
`slow`: `pytest -m slow tests/planner/store/test_crash.py`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any as AnyType

import numpy as np
import pytest

from planner.store.facade import LogEntry, Store
from tests.planner.store import crash_worker
from tests.planner.store.consistency import GROUPED, allocations_json, store_problems

ROOT = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("RAYON_CRASH_SEED", "20261123"))
POINT_MOST = 60  # a self-kill lands at one of the first POINT_MOST kill points of the chosen kind of operation
POINT_OPS = 400  # a self-killing worker stops after this many operations (it dies long before)
KINDS = ("submit", "update", "capacity", "replan", "cancel", "advance")  # what self-kills land in, in turn
FINAL = 15  # operations run unkilled after the last kill: the store still takes writes
FILL = 30  # operations run (in this process, unkilled) before the first kill, so the store is not empty
WORKER_TIMEOUT = 120.0


# -- running and killing ------------------------------------------------------------------------------------


@dataclass
class Kill:
    """One round: how the worker was killed, and what it was doing."""

    round: int
    how: str  # "killed after 0.83s", "killed at point 41 of its capacity operations", "SIGKILL due at 0.61s"
    returncode: int | None = None
    operation: str | None = None  # the operation the kill interrupted (None: between operations)
    committed: bool | None = None  # whether the interrupted operation's decision reached the log
    point: str | None = None  # where a self-kill landed: before/after a statement, at COMMIT, after returning
    replay: list[str] | None = None  # the command line to repeat the round (a self-kill: on a copy of the store)

    def describe(self) -> str:
        where = self.operation or "between operations (reading the plan)"
        if self.committed is not None:
            where += " (committed)" if self.committed else " (not committed)"
        if self.point:
            where += f" at {self.point}"
        return f"round {self.round}, {self.how}: {where}"


@dataclass
class Crashes:
    """A store, the worker's journal, and the kills so far."""

    seed: int
    path: Path
    journal: Path
    kills: list[Kill] = field(default_factory=list)
    watcher: Store | None = None  # a store kept open in this process across every kill, reading as it goes

    def context(self, kill: Kill | None = None) -> str:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        command = f"RAYON_CRASH_SEED={SEED} {Path(sys.executable).parent}/pytest -s -m '' '{test}'"
        where = f"; {kill.describe()}" if kill else ""
        replay = f"; the round's command (run from {ROOT}): {' '.join(kill.replay)}" if kill and kill.replay else ""
        return f"seed {self.seed}{where}; store {self.path}; journal {self.journal}; reproduce: {command}{replay}"


def init_store(tmp_path: Path, seed: int) -> Crashes:
    path = tmp_path / "plan.db"
    with Store.open(path) as store:
        store.init(crash_worker.CLUSTER, "crash.yaml")
    return Crashes(seed, path, tmp_path / "journal.jsonl", watcher=Store.open(path))


def fill(crashes: Crashes, operations: int = FILL, tag: str = "fill", journal: bool = True) -> None:
    """Operations the worker would do, in this process and unkilled (to start with a store that is not empty).

    `journal`: check the log against the journal too (not when `rayon` commands, which journal nothing, wrote).
    """
    with Store.open(crashes.path) as store, crashes.journal.open("a") as lines:
        crash_worker.Worker(store, lines, crashes.seed, tag).run(operations)
    entries = read_journal(crashes.journal)
    problems = store_problems(crashes.path) + watcher_problems(crashes)
    if journal:
        problems += journal_problems(crashes.path, entries, unanswered(entries))
    assert problems == [], f"{crashes.context()}: the store is inconsistent after {operations} unkilled " \
        f"operations ({tag}):\n" + "\n".join(problems)


def worker_command(crashes: Crashes, tag: str, kill_at: int | None = None, kill_in: str | None = None,
                   replan: bool = True, replay: bool = False) -> list[str]:
    """The worker's command line; `replay`: on the copy of the store kept from before the round, own journal."""
    state, journal = crashes.path, crashes.journal
    if replay:
        state, journal = crashes.path.with_name(f"before-{tag}.db"), crashes.path.with_name(f"replay-{tag}.jsonl")
    command = [sys.executable, "-m", "tests.planner.store.crash_worker", str(state), str(journal), str(crashes.seed),
               tag]
    if not replan:
        command.append("--no-replan")
    if kill_at is not None:
        command += ["--kill-at", str(kill_at), "--ops", str(POINT_OPS)]
    if kill_in is not None:
        command += ["--kill-in", kill_in]
    return command


def start_worker(crashes: Crashes, tag: str, kill_at: int | None = None, kill_in: str | None = None,
                 replan: bool = True) -> subprocess.Popen[str]:
    """The worker for round `tag`; a copy of the store as it was is kept next to it, to replay the round on."""
    for suffix in ("", "-wal"):
        source = crashes.path.with_name(crashes.path.name + suffix)
        if source.exists():
            shutil.copyfile(source, crashes.path.with_name(f"before-{tag}.db{suffix}"))
    stderr = (crashes.path.parent / f"{tag}.stderr").open("w")
    command = worker_command(crashes, tag, kill_at, kill_in, replan=replan)
    worker = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)
    stderr.close()
    return worker


def await_ready(crashes: Crashes, worker: subprocess.Popen[str], tag: str) -> None:
    assert worker.stdout is not None
    line = worker.stdout.readline()
    if line != "ready\n":
        worker.kill()
        worker.wait()
        stderr = (crashes.path.parent / f"{tag}.stderr").read_text()
        pytest.fail(f"{crashes.context()}: the worker of {tag} did not open the store: {line!r}\n{stderr}")


def finish(crashes: Crashes, worker: subprocess.Popen[str], kill: Kill, tag: str) -> None:
    """Wait for the killed worker; a worker that died any other way is a failure of its own."""
    kill.returncode = worker.wait(timeout=WORKER_TIMEOUT)
    if kill.returncode != -signal.SIGKILL:
        stderr = (crashes.path.parent / f"{tag}.stderr").read_text()
        why = "finished without reaching its kill point" if kill.returncode == 0 else \
            f"exited with {kill.returncode}, not by SIGKILL"
        pytest.fail(f"{crashes.context(kill)}: the worker {why}\n{stderr}")


def kill_after(crashes: Crashes, round_: int, rng: random.Random, replan: bool, low: float = 0.05,
               high: float = 1.5) -> Kill:
    """A worker killed from outside, `low`-`high` seconds after it opened the store.

    A re-planning takes longer than most kills wait (model building, then up to a second of solving), so a
    worker that may re-plan is nearly always killed in its first one: only some rounds may (`replan`).
    """
    tag, delay = f"r{round_}", rng.uniform(low, high)
    kill = Kill(round_, f"killed after {delay:.2f}s")
    worker = start_worker(crashes, tag, replan=replan)
    await_ready(crashes, worker, tag)
    time.sleep(delay)
    worker.send_signal(signal.SIGKILL)
    finish(crashes, worker, kill, tag)
    return kill


def kill_at_point(crashes: Crashes, round_: int, rng: random.Random, kill_in: str) -> Kill:
    """A worker that kills itself at a random kill point (statement, commit, or return) of a `kill_in` operation."""
    tag, point = f"p{round_}", rng.randint(1, POINT_MOST)
    kill = Kill(round_, f"killed at point {point} of its {kill_in} operations")
    kill.replay = worker_command(crashes, tag, point, kill_in, replay=True)
    worker = start_worker(crashes, tag, point, kill_in)
    await_ready(crashes, worker, tag)
    finish(crashes, worker, kill, tag)
    return kill


# -- the journal ------------------------------------------------------------------------------------------------


def read_journal(path: Path) -> list[dict[str, AnyType]]:
    """The worker's journal; a last line cut short by the kill is left out (its operation has no answer)."""
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    entries = []
    for number, line in enumerate(lines):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            if number != len(lines) - 1:
                raise
    return entries


def unanswered(entries: Sequence[dict[str, AnyType]]) -> set[str]:
    """The operations (actors) begun and never answered: every round's interrupted one."""
    return {e["begin"] for e in entries if "begin" in e} - {e.get("end") or e.get("error") for e in entries}


def interrupted(entries: Sequence[dict[str, AnyType]], tag: str) -> tuple[dict[str, AnyType] | None, str | None]:
    """The operation of round `tag` begun but never answered, and the kill point the worker journalled."""
    answered = {e.get("end") or e.get("error") for e in entries}
    begun = [e for e in entries if str(e.get("begin", "")).startswith(f"{tag}-") and e["begin"] not in answered]
    assert len(begun) <= 1, f"round {tag} left {len(begun)} operations unanswered"
    points = [e for e in entries if "kill" in e and e["tag"] == tag]
    point = None
    if points:
        last = points[-1]
        point = f"{last['where']} `{last['statement']}`"
    return (begun[0] if begun else None), point


# -- consistency --------------------------------------------------------------------------------------------------


def watcher_problems(crashes: Crashes) -> list[str]:
    """The store kept open across the kills catches up to exactly the plan a fresh one rebuilds from the rows."""
    if crashes.watcher is None:
        return []
    kept = crashes.watcher.load_plan()
    with Store.open(crashes.path) as fresh:
        rebuilt = fresh.load_plan()
    problems = []
    if kept.accepted.keys() != rebuilt.accepted.keys():
        problems.append(f"the long-open store's plan holds {sorted(kept.accepted.keys() ^ rebuilt.accepted.keys())} "
                        "differently from a fresh one's")
    for name in kept.accepted.keys() & rebuilt.accepted.keys():
        if allocations_json(kept.accepted[name].allocations, kept.clock) != \
                allocations_json(rebuilt.accepted[name].allocations, kept.clock):
            problems.append(f"the long-open store's plan gives `{name}` other leases than a fresh one's")
    if not (np.array_equal(kept.used, rebuilt.used) and np.array_equal(kept.capacity, rebuilt.capacity)
            and kept.now == rebuilt.now):
        problems.append("the long-open store's plan (use, capacity or clock) differs from a fresh one's")
    return problems


def journal_problems(path: Path, entries: Sequence[dict[str, AnyType]], interrupted_actors: set[str]) -> list[str]:
    """Every answer the worker got is logged as answered; interrupted operations are logged whole or not at all."""
    with Store.open(path) as store:
        log = store.log()
    problems: list[str] = []
    runs: list[tuple[str | None, list[LogEntry]]] = []
    for entry in log:
        if runs and runs[-1][0] == entry.actor:
            runs[-1][1].append(entry)
        else:
            runs.append((entry.actor, [entry]))
    seen = Counter(actor for actor, _ in runs)
    problems += [f"the log rows of {actor} are not contiguous" for actor, count in seen.items() if count > 1]
    logged = {actor: rows for actor, rows in runs}
    begun = [e for e in entries if "begin" in e]
    known = {e["begin"] for e in begun}
    problems += [f"log rows by {actor}, which the worker never began" for actor in logged if actor not in known]
    order = [e["begin"] for e in begun if e["begin"] in logged]
    if order != [actor for actor, _ in runs if actor in known]:
        problems.append("the log's operations are not in the order the worker did them")
    for answer in entries:
        if "error" in answer:
            if answer["error"] in logged:
                problems.append(f"{answer['error']} failed ({answer['code']}) yet wrote to the log")
            continue
        if "end" not in answer:
            continue
        actor, op = answer["end"], answer["op"]
        rows = logged.get(actor)
        if rows is None:
            problems.append(f"{actor}: the worker was answered ({op}) but the log has no row of it")
            continue
        named = [(r.action, r.reservation, r.accepted) for r in rows if r.reservation is not None]
        if op in ("submit", "resubmit", "update", "cancel"):
            expected = [(crash_worker.ACTION[op], answer["name"], answer["accepted"])]
            if named != expected or len(rows) != 1:
                got = [(r.action, r.reservation, r.accepted) for r in rows]
                problems.append(f"{actor}: answered {expected}, logged {got}")
            continue
        names = sorted(answer.get("moved", []) + answer.get("dropped", []) + answer.get("expired", []) +
                       answer.get("series", []))
        if sorted(name for _, name, _ in named) != names or rows[-1].reservation is not None or \
                any(r.action != op for r in rows):
            problems.append(f"{actor}: answered {op} touching {names}, logged {named} + summary")
    for begin in begun:
        actor = begin["begin"]
        rows = logged.get(actor)
        if actor not in interrupted_actors or rows is None:
            continue
        op = begin["op"]
        if op in GROUPED:
            whole = rows[-1].reservation is None and all(r.action == op for r in rows)
        else:
            whole = [(r.action, r.reservation) for r in rows] == [(crash_worker.ACTION[op], begin["name"])]
        if not whole:
            problems.append(f"{actor}: the interrupted {op} is logged in part: "
                            f"{[(r.action, r.reservation) for r in rows]}")
    return problems


def check_after(crashes: Crashes, kill: Kill, tag: str) -> None:
    """Reopen the store after a kill and assert it is consistent; note what the kill interrupted."""
    entries = read_journal(crashes.journal)
    begun, kill.point = interrupted(entries, tag)
    problems = store_problems(crashes.path) + journal_problems(crashes.path, entries, unanswered(entries)) + \
        watcher_problems(crashes)
    if begun is not None:
        kill.operation = f"{begun['op']} {begun.get('name', '')}".strip() + f" [{begun['begin']}]"
        with Store.open(crashes.path) as store:
            kill.committed = any(e.actor == begun["begin"] for e in store.log())
    crashes.kills.append(kill)
    assert problems == [], f"{crashes.context(kill)}: the store is inconsistent after the kill:\n" + "\n".join(problems)


def summary(crashes: Crashes) -> str:
    """What was killed where, one line a round, and how many answers the journal holds."""
    entries = read_journal(crashes.journal)
    answered = Counter(e["op"] for e in entries if "end" in e)
    lines = [f"seed {crashes.seed}: {len(crashes.kills)} kills, answered operations {dict(answered)}"]
    lines += [f"  {kill.describe()}" for kill in crashes.kills]
    return "\n".join(lines)


# -- the tests ------------------------------------------------------------------------------------------------------


def crash_rounds(tmp_path: Path, seed: int, rounds: int, modes: Sequence[str]) -> Crashes:
    """`rounds` kills on one store, the modes (`timer`, `point`) in turn; the store is checked after each."""
    rng = random.Random(seed)
    crashes = init_store(tmp_path, seed)
    try:
        fill(crashes)
        points = 0
        for index in range(rounds):
            if modes[index % len(modes)] == "timer":
                kill = kill_after(crashes, index, rng, replan=index % 3 == 2)
                check_after(crashes, kill, f"r{index}")
            else:
                kill = kill_at_point(crashes, index, rng, KINDS[points % len(KINDS)])
                points += 1
                check_after(crashes, kill, f"p{index}")
        fill(crashes, FINAL, "final")  # and the store takes every kind of write after the last kill
    finally:
        assert crashes.watcher is not None
        crashes.watcher.close()
    print(summary(crashes))
    return crashes


def test_sigkill_at_random_moments_leaves_a_consistent_store(tmp_path: Path) -> None:
    crashes = crash_rounds(tmp_path, SEED, rounds=6, modes=["timer"])
    assert len(crashes.kills) == 6


def test_sigkill_inside_every_kind_of_write_leaves_a_consistent_store(tmp_path: Path) -> None:
    crashes = crash_rounds(tmp_path, SEED + 1, rounds=len(KINDS), modes=["point"])
    killed_in = [crash_worker.ACTION[kill.operation.split()[0]] if kill.operation else None for kill in crashes.kills]
    assert killed_in == list(KINDS), f"seed {crashes.seed}: {summary(crashes)}"


BATCH = 12  # reservation files in one `rayon submit`
RAYON = "from follower.cli import main; main()"  # the `rayon` console script, as its entry point runs it


def rayon_command(crashes: Crashes, rng: random.Random, round_: int, kind: str) -> list[str]:
    """A `rayon` command line of this kind, on the store as it now is (files written under the store's folder)."""
    with Store.open(crashes.path) as store:
        now = crash_worker.step_of(store.now())
        accepted = sorted(store.load_plan().accepted)
    folder = crashes.path.parent / f"c{round_}"
    folder.mkdir()
    if kind == "update" and accepted:
        name = rng.choice(accepted)
        path = folder / f"{name}.rdl"
        path.write_text(crash_worker.reservation_text(rng, name, now) + "\n")
        args = ["update", name, str(path), "--agent", rng.choice(crash_worker.AGENTS)]
    elif kind == "cancel" and accepted:
        args = ["cancel", rng.choice(accepted)]
    elif kind == "capacity":
        at = crash_worker.at(min(now + rng.randrange(0, 200), crash_worker.STEPS - 1))
        args = ["capacity", "--at", at, "--set", f"{{vcores: {rng.choice((6, 10, 16, 24))}}}"]
    elif kind == "replan":
        args = ["replan", "--time-limit", "1"]
    else:  # a batch: each file is its own decision, committed before the next is made
        paths = []
        for index in range(BATCH):
            path = folder / f"c{round_}_{index}.rdl"
            path.write_text(crash_worker.reservation_text(rng, f"c{round_}_{index}", now) + "\n")
            paths.append(str(path))
        args = ["submit", "--agent", rng.choice(crash_worker.AGENTS), *paths]
    return [sys.executable, "-c", RAYON, *args, "--state", str(crashes.path)]


def kill_rayon(crashes: Crashes, rng: random.Random, round_: int, kind: str, low: float, high: float) -> Kill:
    """A `rayon` command killed `low`-`high` seconds after it started (it may finish first)."""
    command = rayon_command(crashes, rng, round_, kind)
    with Store.open(crashes.path) as store:
        before = len(store.log())
    delay = rng.uniform(low, high)
    kill = Kill(round_, f"SIGKILL due at {delay:.2f}s", replay=command)
    with (crashes.path.parent / f"c{round_}.stderr").open("w") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
    kill.returncode = process.wait(timeout=WORKER_TIMEOUT)
    with Store.open(crashes.path) as store:
        written = len(store.log()) - before
        stored = {r.name for r in store.list()}
    outcome = "finished first" if kill.returncode == 0 else \
        "killed" if kill.returncode == -signal.SIGKILL else f"exited {kill.returncode}"
    kill.operation = f"rayon {kind} ({outcome}; {written} log rows written)"
    if kill.returncode not in (0, 2, -signal.SIGKILL):
        pytest.fail(f"{crashes.context(kill)}: the command failed\n"
                    f"{(crashes.path.parent / f'c{round_}.stderr').read_text()}")
    crashes.kills.append(kill)
    problems = store_problems(crashes.path) + watcher_problems(crashes)
    if kind == "submit":  # the files are decided in order, each committed before the next: a prefix is stored
        decided = [f"c{round_}_{index}" in stored for index in range(BATCH)]
        if decided != sorted(decided, reverse=True) or written != sum(decided):
            problems.append(f"the batch's decisions stored are not a prefix of it: {decided}, {written} log rows")
    assert problems == [], f"{crashes.context(kill)}: the store is inconsistent after the kill:\n" + \
        "\n".join(problems)
    return kill


COMMAND_DELAYS = {"submit": (0.45, 1.0), "update": (0.45, 0.8), "cancel": (0.45, 0.8), "capacity": (0.45, 0.8),
                  "replan": (0.5, 2.0)}  # seconds: the interpreter and the store take about half a second to load


def rayon_rounds(tmp_path: Path, seed: int, rounds: int) -> Crashes:
    rng = random.Random(seed)
    crashes = init_store(tmp_path, seed)
    try:
        fill(crashes)
        kinds = list(COMMAND_DELAYS)
        for index in range(rounds):
            kind = kinds[index % len(kinds)]
            kill_rayon(crashes, rng, index, kind, *COMMAND_DELAYS[kind])
        fill(crashes, FINAL, "final", journal=False)
    finally:
        assert crashes.watcher is not None
        crashes.watcher.close()
    print(summary(crashes))
    return crashes


def test_sigkill_of_rayon_commands_leaves_a_consistent_store(tmp_path: Path) -> None:
    crashes = rayon_rounds(tmp_path, SEED + 2, rounds=len(COMMAND_DELAYS))
    assert len(crashes.kills) == len(COMMAND_DELAYS)


TEARS = {  # damage a crash could do if decisions were not atomic, and what the checks then say
    "a lease row lost": "DELETE FROM rayon_leases WHERE id = (SELECT max(l.id) FROM rayon_leases l "
                        "JOIN rayon_reservations r ON r.id = l.reservation_id WHERE r.state = 'accepted')",
    "an accepted row without its leases": "DELETE FROM rayon_leases WHERE reservation_id = "
                                          "(SELECT max(id) FROM rayon_reservations WHERE state = 'accepted')",
    "a reservation row lost, its leases kept": "DELETE FROM rayon_reservations WHERE id = "
                                               "(SELECT max(id) FROM rayon_reservations WHERE state = 'accepted')",
    "a decision's log row lost": "DELETE FROM rayon_log WHERE id = (SELECT max(id) FROM rayon_log)",
    "a capacity change's summary lost": "DELETE FROM rayon_log WHERE id = (SELECT max(id) FROM rayon_log "
                                        "WHERE action = 'capacity' AND reservation IS NULL)",
    "a cancellation without its log row": "UPDATE rayon_reservations SET state = 'cancelled' WHERE id = "
                                          "(SELECT max(id) FROM rayon_reservations WHERE state = 'accepted')",
    "the plan version not bumped": "UPDATE rayon_meta SET value = '1' WHERE key = 'plan_version'",
}


def test_the_checks_see_a_torn_store(tmp_path: Path) -> None:
    """The checks are not vacuous: each kind of half-written decision makes them complain."""
    crashes = init_store(tmp_path, SEED)
    try:
        fill(crashes, 60)
    finally:
        assert crashes.watcher is not None
        crashes.watcher.close()
    for tear, sql in TEARS.items():
        torn = tmp_path / f"{tear.replace(' ', '_')}.db"
        shutil.copyfile(crashes.path, torn)
        with sqlite3.connect(torn) as connection:
            assert connection.execute(sql).rowcount >= 1, f"seed {SEED}: nothing to tear for {tear}"
        connection.close()
        problems = store_problems(torn) + journal_problems(torn, read_journal(crashes.journal), set())
        assert problems, f"seed {SEED}: the checks miss {tear}"


@pytest.mark.slow
@pytest.mark.parametrize("offset", range(4))
def test_soak_sigkill_many_rounds(tmp_path: Path, offset: int) -> None:
    crashes = crash_rounds(tmp_path, SEED + 100 + offset, rounds=48, modes=["timer", "point"])
    assert len(crashes.kills) == 48


@pytest.mark.slow
def test_soak_sigkill_of_rayon_commands(tmp_path: Path) -> None:
    crashes = rayon_rounds(tmp_path, SEED + 200, rounds=30)
    assert len(crashes.kills) == 30
