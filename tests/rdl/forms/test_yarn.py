"""The YARN ReservationSystem REST submission body: mapping, YARN's checks with JSON paths, the inverse."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import pytest

import rdl
from rdl.errors import RDLErrors
from rdl.forms.jsonform import from_json, to_json
from rdl.forms.yarn import from_yarn, looks_like_yarn, parse_yarn_text, to_yarn
from rdl.forms.yarn_read import decode_name, encode_name, sanitize_name
from rdl.syntax.printer import format_reservation
from rdl.tree import Absolute, All, Any, Atom, Order, Relative, Reservation, Resources, Window

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "yarn_spark_pipeline.json"
CLUSTER = ROOT / "examples" / "cluster.yaml"

ARRIVAL_MS = 1795395600000  # 2026-11-23T01:00:00Z
HOUR_MS = 3_600_000
REQ = "$.reservation-definition.reservation-requests.reservation-request"

BASE: dict[str, AnyType] = {
    "queue": "prod",
    "reservation-id": "reservation_1795388400000_0001",
    "reservation-definition": {
        "arrival": ARRIVAL_MS,
        "deadline": ARRIVAL_MS + 6 * HOUR_MS,
        "reservation-name": "etl",
        "priority": 0,
        "recurrence-expression": "0",
        "reservation-requests": {
            "reservation-request-interpreter": 2,
            "reservation-request": [
                {"capability": {"memory": 2048, "vCores": 1}, "num-containers": 100, "min-concurrency": 1,
                 "duration": 300_000},
                {"capability": {"memory": 8192, "vCores": 4}, "num-containers": 20, "min-concurrency": 10,
                 "duration": HOUR_MS},
            ],
        },
    },
}


def body(changes: dict[str, AnyType] | None = None, drop: tuple[str, ...] = ()) -> dict[str, AnyType]:
    """A copy of BASE with `changes` set and `drop` removed, both by dotted paths (`[i]` indexes lists)."""
    data = copy.deepcopy(BASE)
    for path, value in (changes or {}).items():
        parent, key = _locate(data, path)
        parent[key] = value
    for path in drop:
        parent, key = _locate(data, path)
        del parent[key]
    return data


def _locate(data: AnyType, path: str) -> tuple[AnyType, AnyType]:
    parts: list[AnyType] = []
    for part in path.split("."):
        if "[" in part:
            name, index = part[:-1].split("[")
            parts += [name, int(index)]
        else:
            parts.append(part)
    for part in parts[:-1]:
        data = data[part]
    return data, parts[-1]


DEF = "reservation-definition"
REQS = f"{DEF}.reservation-requests"
ITEM0 = f"{REQS}.reservation-request[0]"


def errors_of(data: AnyType) -> RDLErrors:
    with pytest.raises(RDLErrors) as info:
        from_yarn(data, "sub.json")
    return info.value


def error_at(data: AnyType, json_path: str) -> str:
    """The message of the one error at `json_path` (its headline, which names the path)."""
    found = [e for e in errors_of(data).errors if e.span.json_path == json_path]
    assert found, f"no error at {json_path}: {errors_of(data)}"
    headline = found[0].headline()
    assert headline.startswith(f"sub.json:{json_path}: ")
    return headline


# -- mapping ----------------------------------------------------------------------------


def test_stages_map_to_atoms() -> None:
    reservation = from_yarn(body())
    first, second = reservation.body.children
    assert first == Atom(bundle=Resources.of({"memory": 2048, "vcores": 1}), work=100 * 300.0, gang=1,
                         parallelism=100, lease=300.0, name="stage0")
    assert second == Atom(bundle=Resources.of({"memory": 8192, "vcores": 4}), work=20 * 3600.0, gang=10,
                          parallelism=20, lease=3600.0, name="stage1")
    assert first.span.json_path == f"{REQ}[0]" and second.span.json_path == f"{REQ}[1]"


@pytest.mark.parametrize(("interpreter", "kind", "gap"), [(0, Any, None), (1, All, None), (2, Order, None),
                                                          (3, Order, 0.0)])
def test_interpreters(interpreter: int, kind: type, gap: float | None) -> None:
    reservation = from_yarn(body({f"{REQS}.reservation-request-interpreter": interpreter}))
    assert type(reservation.body) is kind
    assert len(reservation.body.children) == 2
    if isinstance(reservation.body, Order):
        assert reservation.body.gap == gap


@pytest.mark.parametrize(("name", "kind", "gap"), [("R_ANY", Any, None), ("R_ALL", All, None),
                                                   ("R_ORDER", Order, None), ("r_order_no_gap", Order, 0.0)])
def test_interpreters_by_name_mean_what_they_say(name: str, kind: type, gap: float | None) -> None:
    reservation = from_yarn(body({f"{REQS}.reservation-request-interpreter": name}))
    assert type(reservation.body) is kind
    assert getattr(reservation.body, "gap", None) == gap


def test_several_requests_without_an_interpreter_are_r_any_as_in_yarn() -> None:
    reservation = from_yarn(body(drop=(f"{REQS}.reservation-request-interpreter",)))
    assert type(reservation.body) is Any and len(reservation.body.children) == 2


def test_an_unknown_interpreter_name_is_an_error_listing_the_valid_ones() -> None:
    message = error_at(body({f"{REQS}.reservation-request-interpreter": "R_SOME"}),
                       f"$.{REQS}.reservation-request-interpreter")
    assert "R_ORDER_NO_GAP" in message


def test_order_no_gap_prints_gap_zero() -> None:
    reservation = from_yarn(body({f"{REQS}.reservation-request-interpreter": 3}))
    assert "gap=0s" in format_reservation(reservation)


def test_header_fields() -> None:
    reservation = from_yarn(body({f"{DEF}.priority": 3}))
    assert reservation.name == "etl"
    assert reservation.queue == "prod"
    assert reservation.arrival == Absolute(datetime(2026, 11, 23, 1, tzinfo=UTC))
    assert reservation.deadline == Absolute(datetime(2026, 11, 23, 7, tzinfo=UTC))
    assert reservation.priority == -3  # YARN: lower is more important; RDL: lowest is dropped first
    assert reservation.every is None
    assert reservation.user is None and reservation.value == 1
    assert reservation.span.json_path == "$.reservation-definition"


@pytest.mark.parametrize(("recurrence", "every"), [("86400000", 86400.0), (3_600_000 * 6, 21600.0), ("0", None),
                                                   (None, None)])
def test_recurrence(recurrence: AnyType, every: float | None) -> None:
    data = body({f"{DEF}.recurrence-expression": recurrence}) if recurrence is not None \
        else body(drop=(f"{DEF}.recurrence-expression",))
    assert from_yarn(data).every == every


def test_optional_fields_default() -> None:
    reservation = from_yarn(body(drop=(f"{DEF}.priority", f"{DEF}.recurrence-expression", "reservation-id",
                                       f"{ITEM0}.min-concurrency")))
    assert reservation.priority == 0 and reservation.every is None
    first = reservation.body.children[0]
    assert isinstance(first, Atom) and first.gang == 1


def test_single_request_object_and_default_interpreter() -> None:
    item = BASE[DEF]["reservation-requests"]["reservation-request"][1]
    data = body({f"{REQS}.reservation-request": item}, drop=(f"{REQS}.reservation-request-interpreter",))
    reservation = from_yarn(data)
    assert type(reservation.body) is Any  # YARN's default, R_ANY: for one request all four mean the same
    assert reservation.body.children[0].name == "stage0"
    assert reservation.body.children[0].span.json_path == REQ


def test_quoted_numbers_are_read() -> None:
    """YARN's own JSON writer often quotes numbers."""
    data = body({f"{ITEM0}.capability.memory": "2048", f"{ITEM0}.num-containers": "100",
                 f"{ITEM0}.duration": "300000", f"{DEF}.arrival": str(ARRIVAL_MS),
                 f"{REQS}.reservation-request-interpreter": "2"})
    assert from_yarn(data) == from_yarn(body())


