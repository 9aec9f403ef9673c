"""The JSON form of RDL (spec: JSON form), both ways.

JSON values are turned into the same value tokens the text parser reads, with spans
that carry the JSON path, so one set of conversions and checks serves both forms and
their messages agree.
"""

from __future__ import annotations

import json
import re
from typing import Any as AnyType

from rdl import units
from rdl.errors import RDLError, RDLErrors, Span, did_you_mean
from rdl.syntax.lexer import Token
from rdl.syntax.parser import COMBINATORS, HEADER_KEYS, Keywords, RawValue, ValueReader
from rdl.syntax.printer import format_time
from rdl.tree import Atom, Expr, Order, Reservation, Window, kind

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}")  # any date-led text is read as a time, so its error says "not a time"


# -- tree → JSON -----------------------------------------------------------------------


def expr_to_json(node: Expr) -> dict[str, AnyType]:
    """One expression as its JSON object."""
    data: dict[str, AnyType] = {} if node.name is None else {"name": node.name}
    if isinstance(node, Atom):
        atom: dict[str, AnyType] = {"b": {r: _quantity_json(r, q) for r, q in node.bundle.items()}}
        if node.gang != 1:
            atom["g"] = node.gang
        if node.parallelism is not None:
            atom["h"] = node.parallelism
        if node.lease is not None:
            atom["l"] = units.format_duration(node.lease)
        atom["w"] = units.format_duration(node.work)
        data["atom"] = atom
    elif isinstance(node, Window):
        window: dict[str, AnyType] = {} if node.start is None else {"s": format_time(node.start)}
        window |= {"e": format_time(node.end), "expr": expr_to_json(node.child)}
        data["window"] = window
    else:
        data[kind(node)] = [expr_to_json(child) for child in node.children]
        if isinstance(node, Order) and node.gap is not None:
            data["gap"] = units.format_duration(node.gap) if node.gap else "0s"
    return data


def _quantity_json(resource: str, value: float) -> str | int | float:
    if resource == units.MEMORY:
        return units.format_quantity(resource, value)
    return int(value) if value == int(value) else value


def to_json(reservation: Reservation) -> dict[str, AnyType]:
    """A reservation as the spec's JSON object."""
    data: dict[str, AnyType] = {"name": reservation.name}
    for key in ("user", "queue"):
        if getattr(reservation, key) is not None:
            data[key] = getattr(reservation, key)
    for key in ("arrival", "deadline"):
        if getattr(reservation, key) is not None:
            data[key] = format_time(getattr(reservation, key))
    if reservation.value != 1:
        data["value"] = int(reservation.value) if reservation.value == int(reservation.value) else reservation.value
    if reservation.priority != 0:
        data["priority"] = reservation.priority
    if reservation.every is not None:
        data["every"] = units.format_duration(reservation.every)
    if reservation.until is not None:
        data["until"] = format_time(reservation.until)
    if reservation.tz is not None:
        data["tz"] = reservation.tz
    if reservation.placement != "late":
        data["placement"] = reservation.placement
    if reservation.pack is not None:
        data["pack"] = reservation.pack
    data["expr"] = expr_to_json(reservation.body)
    return data


# -- JSON → tree -----------------------------------------------------------------------


