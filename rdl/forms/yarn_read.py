"""Reads a decoded YARN submission body into a Reservation, collecting every error with its JSON path."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any as AnyType

from rdl import units
from rdl.errors import ErrorSink, Span, did_you_mean
from rdl.forms.yarn_body import (
    CAPABILITY,
    DEFINITION,
    DEFINITION_KEYS,
    EPOCH,
    EXPECTED,
    FALLBACK_NAME,
    INTERPRETERS,
    R_ALL,
    R_ANY,
    R_ORDER,
    R_ORDER_NO_GAP,
    REQUEST_KEYS,
    REQUEST_SHAPE,
    REQUESTS,
    REQUESTS_KEYS,
    TOP_KEYS,
)
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Reservation, Resources

_INTEGER = re.compile(r"[+-]?\d+")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
NAMED = {name: code for code, name in INTERPRETERS.items()}  # R_ANY -> 0, ...


def _as_int(value: object) -> int | None:
    """A whole number from a JSON number or a numeric string (YARN's JSON often quotes numbers); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    return None


def _show(value: object) -> str:
    """A JSON value as an error message quotes it."""
    return f"`{json.dumps(value)}`"


def _at(ms: int) -> str:
    """Epoch milliseconds with their ISO-8601 reading, for messages."""
    try:
        return f"{ms} ({units.format_instant(_instant(ms))})"
    except (OverflowError, ValueError):
        return str(ms)


def _instant(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC datetime (exact, no float rounding)."""
    return EPOCH + timedelta(milliseconds=ms)


def _span_ms(ms: int) -> str:
    """A length in milliseconds, also as an RDL duration, for messages."""
    return f"{units.format_duration(ms / 1000)} ({ms} ms)"


def sanitize_name(text: str) -> str:
    """`text` made a valid RDL name (`[A-Za-z_][A-Za-z0-9_.-]*`), or "" when nothing usable is left."""
    cleaned = _NOT_NAME.sub("_", text.strip()).strip("_")
    if not cleaned:
        return ""
    return cleaned if cleaned[0].isalpha() or cleaned[0] == "_" else f"_{cleaned}"


_KEPT = re.compile(r"[A-Za-z0-9_.]")
_ESCAPED = re.compile(r"(?:-[0-9A-F]{2})+")
_MARK = "_--"  # leads a name whose first character could not start an RDL name; escapes never make `--`


def encode_name(text: str) -> str:
    """Any text as an RDL name, reversibly: characters outside `[A-Za-z0-9_.]` become `-HH` per UTF-8 byte
    (`nightly etl` → `nightly-20etl`), and a name that would not start with a letter or `_` is marked `_--`."""
    encoded = "".join(c if _KEPT.fullmatch(c) else "".join(f"-{b:02X}" for b in c.encode()) for c in text)
    return encoded if not encoded or encoded[0].isalpha() or encoded[0] == "_" else _MARK + encoded


def decode_name(name: str) -> str:
    """The text `encode_name` made `name` from."""
    if name.startswith(_MARK):
        name = name[len(_MARK):]
    return _ESCAPED.sub(lambda m: bytes.fromhex(m[0].replace("-", "")).decode(errors="replace"), name)


class Reader:
    """Reads one YARN submission body, collecting every error with its JSON path."""

    def __init__(self, file: str):
        self.file = file
        self.sink = ErrorSink()

    def error(self, path: str, message: str, expected: str | None = None, hint: str | None = None) -> None:
        """Reports a problem at a JSON path."""
        self.sink.add(Span(self.file, json_path=path), message, expected=expected, hint=hint)

    def missing(self, key: str, path: str) -> None:
        """Reports a required field as missing."""
        self.error(f"{path}.{key}", f"missing required field `{key}`", EXPECTED.get(key))

    def unknown(self, data: Mapping[str, AnyType], allowed: tuple[str, ...], path: str) -> None:
        """Reports fields that YARN's submission body does not have."""
        for key in data:
            if key not in allowed:
                self.error(f"{path}.{key}", f"unknown field `{key}`", "one of " + ", ".join(f"`{k}`" for k in allowed),
                           did_you_mean(key, allowed))

    def mapping(self, parent: Mapping[str, AnyType], key: str, path: str) -> dict[str, AnyType] | None:
        """The required JSON object `parent[key]`, or None (reported)."""
        value = parent.get(key)
        if value is None:
            self.error(f"{path}.{key}", f"missing required field `{key}`", "a JSON object")
            return None
        if not isinstance(value, dict):
            self.error(f"{path}.{key}", f"`{key}` must be a JSON object, got {_show(value)}")
            return None
        return value

    def text(self, parent: Mapping[str, AnyType], key: str, path: str, required: bool) -> str | None:
        """A string field; a required one must not be empty."""
        value = parent.get(key)
        if value is None or value == "":
            if required:
                self.error(f"{path}.{key}", f"missing required field `{key}`", "a non-empty string")
            return None
        if not isinstance(value, str):
            self.error(f"{path}.{key}", f"`{key}` must be a string, got {_show(value)}")
            return None
        if "\0" in value:  # PostgreSQL keeps no NUL in text
            self.error(f"{path}.{key}", f"`{key}` holds a NUL character: {value!r}")
            return None
        return value

    def integer(self, parent: Mapping[str, AnyType], key: str, path: str, minimum: int | None = None,
                default: int | None = None, maximum: int | None = units.MAX_INTEGER) -> int | None:
        """A whole-number field (JSON number or numeric string); required unless it has a default."""
        raw = parent.get(key)
        if raw is None:
            if default is None:
                self.missing(key, path)
            return default
        value = _as_int(raw)
        if value is None:
            self.error(f"{path}.{key}", f"`{key}` must be a whole number, got {_show(raw)}", EXPECTED.get(key))
        elif minimum is not None and value < minimum:
            word = "positive" if minimum == 1 else f"at least {minimum}"
            self.error(f"{path}.{key}", f"`{key}` must be {word}, got {value}", EXPECTED.get(key))
            return None
        elif maximum is not None and abs(value) > maximum:
            self.error(f"{path}.{key}", f"`{key}` must be at most {maximum:,}, got {value}", EXPECTED.get(key))
            return None
        return value

    def epoch(self, parent: Mapping[str, AnyType], key: str) -> int | None:
        """`arrival` or `deadline` in epoch milliseconds, checked to be a representable time."""
        value = self.integer(parent, key, DEFINITION, minimum=0, maximum=None)  # the calendar bounds it, below
        if value is None:
            return None
        try:
            units.in_range(_instant(value))
        except (OverflowError, ValueError):
            self.error(f"{DEFINITION}.{key}", f"`{key}` {value} is too far in the future ({units.TIME_RANGE})",
                       EXPECTED[key])
            return None
        return value

    # -- the body ---------------------------------------------------------------------

    def submission(self, data: AnyType) -> Reservation | None:
        """The whole body: `queue`, `reservation-id`, `reservation-definition`."""
        if not isinstance(data, dict):
            self.error("$", f"a YARN reservation submission is a JSON object, got {_show(data)}",
                       '{"queue": ..., "reservation-id": ..., "reservation-definition": {...}}')
            return None
        self.unknown(data, TOP_KEYS, "$")
        queue = self.text(data, "queue", "$", required=True)
        reservation_id = self.text(data, "reservation-id", "$", required=False)
        definition = self.mapping(data, "reservation-definition", "$")
        if definition is None:
            return None
        return self.definition(definition, queue, reservation_id)

    def definition(self, data: dict[str, AnyType], queue: str | None, reservation_id: str | None) -> Reservation | None:
        """The `reservation-definition`: window, name, priority, recurrence and the requests."""
        self.unknown(data, DEFINITION_KEYS, DEFINITION)
        arrival, deadline = self.epoch(data, "arrival"), self.epoch(data, "deadline")
        priority = self.integer(data, "priority", DEFINITION, default=0)
        name = self.name(data, reservation_id)
        period = self.recurrence(data)
        requests = self.mapping(data, "reservation-requests", DEFINITION)
        interpreter, stages, durations = self.requests(requests) if requests is not None else (None, [], [None])
        if arrival is not None and deadline is not None:
            self.check_window(arrival, deadline, interpreter, durations, period)
        if self.sink.errors or arrival is None or deadline is None or interpreter is None or priority is None:
            return None
        return Reservation(name=name, body=_combine(interpreter, [s for s in stages if s is not None], self.file),
                           queue=queue,
                           arrival=Absolute(_instant(arrival)), deadline=Absolute(_instant(deadline)),
                           priority=-priority, every=period / 1000 if period else None,
                           span=Span(self.file, json_path=DEFINITION),
                           places={"queue": Span(self.file, json_path="$.queue"),
                                   **{key: Span(self.file, json_path=f"{DEFINITION}.{key}")
                                      for key in ("arrival", "deadline")}})

    def name(self, data: Mapping[str, AnyType], reservation_id: str | None) -> str:
        """`reservation-name` as a valid RDL name, else one made from `reservation-id`, else `yarn_reservation`."""
        raw = self.text(data, "reservation-name", DEFINITION, required=False)
        for candidate in (raw, reservation_id):
            if candidate is not None and sanitize_name(candidate):
                return sanitize_name(candidate)
        return FALLBACK_NAME

    def recurrence(self, data: Mapping[str, AnyType]) -> int | None:
        """`recurrence-expression`: a period in ms (0 when absent or "0"); None when invalid (reported)."""
        raw = data.get("recurrence-expression")
        if raw is None or raw == "":
            return 0
        value = _as_int(raw)
        if value is None or value < 0:
            self.error(f"{DEFINITION}.recurrence-expression", f"`recurrence-expression` must be a period in "
                       f"milliseconds, got {_show(raw)}", 'a non-negative whole number such as "86400000" (daily); '
                       '"0" for a reservation that does not recur')
            return None
        return value

    def requests(self, data: dict[str, AnyType]) -> tuple[int | None, list[Atom | None], list[int | None]]:
        """The interpreter, the stages (None where invalid) and their durations in ms (None where unknown)."""
        self.unknown(data, REQUESTS_KEYS, REQUESTS)
        items = self.request_items(data)
        interpreter = self.interpreter(data, len(items))
        read = [self.stage(item, path, index) for index, (item, path) in enumerate(items)]
        return interpreter, [atom for atom, _ in read], [duration for _, duration in read] or [None]

    def request_items(self, data: Mapping[str, AnyType]) -> list[tuple[AnyType, str]]:
        """`reservation-request` items with their paths: a list, or (as older YARN writes one) a single object."""
        key, path = "reservation-request", f"{REQUESTS}.reservation-request"
        raw = data.get(key)
        if raw is None:
            self.error(path, f"missing required field `{key}`", "a list of reservation requests: " + REQUEST_SHAPE)
            return []
        if isinstance(raw, dict):
            return [(raw, path)]
        if not isinstance(raw, list) or not raw:
            self.error(path, f"`{key}` needs at least one reservation request, got {_show(raw)}",
                       "a non-empty list of " + REQUEST_SHAPE)
            return []
        return [(item, f"{path}[{index}]") for index, item in enumerate(raw)]

    def interpreter(self, data: Mapping[str, AnyType], count: int) -> int | None:
        """`reservation-request-interpreter`: 0..3 or its name (`R_ORDER`); when left out, R_ANY as in YARN (for a
        single request all four mean the same)."""
        key = "reservation-request-interpreter"
        raw = data.get(key)
        if isinstance(raw, str) and raw.strip().upper() in NAMED:
            return NAMED[raw.strip().upper()]
        value = self.integer(data, key, REQUESTS, default=R_ANY, maximum=None)
        if value is not None and value not in INTERPRETERS:
            self.error(f"{REQUESTS}.{key}", f"`{key}` must be one of 0..3, got {value}", EXPECTED[key])
            return None
        return value

    def stage(self, item: AnyType, path: str, index: int) -> tuple[Atom | None, int | None]:
        """One reservation request as the atom `stageN`, and its duration in ms."""
        if not isinstance(item, dict):
            self.error(path, f"a reservation request is a JSON object, got {_show(item)}", REQUEST_SHAPE)
            return None, None
        self.unknown(item, REQUEST_KEYS, path)
        bundle = self.capability(item, path)
        count = self.integer(item, "num-containers", path, minimum=1)
        gang = self.integer(item, "min-concurrency", path, minimum=1, default=1)
        duration = self.integer(item, "duration", path, minimum=1)
        if count is not None and gang is not None and count % gang:
            self.error(f"{path}.num-containers", f"`num-containers` ({count}) must be a multiple of "
                       f"`min-concurrency` ({gang}): containers are granted in gangs of `min-concurrency`",
                       f"a multiple of {gang}, such as {gang * max(1, round(count / gang))}")
            return None, duration
        if bundle is None or count is None or gang is None or duration is None:
            return None, duration
        atom = Atom(bundle=bundle, work=count * duration / 1000, gang=gang, parallelism=count, lease=duration / 1000,
                    name=f"stage{index}", span=Span(self.file, json_path=path))
        return atom, duration

    def capability(self, item: Mapping[str, AnyType], path: str) -> Resources | None:
        """`capability {memory, vCores}` as a bundle `{memory: MiB, vcores: count}`."""
        capability = self.mapping(item, "capability", path)
        if capability is None:
            return None
        where = f"{path}.capability"
        self.unknown(capability, tuple(CAPABILITY), where)
        values = {rdl: self.integer(capability, key, where, minimum=1) for key, rdl in CAPABILITY.items()}
        if any(value is None for value in values.values()):
            return None
        return Resources.of({name: float(value) for name, value in values.items() if value is not None})

    def check_window(self, arrival: int, deadline: int, interpreter: int | None, durations: list[int | None],
                     period: int | None) -> None:
        """YARN's window rules: deadline after arrival, long enough for the stages, no longer than the period."""
        where = f"{DEFINITION}.deadline"
        if deadline <= arrival:
            self.error(where, f"`deadline` {_at(deadline)} must be after `arrival` {_at(arrival)}",
                       "a deadline later than the arrival")
            return
        window = deadline - arrival
        known = [d for d in durations if d is not None]
        if interpreter is not None and known and len(known) == len(durations):
            need, rule = _least_window(interpreter, known)
            if window < need:
                self.error(where, f"the window from `arrival` to `deadline` is {_span_ms(window)}, shorter than "
                           f"{rule} ({_span_ms(need)}) that {INTERPRETERS[interpreter]} needs",
                           f"a deadline at least {need} ms after the arrival, at {_at(arrival + need)} or later")
        if period and window > period:
            self.error(f"{DEFINITION}.recurrence-expression", f"the window from `arrival` to `deadline` "
                       f"({_span_ms(window)}) is longer than the recurrence period ({_span_ms(period)})",
                       f"a period of at least {window} ms, or a shorter window")


def _least_window(interpreter: int, durations: list[int]) -> tuple[int, str]:
    """The shortest window YARN accepts for these durations, and how it is computed (for messages)."""
    if interpreter in (R_ORDER, R_ORDER_NO_GAP):
        return sum(durations), "the sum of the stage durations"
    if interpreter == R_ALL:
        return max(durations), "the longest stage duration"
    return min(durations), "the shortest alternative's duration"


def _combine(interpreter: int, stages: list[Atom], file: str) -> Expr:
    """The stages under the combinator of the interpreter."""
    children = tuple(stages)
    span = Span(file, json_path=REQUESTS)
    if interpreter == R_ANY:
        return Any(children, span=span)
    if interpreter == R_ALL:
        return All(children, span=span)
    return Order(children, gap=0.0 if interpreter == R_ORDER_NO_GAP else None, span=span)
