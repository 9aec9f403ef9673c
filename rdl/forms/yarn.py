"""The YARN ReservationSystem REST submission body (`POST /ws/v1/cluster/reservation/submit`), both ways.

Mapping (YARN → RDL):

- every `reservation-request` item becomes a stage `stageN` (N its index):
  `atom(b={memory: MB, vcores: vCores}, g=min-concurrency, h=num-containers, l=duration, w=num-containers*duration)`,
  so it needs exactly `num-containers / min-concurrency` leases (gangs), each held for `duration`;
- the stages are always wrapped in the combinator of `reservation-request-interpreter`, even when there is only
  one, so the interpreter survives a round trip: 0 R_ANY → `any`, 1 R_ALL → `all`, 2 R_ORDER → `order`,
  3 R_ORDER_NO_GAP → `order(..., gap=0s)`; with a single request the interpreter may be left out (all four mean the
  same then) and reads as R_ALL, with several it is required (YARN's silent default R_ANY would place only one);
- `arrival` and `deadline` (epoch ms) become absolute header times, `queue` the queue, `recurrence-expression`
  (a period in ms; "0" or absent: none) `every`, and `reservation-name` (made a valid RDL name, else derived from
  `reservation-id`, else `yarn_reservation`) the name;
- YARN's `priority` counts the other way round from RDL's (YARN: a lower number is more important; RDL: the lowest
  is dropped first), so RDL `priority = -(YARN priority)`;
- `min-concurrency` may be left out and is then 1 (a malleable stage), as in YARN's Java API.

The inverse, `to_yarn`, takes YARN-shaped reservations only: a queue, an absolute arrival, a deadline (absolute,
or relative to the arrival), and a body that is one atom (sent as R_ALL) or one `any`/`all`/`order` (no gap limit,
or gap 0) of atoms, each with a lease, a bundle of exactly memory and vcores in whole numbers, `w/l` containers in
whole gangs of `g`, and `h` unset or equal to that count. Names of stages, `user` and `value` have no YARN field
and are dropped.

Checks are YARN's own (`ReservationInputValidator`) plus the shape rules of a request; every error names its JSON
path, and all are reported together. Like YARN, the window need only hold the shortest alternative of an R_ANY.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any as AnyType

from rdl import units
from rdl.errors import ErrorSink, RDLError, RDLErrors, Span, did_you_mean
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Relative, Reservation, Resources, kind

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEFINITION = "$.reservation-definition"
REQUESTS = f"{DEFINITION}.reservation-requests"
FALLBACK_NAME = "yarn_reservation"

R_ANY, R_ALL, R_ORDER, R_ORDER_NO_GAP = 0, 1, 2, 3
INTERPRETERS = {R_ANY: "R_ANY", R_ALL: "R_ALL", R_ORDER: "R_ORDER", R_ORDER_NO_GAP: "R_ORDER_NO_GAP"}

TOP_KEYS = ("queue", "reservation-id", "reservation-definition")
DEFINITION_KEYS = ("arrival", "deadline", "reservation-name", "priority", "recurrence-expression",
                   "reservation-requests")
REQUESTS_KEYS = ("reservation-request-interpreter", "reservation-request")
REQUEST_KEYS = ("capability", "num-containers", "min-concurrency", "duration")
CAPABILITY = {"memory": units.MEMORY, "vCores": "vcores"}

EXPECTED = {
    "arrival": "a time in epoch milliseconds (UTC), such as 1795395600000",
    "deadline": "a time in epoch milliseconds (UTC), such as 1795417200000",
    "priority": "a whole number (in YARN a lower number is more important)",
    "reservation-request-interpreter": "0 (R_ANY), 1 (R_ALL), 2 (R_ORDER) or 3 (R_ORDER_NO_GAP)",
    "num-containers": "a positive whole number of containers",
    "min-concurrency": "a positive whole number of containers that run together (the gang)",
    "duration": "a positive whole number of milliseconds",
    "memory": "a positive whole number of MB",
    "vCores": "a positive whole number of virtual cores",
}
REQUEST_SHAPE = '{"capability": {"memory": MB, "vCores": N}, "num-containers": N, "min-concurrency": G, "duration": MS}'

_INTEGER = re.compile(r"[+-]?\d+")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


# -- helpers ----------------------------------------------------------------------------


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


def looks_like_yarn(data: object) -> bool:
    """Whether decoded JSON is a YARN submission body (it has `reservation-definition`)."""
    return isinstance(data, Mapping) and "reservation-definition" in data


# -- YARN → tree ------------------------------------------------------------------------


class _Reader:
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
        return value

    def integer(self, parent: Mapping[str, AnyType], key: str, path: str, minimum: int | None = None,
                default: int | None = None) -> int | None:
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
        return value

    def epoch(self, parent: Mapping[str, AnyType], key: str) -> int | None:
        """`arrival` or `deadline` in epoch milliseconds, checked to be a representable time."""
        value = self.integer(parent, key, DEFINITION, minimum=0)
        if value is None:
            return None
        try:
            _instant(value)
        except OverflowError:
            self.error(f"{DEFINITION}.{key}", f"`{key}` {value} is too far in the future", EXPECTED[key])
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
                           span=Span(self.file, json_path=DEFINITION))

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
        """`reservation-request-interpreter`, 0..3; optional (read as R_ALL) for a single request only."""
        key = "reservation-request-interpreter"
        value = self.integer(data, key, REQUESTS, default=R_ALL if count <= 1 else None)
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


def from_yarn(data: AnyType, file: str = "<yarn>") -> Reservation:
    """The reservation of a YARN REST submission body (decoded JSON or its text); RDLErrors lists every error."""
    if isinstance(data, (str, bytes)):
        return parse_yarn_text(data if isinstance(data, str) else data.decode(), file)
    reader = _Reader(file)
    reservation = reader.submission(data)
    reader.sink.raise_if_any()
    if reservation is None:  # pragma: no cover - every path to None reports an error
        raise RDLErrors([RDLError(Span(file, json_path="$"), "not a YARN reservation submission")])
    return reservation


def parse_yarn_text(text: str, file: str = "<yarn>") -> Reservation:
    """Decode a YARN submission body's JSON text and read it; a JSON syntax error names its line and column."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RDLErrors([RDLError(Span(file, exc.lineno, exc.colno), f"not valid JSON: {exc.msg}")],
                        {file: text}) from None
    return from_yarn(data, file)