class _JSONReader(ValueReader):
    """Builds the tree from decoded JSON, naming JSON paths in its errors."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def span(self, path: str) -> Span:
        return Span(self.file, json_path=path)

    def token(self, value: AnyType, path: str) -> Token:
        """The value token a JSON scalar stands for."""
        span = self.span(path)
        if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
            return Token.pinned("json", json.dumps(value), span)
        if isinstance(value, (int, float)):
            return Token.pinned("number", repr(value), span)
        text = str(value).strip()
        if text.startswith("+"):
            return Token.pinned("relative", text, span)
        if _TIME.match(text):
            return Token.pinned("time", text, span)
        if units.NUMBER_WITH_UNIT.match(text):
            return Token.pinned("number", text, span)
        return Token.pinned("name", text, span)

    def reservation(self, data: AnyType, path: str) -> Reservation | None:
        if not isinstance(data, dict):
            self.sink.add(self.span(path), "a reservation is a JSON object", expected='{"name": ..., "expr": ...}')
            return None
        name = self.name(data.get("name"), f"{path}.name", required=True)
        for key in data:
            if key not in (*HEADER_KEYS, "name", "expr"):
                self.sink.add(self.span(f"{path}.{key}"), f"unknown reservation field `{key}`",
                              hint=did_you_mean(key, [*HEADER_KEYS, "expr"]))
        tokens = {k: self.header_token(k, data[k], f"{path}.{k}") for k in HEADER_KEYS if k in data}
        self.read_zone(tokens.get("tz"))  # first: the zone reads the times without one
        header = self.header(tokens)
        if "expr" not in data:
            self.sink.add(self.span(path), f"reservation `{name or path}` needs `expr`")
            return None
        body = self.expr(data["expr"], f"{path}.expr")
        if name is None or body is None:
            return None
        return Reservation(name=name, body=body, span=self.span(path),
                           places={key: token.span for key, token in tokens.items()},
                           **header)  # type: ignore[arg-type]

    def header_token(self, key: str, value: AnyType, path: str) -> Token:
        """A header value's token; `user`, `queue` and `tz` strings are taken verbatim, never as numbers or times."""
        if key in ("user", "queue", "tz") and isinstance(value, str):
            return Token.pinned("name", value, self.span(path))
        return self.token(value, path)

    def name(self, value: AnyType, path: str, required: bool = False) -> str | None:
        if value is None and not required:
            return None
        if not isinstance(value, str) or not NAME.fullmatch(value):
            self.sink.add(self.span(path), f"`{value}` is not a valid name",
                          expected="letters, digits, `_`, `.` or `-`, starting with a letter or `_`")
            return None
        return value

    def expr(self, data: AnyType, path: str) -> Expr | None:
        if not isinstance(data, dict):
            self.sink.add(self.span(path), "an expression is a JSON object", expected='{"atom": {...}} and the like')
            return None
        name = self.name(data.get("name"), f"{path}.name")
        keys = [k for k in data if k in COMBINATORS]
        extra = [k for k in data if k not in (*COMBINATORS, "name", "gap")]
        for key in extra:
            self.sink.add(self.span(f"{path}.{key}"), f"unknown expression field `{key}`",
                          expected="one of " + ", ".join(COMBINATORS), hint=did_you_mean(key, COMBINATORS))
        if len(keys) != 1:
            if not extra:
                self.sink.add(self.span(path), f"an expression has exactly one of {', '.join(COMBINATORS)}; "
                              f"got {len(keys)}")
            return None
        word = keys[0]
        inner_path = f"{path}.{word}"
        keywords, children = self.arguments(word, data[word], inner_path)
        if word == "order" and "gap" in data:
            keywords["gap"] = (Token.pinned("name", "gap", self.span(f"{path}.gap")),
                               self.token(data["gap"], f"{path}.gap"))
        elif "gap" in data:
            self.sink.add(self.span(f"{path}.gap"), f"`gap` belongs to `order`, not `{word}`")
        if any(child is None for child in children):
            return None
        return self.build(word, keywords, children, name, self.span(path))  # type: ignore[arg-type]

    def arguments(self, word: str, value: AnyType, path: str) -> tuple[Keywords, list[Expr | None]]:
        if word in ("order", "all", "any"):
            if isinstance(value, dict) and word == "order" and "order" in value:
                inner, listed = self.arguments(word, value["order"], f"{path}.order")
                for key in value:  # `{"order": {"order": [...], "gap": D}}`: keep the gap, flag the rest
                    if key == "gap":
                        inner["gap"] = (Token.pinned("name", "gap", self.span(f"{path}.gap")),
                                        self.token(value["gap"], f"{path}.gap"))
                    elif key != "order":
                        self.sink.add(self.span(f"{path}.{key}"), f"unknown `order` field `{key}`",
                                      expected="`order` and `gap`")
                return inner, listed
            if not isinstance(value, list):
                self.sink.add(self.span(path), f"`{word}` takes a list of expressions")
                return {}, [None]
            return {}, [self.expr(child, f"{path}[{i}]") for i, child in enumerate(value)]
        if not isinstance(value, dict):
            self.sink.add(self.span(path), f"`{word}` takes an object of arguments")
            return {}, [None]
        keywords: Keywords = {}
        children: list[Expr | None] = []
        for key, item in value.items():
            item_path = f"{path}.{key}"
            if word == "window" and key == "expr":
                children.append(self.expr(item, item_path))
                continue
            keywords[key] = (Token.pinned("name", key, self.span(item_path)), self.raw(key, item, item_path))
        return keywords, children

    def raw(self, key: str, value: AnyType, path: str) -> RawValue:
        if key == "b" and isinstance(value, dict):
            return [(Token.pinned("name", r, self.span(f"{path}.{r}")), self.token(q, f"{path}.{r}"))
                    for r, q in value.items()]
        return self.token(value, path)


def from_json(data: AnyType, file: str = "<json>") -> list[Reservation]:
    """Reservations from decoded JSON: one object, a list, or `{"reservations": [...]}`."""
    reader = _JSONReader(file)
    if isinstance(data, dict) and "reservations" in data:
        items, base = data["reservations"], "$.reservations"
    else:
        items, base = data, "$"
    try:
        if isinstance(items, list):
            found = [reader.reservation(item, f"{base}[{i}]") for i, item in enumerate(items)]
        else:
            found = [reader.reservation(items, base)]
    except RecursionError:
        raise RDLErrors([RDLError(Span(file, json_path=base), "expressions are nested too deeply")]) from None
    reader.sink.raise_if_any()
    return [r for r in found if r is not None]


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, AnyType]]) -> dict[str, AnyType]:
    """An object's keys, each once: JSON allows a repeated key and keeps the last, which hides mistakes."""
    seen: dict[str, AnyType] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def loads(text: str, file: str) -> AnyType:
    """A user's JSON text decoded; RDLErrors with line and column for a syntax error, a repeated key, or
    nesting too deep."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        span, message = Span(file, exc.lineno, exc.colno), f"not valid JSON: {exc.msg}"
    except _DuplicateKey as exc:
        span, message = _second(text, exc.key, file), f"the key `{exc.key}` is given twice in one JSON object"
    except RecursionError:  # the decoder recurses once per level of nesting
        span, message = Span(file, 1, 1), "JSON nested too deeply"
    raise RDLErrors([RDLError(span, message)], {file: text})


def _second(text: str, key: str, file: str) -> Span:
    """Where a repeated key is written the second time (its first repeat in the text)."""
    quoted = json.dumps(key)
    first = text.find(quoted)
    at = text.find(quoted, first + 1) if first >= 0 else -1
    if at < 0:
        return Span(file, 1, 1)
    line = text.count("\n", 0, at) + 1
    return Span(file, line, at - (text.rfind("\n", 0, at) + 1) + 1)


def parse_json_text(text: str, file: str = "<json>") -> list[Reservation]:
    """Decode JSON text and read its reservations; a syntax error names its line and column."""
    return from_json(loads(text, file), file)


def dumps(reservations: list[Reservation]) -> str:
    """Reservations as pretty JSON: one object for one, a list for several."""
    items = [to_json(r) for r in reservations]
    return json.dumps(items[0] if len(items) == 1 else items, indent=2)

