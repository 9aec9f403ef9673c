"""Printing a tree as text or JSON and reading it back gives the same tree; bad input only ever raises RDLErrors."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given, note
from hypothesis import strategies as st

import rdl
from rdl import Absolute, All, Any, Atom, Order, Relative, Reservation, Resources, Window
from rdl.forms.jsonform import from_json, parse_json_text, to_json
from rdl.syntax.printer import format_reservations
from rdl.tree import Expr
from tests.rdl.support import FAST, ROOT, SMALL_CLUSTER

NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,10}", fullmatch=True)
RESOURCE_NAMES = st.sampled_from(["memory", "vcores", "gpu", "fpga", "disk_io", "net.bw"])

UNITS = (1, 60, 3600, 86400, 604800)
DURATION = st.one_of(
    st.integers(1, 10**7).map(float),  # whole seconds
    st.builds(lambda n, unit: n * unit, st.integers(1, 1000), st.sampled_from(UNITS)).map(float),  # `3h`
    st.builds(lambda n, unit: n * unit / 2, st.integers(1, 1000), st.sampled_from(UNITS)),  # `1.5h`
    st.integers(1, 10**6).map(lambda n: n / 8),  # simple fractions of a second
    st.floats(min_value=1e-3, max_value=3e9, allow_nan=False, allow_infinity=False),  # anything up to a century
)
OFFSET = st.one_of(st.just(0.0), DURATION)

MIB = st.one_of(
    st.integers(1, 16 * 1024 * 1024).map(float),  # whole MiB
    st.integers(1, 4096).map(lambda n: n * 1024.0),  # whole GiB
    st.integers(1, 1024 * 1024).map(lambda n: n / 1024),  # whole KiB
)
COUNT = st.one_of(st.integers(0, 4096).map(float), st.integers(1, 4096).map(lambda n: n / 4))

INSTANT = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
TIME = st.one_of(INSTANT.map(Absolute), OFFSET.map(Relative))


@st.composite
def bundles(draw: st.DrawFn) -> Resources:
    names = draw(st.lists(RESOURCE_NAMES, min_size=1, max_size=4, unique=True))
    return Resources.of({name: draw(MIB if name == "memory" else COUNT) for name in names})


@st.composite
def atoms(draw: st.DrawFn) -> Atom:
    gang = draw(st.integers(1, 64))
    parallelism = draw(st.none() | st.integers(gang, 10**5))
    return Atom(bundle=draw(bundles()), work=draw(DURATION), gang=gang, parallelism=parallelism,
                lease=draw(st.none() | DURATION), name=draw(st.none() | NAME))


def combinators(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    many = st.lists(children, min_size=1, max_size=4).map(tuple)
    name = st.none() | NAME
    return st.one_of(
        st.builds(Window, child=children, end=TIME, start=st.none() | TIME, name=name),
        st.builds(Order, children=many, gap=st.none() | st.just(0.0) | DURATION, name=name),
        st.builds(All, children=many, name=name),
        st.builds(Any, children=many, name=name),
    )


EXPR = st.recursive(atoms(), combinators, max_leaves=8)


def unique_names(node: Expr, seen: set[str]) -> Expr:
    """The tree with names after their first use dropped, as the language requires."""
    name = node.name if node.name not in seen else None
    if name is not None:
        seen.add(name)
    if isinstance(node, Atom):
        return replace(node, name=name)
    if isinstance(node, Window):
        return replace(node, name=name, child=unique_names(node.child, seen))
    return replace(node, name=name, children=tuple(unique_names(c, seen) for c in node.children))


WORD = st.one_of(NAME, st.text(st.characters(blacklist_characters="\0"), max_size=12))  # anything quoted but NUL


ZONE = st.sampled_from(["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Asia/Kolkata"])


@st.composite
def reservations(draw: st.DrawFn, name: str) -> Reservation:
    tz = draw(st.none() | ZONE)
    every = draw(st.none() | (st.integers(1, 400).map(lambda days: days * 86400.0) if tz else DURATION))
    return Reservation(
        name=name,
        body=unique_names(draw(EXPR), set()),
        user=draw(st.none() | WORD),
        queue=draw(st.none() | WORD),
        arrival=draw(st.none() | TIME),
        deadline=draw(st.none() | TIME),
        value=draw(st.just(1.0) | st.floats(min_value=0, exclude_min=True, allow_infinity=False)),
        priority=draw(st.integers(-10**6, 10**6)),
        every=every,
        tz=tz,
        placement=draw(st.sampled_from(["late", "early"])),
        pack=draw(st.none() | st.just("node")),
    )


@st.composite
def files(draw: st.DrawFn) -> list[Reservation]:
    names = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
    return [draw(reservations(name)) for name in names]


def json_round(rs: list[Reservation]) -> list[Reservation]:
    return from_json(json.loads(json.dumps([to_json(r) for r in rs])))


# -- round trips -------------------------------------------------------------------------------


@FAST
@given(files())
def test_text_round_trip(rs: list[Reservation]) -> None:
    text = format_reservations(rs)
    note(text)
    assert rdl.parse_text(text) == rs


@FAST
@given(files())
def test_json_round_trip(rs: list[Reservation]) -> None:
    assert json_round(rs) == rs


@FAST
@given(files())
def test_printing_is_canonical(rs: list[Reservation]) -> None:
    text = format_reservations(rs)
    assert format_reservations(rdl.parse_text(text)) == text
    assert format_reservations(json_round(rs)) == text


@FAST
@given(files())
def test_text_and_json_agree(rs: list[Reservation]) -> None:
    assert from_json([to_json(r) for r in rdl.parse_text(format_reservations(rs))]) == rs


@FAST
@given(st.lists(st.sampled_from([1.0, 0.5, 60.0, 90.0, 3600.0, 5400.0, 86400.0, 604800.0, 1e-05, 3155760000.0,
                                 7.5e8 + 0.5]), min_size=1))
def test_durations_print_exactly(seconds: list[float]) -> None:
    for value in seconds:
        spelt = rdl.units.format_duration(value)
        text = f"reservation r every={spelt} {{ window(e=+{spelt}, atom(b={{vcores: 1}}, w=1h)) }}"
        (r,) = rdl.parse_text(text)
        assert r.every == value
        assert r.body.end == Relative(value)  # type: ignore[union-attr]


def test_the_example_files_round_trip() -> None:
    for path in sorted((ROOT / "examples").glob("*.rdl")):
        rs = rdl.parse_text(path.read_text(), str(path))
        assert rs, path
        assert rdl.parse_text(format_reservations(rs)) == rs, path
        assert json_round(rs) == rs, path


def test_the_printed_form_is_readable() -> None:
    (r,) = rdl.parse_text(
        'reservation etl user="Ana M" queue=prod arrival=2026-11-23T07:00+01:00 deadline=+1.5h every=1w value=2.5 '
        "priority=-1 { order(x: atom(b={vcores: 1, memory: 1536}, g=2, h=4, l=90s, w=0.5d), window(e=+1h, "
        "all(atom(b={memory: 1KiB}, w=1h))), gap=0s) }")
    assert format_reservations([r]) == """\
