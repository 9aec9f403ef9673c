"""The YARN ReservationSystem REST submission body (`POST /ws/v1/cluster/reservation/submit`), both ways.

Mapping (YARN → RDL):

- every `reservation-request` item becomes a stage `stageN` (N its index):
  `atom(b={memory: MB, vcores: vCores}, g=min-concurrency, h=num-containers, l=duration, w=num-containers*duration)`,
  so it needs exactly `num-containers / min-concurrency` leases (gangs), each held for `duration`;
- the stages are always wrapped in the combinator of `reservation-request-interpreter`, even when there is only
  one, so the interpreter survives a round trip: 0 R_ANY → `any`, 1 R_ALL → `all`, 2 R_ORDER → `order`,
  3 R_ORDER_NO_GAP → `order(..., gap=0s)`, given as the number or its name (`"R_ORDER"`; YARN 3.4's JSON layer
  reads a name as 0, R_ANY, without a word: we read what it says); left out, it is R_ANY, as in YARN (which then
  places one of several requests; with a single request all four mean the same);
- `arrival` and `deadline` (epoch ms) become absolute header times, `queue` the queue, `recurrence-expression`
  (a period in ms; "0" or absent: none) `every`, and `reservation-name` (made a valid RDL name, else derived from
  `reservation-id`, else `yarn_reservation`) the name;
- YARN's `priority` counts the other way round from RDL's (YARN: a lower number is more important; RDL: the lowest
  is dropped first), so RDL `priority = -(YARN priority)`;
- `min-concurrency` may be left out and is then 1 (a malleable stage), as in YARN's Java API.

The inverse, `to_yarn`, takes YARN-shaped reservations only: a queue, an absolute arrival, a deadline (absolute,
or relative to the arrival), and a body that is one atom (sent as R_ALL) or one `any`/`all`/`order` (no gap limit,
or gap 0) of atoms, each with a lease, a bundle of exactly memory and vcores in whole numbers, `w/l` containers in
whole gangs of `g`, and `h` unset or equal to that count. Names of stages, `user`, `value`, `placement` and `pack`
have no YARN field and are dropped (YARN's agent chooses early or late placement for the whole cluster). A series
with `tz` is refused: YARN repeats a fixed number of milliseconds, so its instances would drift across a change of
daylight-saving time.

Checks are YARN's own (`ReservationInputValidator`) plus the shape rules of a request; every error names its JSON
path, and all are reported together. Like YARN, the window need only hold the shortest alternative of an R_ANY.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any as AnyType

from rdl import units
from rdl.errors import RDLError, RDLErrors, Span
from rdl.forms import jsonform
from rdl.forms.yarn_body import CAPABILITY, EPOCH, R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP
from rdl.forms.yarn_read import Reader
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Relative, Reservation, kind


def looks_like_yarn(data: object) -> bool:
    """Whether decoded JSON is a YARN submission body (it has `reservation-definition`)."""
    return isinstance(data, Mapping) and "reservation-definition" in data


def from_yarn(data: AnyType, file: str = "<yarn>") -> Reservation:
    """The reservation of a YARN REST submission body (decoded JSON or its text); RDLErrors lists every error."""
    if isinstance(data, (str, bytes)):
        return parse_yarn_text(data if isinstance(data, str) else data.decode(), file)
    reader = Reader(file)
    reservation = reader.submission(data)
    reader.sink.raise_if_any()
    if reservation is None:  # pragma: no cover - every path to None reports an error
        raise RDLErrors([RDLError(Span(file, json_path="$"), "not a YARN reservation submission")])
    return reservation


def parse_yarn_text(text: str, file: str = "<yarn>") -> Reservation:
    """Decode a YARN submission body's JSON text and read it; a JSON syntax error names its line and column."""
    return from_yarn(jsonform.loads(text, file), file)


# -- tree → YARN ------------------------------------------------------------------------


def to_yarn(reservation: Reservation, reservation_id: str | None = None) -> dict[str, AnyType]:
    """The YARN REST submission body of a YARN-shaped reservation (see the module notes); else ValueError."""
    if reservation.queue is None:
        raise ValueError(f"reservation `{reservation.name}` has no queue; a YARN submission needs one")
    if reservation.tz is not None and reservation.every is not None:
        raise ValueError(f"reservation `{reservation.name}` repeats by calendar days in {reservation.tz} (`tz`); "
                         "YARN repeats a fixed period, so it cannot say that")
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