@pytest.mark.parametrize(("name", "reservation_id", "expected"), [
    ("etl", None, "etl"),
    ("Spark ETL (nightly)", None, "Spark_ETL_nightly"),
    ("2026-run", None, "_2026-run"),
    (None, "reservation_1795388400000_0001", "reservation_1795388400000_0001"),
    ("()", "reservation_1_2", "reservation_1_2"),
    (None, None, "yarn_reservation"),
])
def test_names(name: str | None, reservation_id: str | None, expected: str) -> None:
    data = body(drop=("reservation-id", f"{DEF}.reservation-name"))
    if name is not None:
        data[DEF]["reservation-name"] = name
    if reservation_id is not None:
        data["reservation-id"] = reservation_id
    assert from_yarn(data).name == expected


@pytest.mark.parametrize("text", ["nightly etl", "etl-2024", "9am", ".hidden", "_--x", "naïve ✓", "a--b", "plain"])
def test_any_yarn_name_round_trips_through_an_rdl_name(text: str) -> None:
    name = encode_name(text)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name)
    assert decode_name(name) == text


def test_names_of_plain_characters_stay_as_they_are() -> None:
    assert encode_name("nightly_etl.v2") == "nightly_etl.v2"
    assert encode_name("nightly etl") == "nightly-20etl"


