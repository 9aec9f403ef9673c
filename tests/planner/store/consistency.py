"""Whether a plan store holds together: what the crash tests (test_crash.py) and the API's chaos test check
after every kill.

- SQLite's own integrity and foreign-key checks, and plain SQL over the rows (SQLite stores only);
- every accepted reservation holds its leases, `load_plan` is exactly the records' leases summed, and the
  independent checker (planner/core/check.py) finds nothing wrong;
- the decision log replayed from the start gives every reservation its stored state and leases, and every
  multi-row decision (capacity change, advance, re-planning) is logged whole.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any as AnyType

import numpy as np

from planner.core.check import check_plan
from planner.core.decision import allocation_json
from planner.core.plan import Allocation
from planner.replan.adapt import vector_json
from planner.store.facade import LogEntry, Store
from rdl import units

GROUPED = ("capacity", "replan", "advance")  # decisions logged as named rows and then one summary row


def allocations_json(allocations: Iterable[Allocation] | Iterable[dict[str, AnyType]], clock: AnyType) -> list[str]:
    """Allocations (objects or their JSON) as sorted canonical JSON text, for comparing regardless of order."""
    texts = []
    for allocation in allocations:
        data = allocation_json(allocation, clock) if isinstance(allocation, Allocation) else allocation
        texts.append(json.dumps(data, sort_keys=True))
    return sorted(texts)


def raw_problems(path: Path) -> list[str]:
    """What SQLite itself and plain SQL say: integrity, foreign keys, orphan and misplaced leases, meta."""
    problems = []
    connection = sqlite3.connect(path)
    try:
        integrity = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            problems.append(f"integrity_check: {integrity[:5]}")
        foreign = connection.execute("PRAGMA foreign_key_check").fetchall()
        if foreign:
            problems.append(f"foreign_key_check: {foreign[:5]}")
        orphans = connection.execute("SELECT count(*), group_concat(DISTINCT l.reservation_id) FROM rayon_leases l "
                                     "LEFT JOIN rayon_reservations r ON r.id = l.reservation_id "
                                     "WHERE r.id IS NULL").fetchone()
        if orphans[0]:
            problems.append(f"{orphans[0]} lease rows belong to no stored reservation (ids {orphans[1]})")
        rejected = connection.execute("SELECT r.name, count(*) FROM rayon_leases l JOIN rayon_reservations r ON "
                                      "r.id = l.reservation_id WHERE r.state = 'rejected' GROUP BY r.name").fetchall()
        if rejected:
            problems.append(f"rejected reservations hold lease rows: {rejected[:5]}")
        meta = dict(connection.execute("SELECT key, value FROM rayon_meta").fetchall())
        newest = connection.execute("SELECT max(version) FROM rayon_reservations").fetchone()[0] or 0
        if int(meta["plan_version"]) < newest:
            problems.append(f"a reservation row has version {newest}, past the plan's {meta['plan_version']}")
        if int(meta["rebuild_version"]) > int(meta["plan_version"]):
            problems.append(f"rebuild_version {meta['rebuild_version']} is past plan_version {meta['plan_version']}")
    finally:
        connection.close()
    return problems


def archived_instances(store: Store, records: dict[str, AnyType]) -> dict[str, list[Allocation]]:
    """The leases of the past instances each live series moved to the history (its `accepted` history rows of the
    same submission), by name."""
    found: dict[str, list[Allocation]] = {}
    for name, record in records.items():
        if record.state != "accepted" or record.reservation().every is None:
            continue
        offset = 0
        while True:
            page, total = store.history(name=name, state="accepted", offset=offset, limit=1000)
            for item in page:
                if item.record.submitted == record.submitted:
                    found.setdefault(name, []).extend(item.record.allocations)
            offset += len(page)
            if not page or offset >= total:
                break
    return found


def missed_instances(log: Sequence[LogEntry]) -> dict[str, list[int]]:
    """The instances of each series rejected as decisions of their own (missed as the plan rolled, or dropped alone
    by a capacity change), as the log has them: those of the version decided last. A new submission of the name,
    or an accepted update, is a new series whose instances count from its own submission."""
    missed: dict[str, list[int]] = {}
    for entry in log:
        if not entry.reservation:
            continue
        if entry.decision and "instance" in entry.decision:
            if entry.accepted is False:
                missed.setdefault(entry.reservation, []).append(int(entry.decision["instance"]))
        elif entry.action == "submit" or (entry.action == "update" and entry.accepted):
            missed.pop(entry.reservation, None)
    return missed


def replay_problems(log: Sequence[LogEntry], records: dict[str, AnyType], clock: AnyType,
                    archived: dict[str, list[Allocation]] | None = None) -> list[str]:
    """The log replayed from the start must give every reservation its stored state and leases: a live series
    those of its instances still in the plan, the log's less those its past instances took to the history
    (`archived`, by name: docs/decisions.md, "The history")."""
    problems = []
    past = {name: Counter(allocations_json(held, clock)) for name, held in (archived or {}).items()}
    state: dict[str, tuple[str, list[str]]] = {}
    for entry in log:
        name, decision = entry.reservation, entry.decision or {}
        if name is None:
            continue
        previous = state.get(name)
        if entry.action in ("submit", "update") and entry.accepted:
            state[name] = ("accepted", allocations_json(decision.get("allocations", []), clock))
        elif entry.action == "submit":
            if previous is not None and previous[0] == "accepted":
                if entry.reason_code != "invalid":
                    problems.append(f"log {entry.id}: `{name}` is accepted, yet a new submission was rejected "
                                    f"({entry.reason_code}) rather than found invalid")
            else:
                state[name] = ("rejected", [])
        elif entry.action == "update":
            if previous is None or previous[0] != "accepted":
                problems.append(f"log {entry.id}: update of `{name}`, which the log does not show accepted")
        elif previous is None or previous[0] != "accepted":
            problems.append(f"log {entry.id}: {entry.action} of `{name}`, which the log does not show accepted")
        elif entry.action == "cancel" and "from_instance" in decision:  # a series cut: the earlier instances stay
            freed, held = Counter(allocations_json(decision.get("allocations", []), clock)), Counter(previous[1])
            if freed - held:
                problems.append(f"log {entry.id}: cutting `{name}` freed leases it did not hold")
            state[name] = ("accepted", sorted((held - freed).elements()))
        elif entry.action == "cancel":
            if allocations_json(decision.get("allocations", []), clock) != previous[1]:
                problems.append(f"log {entry.id}: cancelling `{name}` freed other leases than it held")
            state[name] = ("cancelled", previous[1])
        elif decision.get("dropped") and "instance" in decision:  # one instance dropped alone: the series goes on
            pass  # its leases left with the move row of the series (beside it), or it held none
        elif decision.get("dropped"):
            state[name] = ("dropped", previous[1])
        elif decision.get("moved"):
            if allocations_json(decision.get("previous_allocations", []), clock) != previous[1]:
                problems.append(f"log {entry.id}: `{name}` moved from other leases than it held")
            state[name] = ("accepted", allocations_json(decision.get("allocations", []), clock))
        elif entry.action == "advance" and decision.get("state") == "expired":
            state[name] = ("expired", previous[1])
        elif entry.action == "advance" and "instance" in decision:  # a series going on as the plan rolled
            if decision.get("accepted"):
                state[name] = ("accepted", sorted(previous[1] + allocations_json(decision["allocations"], clock)))
        else:
            problems.append(f"log {entry.id}: unexpected {entry.action} row for `{name}`: {decision}")
    for name in sorted(set(state) | set(records)):
        record = records.get(name)
        if record is None:
            problems.append(f"the log decides `{name}`, but the store has no such reservation")
            continue
        if name not in state:
            problems.append(f"`{name}` is stored ({record.state}) but the log never decided it")
            continue
        stored = (record.state, allocations_json(record.allocations, clock))
        if name in past:
            given = Counter(state[name][1])
            if past[name] - given:
                problems.append(f"the history holds past instances of `{name}` the log never gave it")
            state[name] = (state[name][0], sorted((given - past[name]).elements()))
        if stored[0] != state[name][0]:
            problems.append(f"`{name}` is {stored[0]} in the store, but the log's last word makes it {state[name][0]}")
        elif stored[1] != state[name][1]:
            problems.append(f"`{name}` ({stored[0]}) holds {len(stored[1])} leases in the store, but the log gave it "
                            f"{len(state[name][1])} others")
    return problems


def change_key(change: tuple[AnyType, dict[str, AnyType]]) -> tuple[AnyType, str]:
    return change[0], json.dumps(change[1], sort_keys=True)


def group_problems(log: Sequence[LogEntry], cluster: AnyType, now: AnyType) -> list[str]:
    """Multi-row decisions are logged whole: named rows, then their summary, which names exactly them."""
    problems: list[str] = []
    pending: list[LogEntry] = []
    changes, clock_to = [], None
    for entry in log:
        if entry.action in GROUPED and entry.reservation is not None:
            if pending and pending[-1].action != entry.action:
                problems.append(f"log {entry.id}: a {entry.action} row inside an unfinished {pending[-1].action}")
            pending.append(entry)
            continue
        if entry.action not in GROUPED:
            if pending:
                problems.append(f"log {pending[0].id}-{pending[-1].id}: {pending[0].action} rows with no summary")
            pending = []
            continue
        summary, names = entry.decision or {}, [p.reservation for p in pending]
        if any(p.action != entry.action for p in pending):
            problems.append(f"log {entry.id}: a {entry.action} summary after {pending[0].action} rows")
        if entry.action == "capacity":
            moved = {m["reservation"] for m in summary.get("moved", [])}
            dropped = {d["reservation"] for d in summary.get("dropped", [])}
            alone = [(d["reservation"], d["instance"]) for d in summary.get("dropped_instances", [])]
            logged = {p.reservation for p in pending if (p.decision or {}).get("moved")}
            dropping = [(p.reservation, p.decision or {}) for p in pending if (p.decision or {}).get("dropped")]
            gone = {name for name, row in dropping if "instance" not in row}
            instances = [(name, row["instance"]) for name, row in dropping if "instance" in row]
            if (logged, gone, instances) != (moved, dropped, alone) or \
                    len(names) != len(moved) + len(dropped) + len(alone):
                problems.append(f"log {entry.id}: capacity change moved {sorted(moved)} and dropped {sorted(dropped)}, "
                                f"but the rows before it say {sorted(logged)} and {sorted(gone)}")
            changes.append((units.parse_instant(summary["change"]["at"]), summary["change"]["capacity"]))
        elif entry.action == "replan" and sorted(summary.get("moved", [])) != sorted(names):
            problems.append(f"log {entry.id}: re-planning moved {summary.get('moved')}, the rows before it {names}")
        elif entry.action == "advance":
            series = [item["reservation"] for key in ("placed", "missed") for item in summary.get(key, [])]
            if sorted(summary.get("expired", []) + series) != sorted(names):
                problems.append(f"log {entry.id}: advance expired {summary.get('expired')} and went on with "
                                f"{series}, the rows before it {names}")
            clock_to = summary.get("to")
        pending = []
    if pending:
        problems.append(f"log {pending[0].id}-{pending[-1].id}: {pending[0].action} rows with no summary")
    stored = [(c.at, vector_json(c.capacity)) for c in cluster.changes]
    if sorted(changes, key=change_key) != sorted(stored, key=change_key):
        problems.append(f"the cluster file holds {len(stored)} capacity changes, the log {len(changes)} (or others)")
    if units.format_instant(now) != (clock_to or units.format_instant(cluster.start)):
        problems.append(f"the plan's clock is {units.format_instant(now)}, the log's last advance went to {clock_to}")
    return problems


def store_problems(path: Path | str) -> list[str]:
    """Everything wrong with the store at `path` (a SQLite file, or a PostgreSQL URL), read by a fresh Store
    (nothing cached) and, for SQLite, by plain SQL too."""
    with Store.open(path) as store:  # it opens: the schema version is read
        cluster, records, log, now = store.cluster(), store.list(), store.log(), store.now()
        plan, clock = store.load_plan(), store.clock()  # the plan's rolling window, and the records' axis
    problems = raw_problems(path) if isinstance(path, Path) else []
    accepted = {r.name: r for r in records if r.state == "accepted"}
    with Store.open(path) as store:
        archived = archived_instances(store, accepted)
    missed = missed_instances(log)
    for name, record in accepted.items():
        # A series may hold none: its past instances in the history, or every instance in the horizon missed
        # (rdl.md: each is its own decision, and the series goes on).
        if not record.allocations and name not in archived and name not in missed:
            problems.append(f"`{name}` is accepted but holds no leases")
    if plan.accepted.keys() != accepted.keys():
        problems.append(f"load_plan holds {sorted(plan.accepted.keys() ^ accepted.keys())} differently from the "
                        "accepted records")
    for name in plan.accepted.keys() & accepted.keys():
        if allocations_json(plan.accepted[name].allocations, plan.clock) != \
                allocations_json(accepted[name].allocations, clock):
            problems.append(f"load_plan gives `{name}` other leases than its record")
    use = np.zeros_like(plan.capacity)
    window = round((plan.clock.origin - clock.origin).total_seconds()) // clock.step  # where it begins on the axis
    for record in accepted.values():
        for a in record.allocations:
            start, end = max(a.start - window, 0), max(min(a.end - window, plan.clock.steps), 0)
            for index, resource in enumerate(plan.resources):
                use[index, start:end] += a.bundle.get(resource, 0.0) * a.bundles
    if not np.array_equal(plan.used, use):
        steps = np.argwhere(plan.used != use)[:5].tolist()
        problems.append(f"load_plan's use differs from the records' leases summed (at [resource, step] {steps})")
    if (plan.used > plan.capacity + 1e-9).any():
        problems.append("load_plan uses more than the capacity")
    whole = [replace(r, allocations=[*r.allocations, *archived.get(r.name, [])]) for r in records]  # series whole
    problems += [f"check_plan: {p}" for p in check_plan(
        cluster, [r.reservation() for r in whole],
        [{**r.decision().to_json(clock), "missed_instances": missed.get(r.name, [])} for r in whole],
        submitted={r.name: r.submitted for r in whole}, rolled_to=now)]
    problems += replay_problems(log, {r.name: r for r in records}, clock, archived)
    problems += group_problems(log, cluster, now)
    return problems