# -- tree → YARN ------------------------------------------------------------------------


def to_yarn(reservation: Reservation, reservation_id: str | None = None) -> dict[str, AnyType]:
    """The YARN REST submission body of a YARN-shaped reservation (see the module notes); else ValueError."""
    if reservation.queue is None:
        raise ValueError(f"reservation `{reservation.name}` has no queue; a YARN submission needs one")
    arrival, deadline = _yarn_window(reservation)
    interpreter, stages = _yarn_stages(reservation)
    definition: dict[str, AnyType] = {
        "arrival": arrival,
        "deadline": deadline,
        "reservation-name": reservation.name,
        "priority": -reservation.priority,
        "recurrence-expression": str(_to_ms(reservation.every, "every") if reservation.every else 0),
        "reservation-requests": {
            "reservation-request-interpreter": interpreter,
            "reservation-request": [_yarn_request(atom, label) for label, atom in stages],
        },
    }
    body: dict[str, AnyType] = {"queue": reservation.queue}
    if reservation_id is not None:
        body["reservation-id"] = reservation_id
    body["reservation-definition"] = definition
    return body


def _to_ms(seconds: float, what: str) -> int:
    """Seconds as whole milliseconds; ValueError when they are not."""
    ms = round(seconds * 1000)
    if not math.isclose(ms, seconds * 1000, rel_tol=1e-9, abs_tol=1e-6):
        raise ValueError(f"{what} {seconds!r}s is not a whole number of milliseconds, which YARN needs")
    return ms