def test_sanitize_name() -> None:
    assert sanitize_name("a b/c") == "a_b_c"
    assert sanitize_name("  ") == ""
    assert sanitize_name("x.y-z") == "x.y-z"


def test_text_input() -> None:
    assert from_yarn(json.dumps(body())) == from_yarn(body())
    assert parse_yarn_text(json.dumps(body()), "x.json") == from_yarn(body())


def test_looks_like_yarn() -> None:
    assert looks_like_yarn(body())
    assert not looks_like_yarn({"name": "etl", "expr": {}})
    assert not looks_like_yarn([body()])
    assert not looks_like_yarn("reservation-definition")


# -- YARN's checks, each at its JSON path ---------------------------------------------


@pytest.mark.parametrize(("changes", "json_path", "words"), [
    ({f"{ITEM0}.num-containers": 7, f"{ITEM0}.min-concurrency": 2}, f"{REQ}[0].num-containers",
     "must be a multiple of `min-concurrency` (2): containers are granted in gangs of `min-concurrency`; "
     "expected a multiple of 2, such as 8"),
    ({f"{ITEM0}.num-containers": 0}, f"{REQ}[0].num-containers", "must be positive, got 0; expected a positive"),
    ({f"{ITEM0}.min-concurrency": 0}, f"{REQ}[0].min-concurrency", "must be positive, got 0"),
    ({f"{ITEM0}.duration": 0}, f"{REQ}[0].duration",
     "must be positive, got 0; expected a positive whole number of milliseconds"),
    ({f"{ITEM0}.duration": -5}, f"{REQ}[0].duration", "must be positive, got -5"),
    ({f"{ITEM0}.capability.memory": 0}, f"{REQ}[0].capability.memory", "must be positive, got 0; expected a "
                                                                        "positive whole number of MB"),
    ({f"{ITEM0}.capability.vCores": -1}, f"{REQ}[0].capability.vCores", "must be positive, got -1"),
    ({f"{DEF}.deadline": ARRIVAL_MS}, "$.reservation-definition.deadline", "must be after `arrival`"),
    ({f"{DEF}.deadline": ARRIVAL_MS - 1}, "$.reservation-definition.deadline", "must be after `arrival`"),
    ({f"{DEF}.deadline": ARRIVAL_MS + HOUR_MS}, "$.reservation-definition.deadline",
     "shorter than the sum of the stage durations (65m (3900000 ms)) that R_ORDER needs"),
    ({f"{DEF}.deadline": ARRIVAL_MS + HOUR_MS, f"{REQS}.reservation-request-interpreter": 3},
     "$.reservation-definition.deadline", "the sum of the stage durations (65m (3900000 ms)) that R_ORDER_NO_GAP"),
    ({f"{DEF}.deadline": ARRIVAL_MS + HOUR_MS - 1, f"{REQS}.reservation-request-interpreter": 1},
     "$.reservation-definition.deadline", "the longest stage duration (1h (3600000 ms)) that R_ALL needs"),
    ({f"{DEF}.deadline": ARRIVAL_MS + 60_000, f"{REQS}.reservation-request-interpreter": 0},
     "$.reservation-definition.deadline", "the shortest alternative's duration (5m (300000 ms)) that R_ANY needs"),
    ({f"{DEF}.recurrence-expression": str(HOUR_MS)}, "$.reservation-definition.recurrence-expression",
     "is longer than the recurrence period (1h (3600000 ms))"),
    ({f"{DEF}.recurrence-expression": "-1"}, "$.reservation-definition.recurrence-expression",
     "must be a period in milliseconds"),
    ({f"{DEF}.recurrence-expression": "daily"}, "$.reservation-definition.recurrence-expression",
     'expected a non-negative whole number such as "86400000"'),
    ({f"{REQS}.reservation-request-interpreter": 4}, f"{'$.' + REQS}.reservation-request-interpreter",
     "must be one of 0..3, got 4; expected 0 (R_ANY), 1 (R_ALL), 2 (R_ORDER) or 3 (R_ORDER_NO_GAP)"),
    ({f"{REQS}.reservation-request": []}, REQ, "needs at least one reservation request"),
    ({f"{REQS}.reservation-request[1]": 5}, f"{REQ}[1]", "a reservation request is a JSON object"),
    ({"queue": ""}, "$.queue", "missing required field `queue`"),
])
def test_yarn_rules(changes: dict[str, AnyType], json_path: str, words: str) -> None:
    assert words in error_at(body(changes), json_path)