reservation etl user="Ana M" queue=prod arrival=2026-11-23T06:00:00Z deadline=+90m value=2.5 priority=-1 every=7d {
  order(
    x: atom(b={memory: 1536MiB, vcores: 1}, g=2, h=4, l=90s, w=12h),
    window(e=+1h,
      all(
        atom(b={memory: 1KiB}, w=1h)
      )
    ),
    gap=0s
  )
}
"""


# -- bad input only ever raises RDLErrors ---------------------------------------------------------

PIECES = st.sampled_from([
    "reservation", "r", "atom", "window", "order", "all", "any", "b", "g", "h", "l", "w", "s", "e", "gap",
    "user", "queue", "arrival", "deadline", "value", "priority", "every", "memory", "vcores",
    "(", ")", "{", "}", ",", ":", "=", "#", "\n", " ", '"', "\\", "'", "+", "-", ".",
    "1", "0", "1.5h", "2GiB", "+6h", "1e400", "2026-11-23T06:00:00Z", "0001-01-01T00:00+01:00",
    "9999-12-31T23:59-01:00", "2026-13-45T99:99Z", '"\\x"', '"\\u12"', "é", "\t", "\x00",
])


def parses_or_rejects(text: str) -> list[Reservation]:
    """Parse (and, when that works, validate and round-trip); anything but RDLErrors fails the test."""
    try:
        rs = rdl.parse_text(text, "fuzz.rdl")
    except rdl.RDLErrors as errors:
        assert errors.errors
        assert all(str(e.span).startswith("fuzz.rdl") for e in errors.errors)
        errors.render()
        return []
    assert rdl.parse_text(format_reservations(rs)) == rs
    try:
        rdl.validate(rs, SMALL_CLUSTER)
    except rdl.RDLErrors as errors:
        assert errors.errors
    return rs


@FAST
@given(st.text())
def test_random_text_only_raises_rdl_errors(text: str) -> None:
    parses_or_rejects(text)


@FAST
@given(st.lists(PIECES, max_size=60).map("".join))
def test_random_token_soup_only_raises_rdl_errors(text: str) -> None:
    parses_or_rejects(text)


SEED_TEXTS = [path.read_text() for path in sorted((ROOT / "examples").glob("*.rdl"))]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A valid file with a few characters deleted, duplicated or replaced, or a piece inserted."""
    text = draw(st.sampled_from(SEED_TEXTS) | files().map(format_reservations))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i, min(len(text), i + 8)))
        operation = draw(st.sampled_from(["delete", "duplicate", "replace", "insert"]))
        if operation == "delete":
            text = text[:i] + text[j:]
        elif operation == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif operation == "replace":
            text = text[:i] + draw(st.characters()) + text[i + 1:]
        else:
            text = text[:i] + draw(PIECES) + text[i:]
    return text