def _epoch_ms(instant: datetime) -> int:
    """An aware datetime as epoch milliseconds."""
    return _to_ms((instant - EPOCH) / timedelta(seconds=1), "time")


def _yarn_window(reservation: Reservation) -> tuple[int, int]:
    """Arrival and deadline in epoch ms; a relative deadline counts from the (absolute) arrival."""
    if not isinstance(reservation.arrival, Absolute):
        raise ValueError(f"reservation `{reservation.name}` needs an absolute arrival for YARN, "
                         f"got {'none' if reservation.arrival is None else 'a relative one'}")
    if reservation.deadline is None:
        raise ValueError(f"reservation `{reservation.name}` needs a deadline for YARN")
    arrival = _epoch_ms(reservation.arrival.instant)
    if isinstance(reservation.deadline, Relative):
        return arrival, arrival + _to_ms(reservation.deadline.offset, "deadline")
    return arrival, _epoch_ms(reservation.deadline.instant)


def _yarn_stages(reservation: Reservation) -> tuple[int, list[tuple[str, Atom]]]:
    """The interpreter and the labelled atoms of a body that is one atom or one level of any/all/order of atoms."""
    body = reservation.body
    if isinstance(body, Atom):
        return R_ALL, [(body.name or "0", body)]
    interpreter = _interpreter_of(body, reservation.name)
    stages: list[tuple[str, Atom]] = []
    for index, child in enumerate(body.children):
        if not isinstance(child, Atom):
            raise ValueError(f"reservation `{reservation.name}`: YARN takes one level of any/all/order of atoms, "
                             f"but it holds a nested {kind(child)}")
        stages.append((child.name or f"0.{index}", child))
    return interpreter, stages


def _interpreter_of(body: Expr, name: str) -> int:
    """The YARN interpreter of an any/all/order node; ValueError for anything else."""
    if isinstance(body, Any):
        return R_ANY
    if isinstance(body, All):
        return R_ALL
    if isinstance(body, Order) and body.gap is None:
        return R_ORDER
    if isinstance(body, Order) and body.gap == 0:
        return R_ORDER_NO_GAP
    if isinstance(body, Order):
        raise ValueError(f"reservation `{name}`: a YARN order has no gap limit or gap 0 (R_ORDER_NO_GAP), "
                         f"not gap={units.format_duration(body.gap or 0.0)}")
    raise ValueError(f"reservation `{name}`: YARN takes an atom or one any/all/order of atoms, not a {kind(body)}")


def _yarn_request(atom: Atom, label: str) -> dict[str, AnyType]:
    """One atom as a YARN reservation request."""
    if set(atom.bundle) != set(CAPABILITY.values()):
        raise ValueError(f"atom `{label}`: YARN capabilities are memory and vcores exactly, "
                         f"got {', '.join(atom.bundle) or 'nothing'}")
    if atom.lease is None:
        raise ValueError(f"atom `{label}` has no lease `l`; YARN needs each container's duration")
    count = atom.work / atom.lease
    if not math.isclose(count, round(count), rel_tol=1e-9) or round(count) % atom.gang:
        raise ValueError(f"atom `{label}`: w/l = {count:g} containers is not a whole number of gangs of {atom.gang}")
    containers = round(count)
    if atom.parallelism is not None and atom.parallelism != containers:
        raise ValueError(f"atom `{label}` limits parallelism to h={atom.parallelism} below its {containers} "
                         "containers, which YARN cannot express")
    capability = {key: _whole(atom.bundle[name], f"atom `{label}` {name}") for key, name in CAPABILITY.items()}
    return {"capability": capability, "num-containers": containers, "min-concurrency": atom.gang,
            "duration": _to_ms(atom.lease, f"atom `{label}` lease")}


def _whole(value: float, what: str) -> int:
    """A whole, positive resource quantity; ValueError otherwise."""
    if value != int(value) or value <= 0:
        raise ValueError(f"{what} {value!r} is not a positive whole number, which YARN needs")
    return int(value)