@pytest.mark.parametrize(("path", "value", "words"), [
    (f"{ITEM0}.capability.memory", "lots", 'must be a whole number, got `"lots"`; expected a positive whole number'),
    (f"{ITEM0}.duration", "1h", 'must be a whole number, got `"1h"`; expected a positive whole number of '
     'milliseconds'),
    (f"{ITEM0}.duration", 1.5, "must be a whole number, got `1.5`"),
    (f"{ITEM0}.num-containers", True, "must be a whole number, got `true`"),
    (f"{DEF}.arrival", "2026-11-23T01:00:00Z", "expected a time in epoch milliseconds"),
    (f"{DEF}.priority", "high", "expected a whole number (in YARN a lower number is more important)"),
    (f"{DEF}.reservation-requests", [], "must be a JSON object"),
    ("queue", 5, "must be a string, got `5`"),
])
def test_non_numeric_and_wrong_types(path: str, value: AnyType, words: str) -> None:
    assert words in error_at(body({path: value}), "$." + path)


@pytest.mark.parametrize("path", ["queue", "reservation-definition", f"{DEF}.arrival", f"{DEF}.deadline",
                                  f"{DEF}.reservation-requests", f"{REQS}.reservation-request",
                                  f"{ITEM0}.capability",
                                  f"{ITEM0}.capability.memory", f"{ITEM0}.capability.vCores",
                                  f"{ITEM0}.num-containers", f"{ITEM0}.duration"])
def test_missing_required_fields_are_named(path: str) -> None:
    key = path.rsplit(".", 1)[-1].split("[")[0]
    assert f"missing required field `{key}`" in error_at(body(drop=(path,)), "$." + path)


def test_unknown_fields_get_a_hint() -> None:
    data = body({f"{ITEM0}.capability.vcores": 1}, drop=(f"{ITEM0}.capability.vCores",))
    message = error_at(data, f"{REQ}[0].capability.vcores")
    assert "unknown field `vcores`" in message and "did you mean `vCores`?" in message
    assert "did you mean `reservation-definition`?" in error_at(
        {"queue": "prod", "reservation-defintion": {}}, "$.reservation-defintion")


def test_every_error_is_reported_at_once() -> None:
    data = body({f"{ITEM0}.num-containers": 0, f"{REQS}.reservation-request[1].capability.memory": "x",
                 f"{DEF}.priority": "high"}, drop=("queue",))
    paths = {e.span.json_path for e in errors_of(data).errors}
    assert paths == {"$.queue", "$.reservation-definition.priority", f"{REQ}[0].num-containers",
                     f"{REQ}[1].capability.memory"}


def test_not_an_object() -> None:
    assert "is a JSON object" in error_at([1, 2], "$")


def test_any_window_needs_only_the_shortest_alternative() -> None:
    """As in YARN (which skips the check for R_ANY) and RDL (an alternative that never fits is never chosen)."""
    data = body({f"{DEF}.deadline": ARRIVAL_MS + 30 * 60_000, f"{REQS}.reservation-request-interpreter": 0})
    reservation = from_yarn(data)
    rdl.validate([reservation], rdl.load_cluster(str(CLUSTER)))


def test_bad_json_names_line_and_column() -> None:
    with pytest.raises(RDLErrors) as info:
        parse_yarn_text('{\n  "queue": "prod",\n  "reservation-definition": {,}\n}', "bad.json")
    (error,) = info.value.errors
    assert (error.span.file, error.span.line, error.span.col) == ("bad.json", 3, 30)
    assert error.headline().startswith("bad.json:3:30: not valid JSON")
    assert "^" in info.value.render()


def test_cluster_errors_point_at_the_request() -> None:
    """Validation against the cluster speaks of the JSON path of the request it concerns."""
    data = body({f"{REQS}.reservation-request[1].num-containers": 2000,
                 f"{REQS}.reservation-request[1].min-concurrency": 1000})
    with pytest.raises(RDLErrors) as info:
        rdl.validate([from_yarn(data, "sub.json")], rdl.load_cluster(str(CLUSTER)))
    assert any(e.span.json_path == f"{REQ}[1]" and "stage1" in e.message for e in info.value.errors)


# -- the example ------------------------------------------------------------------------


def test_example_loads_and_validates() -> None:
    reservation = parse_yarn_text(EXAMPLE.read_text(), str(EXAMPLE))
    rdl.validate([reservation], rdl.load_cluster(str(CLUSTER)))
    assert reservation.queue == "prod"
    assert reservation.arrival == Absolute(datetime(2026, 11, 23, 1, tzinfo=UTC))
    assert isinstance(reservation.body, Order) and reservation.body.gap is None
    assert [a.name for a in reservation.body.children] == ["stage0", "stage1", "stage2"]
    assert reservation.every == 86400.0


