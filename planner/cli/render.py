"""What the store commands print for people, from the JSON they print for machines.

A local store and a server (client mode) both give the commands JSON records (`rayon list --json`'s shape),
and the tables are drawn from those alone: the two modes print the same thing for the same plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any as AnyType

from rdl import units
from rdl.table import format_table

Json = dict[str, AnyType]
RECORD_FIELDS = ("reservation", "accepted", "state", "user", "queue", "value", "priority", "agent", "submitted",
                 "decided", "allocations", "start", "end")


def span_text(start: str, end: str) -> str:
    """`[2026-11-23 02:00, 03:00)`: a span of ISO instants with its date (the end's date only when it differs)."""
    lo, hi = units.parse_instant(start), units.parse_instant(end)
    pattern = "%H:%M:%S" if lo.second or hi.second else "%H:%M"
    tail = hi.strftime(pattern) if hi.date() == lo.date() else f"{hi.date().isoformat()} {hi.strftime(pattern)}"
    return f"[{lo.date().isoformat()} {lo.strftime(pattern)}, {tail})"


def holds_text(allocations: Sequence[Mapping[str, AnyType]]) -> str:
    """The span a reservation's leases cover, or `-`."""
    if not allocations:
        return "-"
    return span_text(min(a["start"] for a in allocations), max(a["end"] for a in allocations))


def peak_use(allocations: Sequence[Mapping[str, AnyType]]) -> str:
    """The most a reservation's leases hold at once, resource by resource (`{memory: 8GiB, vcores: 4}`), or `-`.

    Bundles of different atoms differ in size, so their counts do not add up; resources do.
    """
    if not allocations:
        return "-"
    events: dict[datetime, dict[str, float]] = {}
    for lease in allocations:
        for when, sign in ((lease["start"], 1), (lease["end"], -1)):
            change = events.setdefault(units.parse_instant(when), {})
            for resource, amount in lease["resources"].items():
                change[resource] = change.get(resource, 0) + sign * amount
    held: dict[str, float] = {}
    peak: dict[str, float] = {}
    for when in sorted(events):
        for resource, amount in events[when].items():
            held[resource] = held.get(resource, 0) + amount
            peak[resource] = max(peak.get(resource, 0), held[resource])
    return "{" + ", ".join(f"{k}: {units.format_quantity(k, v)}" for k, v in sorted(peak.items())) + "}"


def decision_rows(decisions: Iterable[Mapping[str, AnyType]]) -> list[list[str]]:
    rows = []
    for decision in decisions:
        if decision["accepted"]:
            leases = decision.get("allocations", [])
            rows.append([decision["reservation"], "accepted", holds_text(leases), str(len(leases)), peak_use(leases)])
        else:
            rows.append([decision["reservation"], f"rejected ({decision['reason']['code']})", "-", "-", "-"])
    return rows


def decisions_text(decisions: Sequence[Mapping[str, AnyType]], agent: str) -> str:
    """The decisions' table, each rejection's reason in words, and the count accepted."""
    lines = [format_table(["RESERVATION", "DECISION", "HOLDS", "ALLOCATIONS", "PEAK USE"], decision_rows(decisions))]
    rejected = [d for d in decisions if not d["accepted"]]
    if rejected:
        lines.append("")
    for decision in rejected:
        line = f"{decision['reservation']}: {decision['reason']['message']}"
        if decision["reason"].get("earliest_deadline") is not None:
            line += f"; it would fit with a deadline of {decision['reason']['earliest_deadline']}"
        lines.append(line)
    accepted = sum(bool(d["accepted"]) for d in decisions)
    lines.append(f"\n{accepted} of {len(decisions)} accepted by {agent}")
    return "\n".join(lines)


def from_api(item: Mapping[str, AnyType]) -> Json:
    """A reservation as the API answers it, in the shape `rayon list --json` gives a local one."""
    leases = list(item.get("allocations", []))
    holds = item.get("holds")
    start = min((a["start"] for a in leases), default=holds["start"] if holds else None)
    end = max((a["end"] for a in leases), default=holds["end"] if holds else None)
    data: Json = {key: item.get(key) for key in RECORD_FIELDS}
    data.update(allocations=leases, start=start, end=end)
    for extra in ("reason", "updated", "rdl", "archived"):
        if item.get(extra) is not None:
            data[extra] = item[extra]
    return data


RECORD_HEADERS = ["RESERVATION", "STATE", "USER", "QUEUE", "START", "END", "REASON"]
WIDE_HEADERS = ["AGENT", "SUBMITTED", "ALLOCATIONS", "VALUE", "PRIORITY"]


def record_row(record: Mapping[str, AnyType], wide: bool = False) -> list[str]:
    row = [record["reservation"], record["state"], record["user"] or "-", record["queue"] or "-",
           record["start"] or "-", record["end"] or "-", record["reason"]["code"] if record.get("reason") else "-"]
    if wide:
        row += [record["agent"] or "-", record["submitted"], str(len(record["allocations"])),
                f"{record['value']:g}", str(record["priority"])]
    return row


def records_table(records: Sequence[Mapping[str, AnyType]], wide: bool = False) -> str:
    """`rayon list`'s table: the columns that fit 100 characters, or (`wide`) every one."""
    return format_table(RECORD_HEADERS + (WIDE_HEADERS if wide else []), [record_row(r, wide) for r in records])


def log_json(entry_id: int, time: datetime, actor: str | None, action: str, reservation: str | None,
             accepted: bool | None, reason: Mapping[str, AnyType] | None,
             decision: Mapping[str, AnyType] | None) -> Json:
    """A log entry as `rayon log --json` prints it (and the API answers it)."""
    return {"id": entry_id, "time": units.format_instant(time), "actor": actor, "action": action,
            "reservation": reservation, "accepted": accepted, "reason": reason, "decision": decision}


def log_answer(entry: Mapping[str, AnyType]) -> str:
    """What a log row answered, in a word or two."""
    decision = entry.get("decision") or {}
    code = (entry.get("reason") or {}).get("code")
    action, whole_plan = entry["action"], entry.get("reservation") is None
    if decision.get("dropped") and not whole_plan:
        return f"dropped ({code})"
    if decision.get("moved") and not whole_plan:
        return "moved"
    if decision.get("state") == "expired":
        return "expired"
    if whole_plan and action == "advance" and "to" in decision:
        return f"clock to {decision['to']}, {len(decision.get('expired', []))} expired"
    if whole_plan and action == "capacity" and "change" in decision:
        alone = len(decision.get("dropped_instances", []))
        return (f"capacity change: {len(decision.get('moved', []))} moved, "
                f"{len(decision.get('dropped', []))} dropped" + (f", {alone} instances dropped alone" if alone else ""))
    if whole_plan and action == "replan" and "status" in decision:
        return f"{decision['status']}: {len(decision.get('moved', []))} moved"
    if action == "cancel":
        return "cancelled" if entry.get("accepted") is not False else f"refused ({code})"
    if entry.get("accepted") is None:
        return "-"
    if action == "update":
        return "updated" if entry["accepted"] else f"rejected ({code}); kept the old version"
    return "accepted" if entry["accepted"] else f"rejected ({code})"


def log_table(entries: Sequence[Mapping[str, AnyType]]) -> str:
    rows = [[str(e["id"]), e["time"], e["actor"] or "-", e["action"], e["reservation"] or "-", log_answer(e)]
            for e in entries]
    return format_table(["ID", "TIME", "ACTOR", "ACTION", "RESERVATION", "ANSWER"], rows)


SHOWN_LEASES = 12  # `rayon show` lists this many leases one by one; more are summed up (every one with -o wide)


def show_text(record: Mapping[str, AnyType], every: bool = False) -> str:
    """`rayon show`: the state, the RDL, the leases (summed up when there are many, unless `every`) and the
    history."""
    lines = [f"{record['reservation']}: {record['state']} (user {record['user'] or '-'}, agent "
             f"{record['agent'] or '-'})"]
    if record.get("reason"):
        lines.append(f"  reason: {record['reason']['message']}")
    lines.append(record["rdl"].rstrip())
    leases = record["allocations"]
    if leases and (every or len(leases) <= SHOWN_LEASES):
        rows = [[a["atom"], a["start"], a["end"], str(a["bundles"])] for a in leases]
        lines.append(format_table(["ATOM", "START", "END", "BUNDLES"], rows))
    if leases:
        atoms = sorted({a["atom"] for a in leases})
        more = "" if every or len(leases) <= SHOWN_LEASES else " (-o wide lists each one)"
        lines.append(f"holds {holds_text(leases)}: {len(leases)} allocation{'' if len(leases) == 1 else 's'} of "
                     f"{len(atoms)} atom{'' if len(atoms) == 1 else 's'}, at most {peak_use(leases)} at once{more}")
    for entry in record.get("history", []):
        lines.append(f"  {entry['time']}  {entry['actor'] or '-'}  {entry['action']}  {log_answer(entry)}")
    return "\n".join(lines)


MEMORY_COLUMN_UNITS = (("TiB", 1024 * 1024), ("GiB", 1024), ("MiB", 1))


def column_quantities(resource: str, values: Sequence[float]) -> list[str]:
    """A column of one resource's amounts in one unit (memory: the largest unit its largest value fills ten of, to
    two decimals; counts as they are), so that `4025GiB` never stands above `3982848MiB`."""
    if resource != units.MEMORY:
        return [units.format_number(round(v, 6)) for v in values]
    top = max((abs(v) for v in values), default=0.0)
    unit, size = next(((u, s) for u, s in MEMORY_COLUMN_UNITS if top >= 10 * s), MEMORY_COLUMN_UNITS[-1])
    return ["0" if v == 0 else f"{v / size:.2f}".rstrip("0").rstrip(".") + unit for v in values]
