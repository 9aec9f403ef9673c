"""Print trees as canonical RDL text: one way to write each thing, so `fmt` output is stable."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rdl import units
from rdl.tree import Absolute, Atom, Expr, Order, Reservation, Resources, TimeValue, Window, kind

INDENT = "  "
_BARE_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_BARE_ZONE = r"[A-Za-z_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.+\-]*)*"


def format_time(value: TimeValue) -> str:
    if isinstance(value, Absolute):
        return units.format_instant(value.instant)
    return "+" + units.format_duration(value.offset)


def format_resources(bundle: Resources) -> str:
    return "{" + ", ".join(f"{name}: {units.format_quantity(name, q)}" for name, q in bundle.items()) + "}"


def format_word(text: str, bare: str = _BARE_NAME) -> str:
    """A user, queue or zone name: bare when it reads back as one token, quoted otherwise."""
    if re.fullmatch(bare, text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def format_atom(atom: Atom) -> str:
    parts = [f"b={format_resources(atom.bundle)}"]
    if atom.gang != 1:
        parts.append(f"g={atom.gang}")
    if atom.parallelism is not None:
        parts.append(f"h={atom.parallelism}")
    if atom.lease is not None:
        parts.append(f"l={units.format_duration(atom.lease)}")
    parts.append(f"w={units.format_duration(atom.work)}")
    return f"atom({', '.join(parts)})"


def format_expr(node: Expr, depth: int = 0) -> str:
    """One expression, nested children one per line."""
    prefix = f"{node.name}: " if node.name is not None else ""
    if isinstance(node, Atom):
        return prefix + format_atom(node)
    pad = INDENT * (depth + 1)
    args: list[str] = []
    if isinstance(node, Window):
        if node.start is not None:
            args.append(f"s={format_time(node.start)}")
        args.append(f"e={format_time(node.end)}")
    children = [pad + format_expr(child, depth + 1) for child in node.children]
    tail = ""
    if isinstance(node, Order) and node.gap is not None:
        tail = f",\n{pad}gap={units.format_duration(node.gap) if node.gap else '0s'}"
    head = ", ".join(args) + ("," if args else "")
    return f"{prefix}{kind(node)}({head}\n" + ",\n".join(children) + tail + f"\n{INDENT * depth})"


def format_header(reservation: Reservation) -> str:
    parts = [f"reservation {reservation.name}"]
    if reservation.user is not None:
        parts.append(f"user={format_word(reservation.user)}")
    if reservation.queue is not None:
        parts.append(f"queue={format_word(reservation.queue)}")
    if reservation.arrival is not None:
        parts.append(f"arrival={format_time(reservation.arrival)}")
    if reservation.deadline is not None:
        parts.append(f"deadline={format_time(reservation.deadline)}")
    if reservation.value != 1:
        parts.append(f"value={units.format_number(reservation.value)}")
    if reservation.priority != 0:
        parts.append(f"priority={reservation.priority}")
    if reservation.every is not None:
        parts.append(f"every={units.format_duration(reservation.every)}")
    if reservation.until is not None:
        parts.append(f"until={format_time(reservation.until)}")
    if reservation.tz is not None:
        parts.append(f"tz={format_word(reservation.tz, _BARE_ZONE)}")
    if reservation.placement != "late":
        parts.append(f"placement={reservation.placement}")
    if reservation.pack is not None:
        parts.append(f"pack={reservation.pack}")
    return " ".join(parts)


def format_reservation(reservation: Reservation) -> str:
    """A reservation as canonical RDL text."""
    return f"{format_header(reservation)} {{\n{INDENT}{format_expr(reservation.body, 1)}\n}}\n"


def format_reservations(reservations: Iterable[Reservation]) -> str:
    """A whole file: reservations separated by blank lines."""
    return "\n".join(format_reservation(r) for r in reservations)