# -- round trips ------------------------------------------------------------------------


def _normal(data: dict[str, AnyType]) -> dict[str, AnyType]:
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("interpreter", [0, 1, 2, 3])
def test_to_yarn_round_trips(interpreter: int) -> None:
    data = body({f"{REQS}.reservation-request-interpreter": interpreter, f"{DEF}.priority": 2,
                 f"{DEF}.recurrence-expression": "86400000"})
    assert to_yarn(from_yarn(data), data["reservation-id"]) == data


def test_to_yarn_round_trips_the_example() -> None:
    data = json.loads(EXAMPLE.read_text())
    assert _normal(to_yarn(from_yarn(data), data["reservation-id"])) == data
    assert "reservation-id" not in to_yarn(from_yarn(data))


@pytest.mark.parametrize("data", [body(), body({f"{REQS}.reservation-request-interpreter": 3}),
                                  body({f"{ITEM0}.duration": 60, f"{DEF}.recurrence-expression": "86400000",
                                        f"{DEF}.priority": 7}),
                                  json.loads(EXAMPLE.read_text())])
def test_print_and_parse_back(data: dict[str, AnyType]) -> None:
    reservation = from_yarn(data)
    assert rdl.parse_text(format_reservation(reservation)) == [reservation]
    assert from_json(to_json(reservation)) == [reservation]


def _reservation(expr: AnyType, **header: AnyType) -> Reservation:
    fields = {"queue": "prod", "arrival": Absolute(datetime(2026, 11, 23, 1, tzinfo=UTC)), "deadline": Relative(3600.0)}
    return Reservation(name="r", body=expr, **{**fields, **header})


ATOM = Atom(bundle=Resources.of({"memory": 1024, "vcores": 1}), work=600.0, gang=2, lease=60.0, name="a")


def test_to_yarn_of_a_bare_atom_with_relative_deadline() -> None:
    data = to_yarn(_reservation(ATOM))
    definition = data["reservation-definition"]
    assert definition["deadline"] - definition["arrival"] == HOUR_MS
    assert definition["reservation-requests"] == {
        "reservation-request-interpreter": 1,
        "reservation-request": [{"capability": {"memory": 1024, "vCores": 1}, "num-containers": 10,
                                 "min-concurrency": 2, "duration": 60_000}]}
    assert from_yarn(data).body == All((replace(ATOM, parallelism=10, name="stage0"),))


@pytest.mark.parametrize(("reservation", "words"), [
    (_reservation(Order((Order((ATOM,)),))), "nested order"),
    (_reservation(Window(ATOM, end=Relative(60.0))), "not a window"),
    (_reservation(Order((ATOM,), gap=300.0)), "not gap=5m"),
    (_reservation(ATOM, queue=None), "has no queue"),
    (_reservation(ATOM, arrival=Relative(0.0)), "absolute arrival"),
    (_reservation(ATOM, arrival=None), "absolute arrival"),
    (_reservation(ATOM, deadline=None), "needs a deadline"),
    (_reservation(Atom(Resources.of({"memory": 1024, "vcores": 1, "gpu": 1}), work=60.0, lease=60.0)), "gpu"),
    (_reservation(Atom(Resources.of({"memory": 1024}), work=60.0, lease=60.0)), "memory and vcores exactly"),
    (_reservation(Atom(Resources.of({"memory": 1024, "vcores": 1}), work=60.0)), "no lease"),
    (_reservation(Atom(Resources.of({"memory": 1024, "vcores": 1}), work=90.0, lease=60.0)), "whole number of gangs"),
    (_reservation(Atom(Resources.of({"memory": 1024, "vcores": 1}), work=600.0, parallelism=5, lease=60.0)),
     "h=5 below its 10 containers"),
    (_reservation(Atom(Resources.of({"memory": 0.5, "vcores": 1}), work=60.0, lease=60.0)), "positive whole number"),
])
def test_to_yarn_rejects_what_yarn_cannot_say(reservation: Reservation, words: str) -> None:
    with pytest.raises(ValueError) as info:
        to_yarn(reservation)
    assert words in str(info.value)


def test_time_out_of_range() -> None:
    assert "too far in the future" in error_at(body({f"{DEF}.arrival": 10**20}), "$.reservation-definition.arrival")
    assert "must be at least 0" in error_at(body({f"{DEF}.arrival": -1}), "$.reservation-definition.arrival")