@FAST
@given(mutated())
def test_mutated_files_only_raise_rdl_errors(text: str) -> None:
    parses_or_rejects(text)


def test_deep_nesting_is_an_rdl_error() -> None:
    text = "reservation r { " + "all(" * 5000 + "atom(b={vcores: 1}, w=1h)" + ")" * 5000 + " }"
    assert parses_or_rejects(text) == []


# -- JSON ----------------------------------------------------------------------------------------------

JSON_SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(
    ["1h", "+6h", "2GiB", "50", "2026-11-23T06:00:00Z", "atom", "order", "name", "expr", "1e400", "-1h"])
JSON = st.recursive(
    JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "expr", "atom", "window", "order", "all", "any", "b", "g", "h", "l", "w", "s",
                         "e", "gap", "user", "queue", "arrival", "deadline", "value", "priority", "every",
                         "memory", "vcores", "reservations"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=20,
)


def reads_or_rejects(data: object) -> list[Reservation]:
    try:
        rs = from_json(data, "fuzz.json")
    except rdl.RDLErrors as errors:
        assert errors.errors
        assert all(str(e.span).startswith("fuzz.json:$") for e in errors.errors)
        return []
    assert json_round(rs) == rs
    return rs


@FAST
@given(JSON)
def test_random_json_only_raises_rdl_errors(data: object) -> None:
    reads_or_rejects(data)


@st.composite
def mutated_json(draw: st.DrawFn) -> object:
    """A valid reservation's JSON with one value somewhere replaced or one key removed."""
    (r,) = draw(files().map(lambda rs: rs[:1]))
    data = to_json(r)
    node: object = data
    while True:
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            break
        child = node[key]  # type: ignore[index]
        if not isinstance(child, dict | list) or draw(st.booleans()):
            if isinstance(node, dict) and draw(st.booleans()):
                del node[key]
            else:
                node[key] = draw(JSON)  # type: ignore[index]
            break
        node = child
    return data


@FAST
@given(mutated_json())
def test_mutated_json_only_raises_rdl_errors(data: object) -> None:
    reads_or_rejects(data)


@FAST
@given(st.text(max_size=40))
def test_random_json_text_only_raises_rdl_errors(text: str) -> None:
    try:
        parse_json_text(text, "fuzz.json")
    except rdl.RDLErrors as errors:
        assert errors.errors


def test_json_nested_order_keeps_its_gap() -> None:
    atom = {"atom": {"b": {"vcores": 1}, "w": "1h"}}
    flat = from_json({"name": "r", "expr": {"order": [atom, atom], "gap": "5m"}})
    nested = from_json({"name": "r", "expr": {"order": {"order": [atom, atom], "gap": "5m"}}})
    assert flat == nested
    assert flat[0].body.gap == 300.0  # type: ignore[union-attr]


def test_a_bare_zero_gap_is_no_gap_in_text_and_json() -> None:
    """rdl.md writes YARN's R_ORDER_NO_GAP as `gap=0`: zero needs no unit (it is zero in every unit)."""
    (text,) = rdl.parse_text("reservation r { order(atom(b={vcores: 1}, w=1h), atom(b={vcores: 1}, w=1h), gap=0) }")
    atom = {"atom": {"b": {"vcores": 1}, "w": "1h"}}
    (number,) = from_json({"name": "r", "expr": {"order": [atom, atom], "gap": 0}})
    (string,) = from_json({"name": "r", "expr": {"order": [atom, atom], "gap": "0"}})
    assert text.body.gap == number.body.gap == string.body.gap == 0.0  # type: ignore[union-attr]
    assert text == number == string


def test_json_user_and_queue_are_taken_verbatim() -> None:
    for word in ["123", "+6h", " spaced ", "2026-11-23T06:00:00Z", "a\"b", "José"]:
        (r,) = from_json({"name": "r", "user": word, "queue": word, "expr": {"atom": {"b": {"vcores": 1}, "w": "1h"}}})
        assert r.user == r.queue == word
        assert rdl.parse_text(format_reservations([r])) == [r]


def test_deeply_nested_json_is_an_rdl_error() -> None:
    deep_expr = '{"name": "r", "expr": ' + '{"all": [' * 3000 + "{}" + "]}" * 3000 + "}"
    for text in ["[" * 100000, deep_expr]:
        try:
            parse_json_text(text, "deep.json")
        except rdl.RDLErrors as errors:
            assert str(errors.errors[0].span) == "deep.json:1:1"
        else:
            raise AssertionError("accepted")
    data: object = {"atom": {"b": {"vcores": 1}, "w": "1h"}}
    for _ in range(5000):
        data = {"all": [data]}
    assert reads_or_rejects({"name": "r", "expr": data}) == []
