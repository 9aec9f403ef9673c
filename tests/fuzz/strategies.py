"""Structure-aware generators of fuzz inputs: real files first, then mutated.

A valid reservation tree is built with `rdl.tree` and printed by the product's own printers (`rdl.syntax.printer`,
`rdl.forms.jsonform`, `rdl.forms.yarn`), so the input starts as something the product really reads; then its text
(or its decoded JSON) is mutated: tokens deleted, duplicated, swapped, numbers replaced by extreme ones, odd
unicode inserted, the bytes re-encoded. Cluster files and scenarios are written as YAML from drawn settings, kept
tiny so that planning and simulating stay short, and mutated the same way.

Every strategy yields `bytes`: the file as written to disk.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any as AnyType

from hypothesis import strategies as st

from rdl.forms.jsonform import to_json
from rdl.forms.yarn import to_yarn
from rdl.syntax.printer import format_reservations
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Relative, Reservation, Resources, TimeValue, Window

START = datetime(2026, 11, 23, tzinfo=UTC)
MiB, GiB = 1.0, 1024.0

EXTREME_NUMBERS = ("9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e308", "1e309",
                   "-1e308", "1e-308", "5e-324", "0", "-0", "-1", "0.0", "1" * 400, "9" * 400 + ".5", "nan", "inf",
                   "-inf", "1e400", "0x10", "1_000", "00001", "1.", ".5", "2147483648", "4294967296", "1e-9")
ODD_TEXT = ("\u00e9", "\u0000", "\u200b", "\ufeff", "\u202e", "\U0001f600", "\ud7ff", "\u0301", "\u2028",
            "\u00a0", "\t", "\r", "\r\n", "\\", '"', "#", "{", "}", "(", ")", ",", ":", "=", "+", "ß", "İ",
            "\u0661", "\uff11", "ｒｅｓｅｒｖａｔｉｏｎ")
WORDS = ("reservation", "atom", "window", "order", "all", "any", "b", "g", "h", "l", "w", "s", "e", "gap", "user",
         "queue", "arrival", "deadline", "value", "priority", "every", "memory", "vcores", "gpu", "GiB", "MiB",
         "TiB", "KiB", "1m", "1h", "+1h", "+6h", "2026-11-23T00:00:00Z", "2026-11-23T06:00+01:00", "null", "true")
UNITS = ("s", "m", "h", "d", "w")
TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_.\-]*|[+\-]?\d[\w.:+\-]*|\"(?:[^\"\\]|\\.)*\"|.", re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?")

names = st.one_of(st.sampled_from(("a", "b", "stage", "x_1", "load.v2", "m-3", "_")),
                  st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,6}", fullmatch=True))
words = st.one_of(names, st.text(min_size=1, max_size=6), st.sampled_from(("ops team", 'say "hi"', "a\\b", "é")))


# --- values ------------------------------------------------------------------------------------------------------

def durations(low: int = 1, high: int = 4 * 3600) -> st.SearchStrategy[float]:
    """Seconds, mostly whole minutes, sometimes odd."""
    return st.one_of(st.integers(low // 60 or 1, max(1, high // 60)).map(lambda m: 60.0 * m),
                     st.integers(low, high).map(float),
                     st.sampled_from((0.5, 1.5, 90.0, 1e-3, 86400.0 * 30)))


# Shapes that found issue #29: years outside 1970-9000 (stored unpadded, or past the calendar), periods too long
# for a timedelta, a series arriving long before the clock (its past enumerated), YAML nested thousands deep.
EXTREME_YEARS = (1, 999, 1000, 1969, 1970, 9000, 9001, 9999)
HUGE_SECONDS = (36525 * 86400.0, 36526 * 86400.0, 99999999999 * 86400.0, 1e300 * 3600, 4294967296 * 3600.0)
DEEP = (99, 100, 101, 600, 5000)


def extreme_times() -> st.SearchStrategy[TimeValue]:
    """Absolute times at and beyond the ends of the years the planner keeps."""
    return st.builds(lambda year, day: Absolute(datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=day)),
                     st.sampled_from(EXTREME_YEARS), st.sampled_from((0, 150, 364)))


def times() -> st.SearchStrategy[TimeValue]:
    relative = durations(0, 2 * 86400).map(Relative)
    absolute = st.integers(-3600, 3 * 86400).map(lambda s: Absolute(START + timedelta(seconds=s)))
    return st.one_of(relative, absolute, absolute, relative, extreme_times(), st.sampled_from(HUGE_SECONDS).map(
        Relative))


def deep_yaml(draw: st.DrawFn) -> str:
    """A YAML value nested very deep, as a flow sequence, a flow mapping or block mappings."""
    n, shape = draw(st.sampled_from(DEEP)), draw(st.sampled_from(("flow", "mapping", "block")))
    if shape == "flow":
        return "[" * n + "]" * n
    if shape == "mapping":
        return "{a: " * n + "1" + "}" * n
    return "".join(f"\n{'  ' * (i + 1)}a:" for i in range(min(n, 600))) + " 1"


@st.composite
def bundles(draw: st.DrawFn) -> Resources:
    values: dict[str, float] = {}
    if draw(st.integers(0, 9)) != 0:
        values["memory"] = draw(st.one_of(st.sampled_from((512 * MiB, GiB, 2 * GiB, 8 * GiB, 64 * GiB)),
                                          st.floats(0, 64 * GiB, allow_nan=False), st.integers(0, 10**6)))
    if draw(st.booleans()):
        values["vcores"] = draw(st.one_of(st.integers(0, 8), st.integers(0, 200)))
    if draw(st.integers(0, 5)) == 0:
        values["gpu"] = draw(st.integers(0, 9))
    if draw(st.integers(0, 20)) == 0:
        values[draw(names)] = 1
    return Resources.of(values)


@st.composite
def atoms(draw: st.DrawFn) -> Atom:
    lease = draw(st.one_of(st.none(), durations(1, 3 * 3600)))
    gang = draw(st.sampled_from((1, 1, 1, 2, 4, 8, 0, 64)))
    parallelism = draw(st.one_of(st.none(), st.none(), st.integers(0, 40)))
    if parallelism is not None and gang > parallelism and draw(st.integers(0, 4)) != 0:
        parallelism = gang
    return Atom(bundle=draw(bundles()), work=draw(durations(1, 50 * 3600)), gang=gang, parallelism=parallelism,
                lease=lease, name=draw(st.one_of(st.none(), st.none(), st.none(), names)))


def exprs(max_leaves: int = 6) -> st.SearchStrategy[Expr]:
    def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        many = st.lists(children, min_size=1, max_size=3).map(tuple)
        named = st.one_of(st.none(), st.none(), st.none(), names)
        return st.one_of(
            st.builds(Window, child=children, end=times(), start=st.one_of(st.none(), times()), name=named),
            st.builds(Order, children=many, gap=st.one_of(st.none(), st.just(0.0), durations(0, 3600)), name=named),
            st.builds(All, children=many, name=named),
            st.builds(Any, children=many, name=named),
        )
    return st.recursive(atoms(), extend, max_leaves=max_leaves)


@st.composite
def reservations(draw: st.DrawFn, index: int = 0) -> Reservation:
    return Reservation(
        name=draw(st.one_of(st.just(f"r{index}"), names)),
        body=draw(exprs()),
        user=draw(st.one_of(st.none(), words)),
        queue=draw(st.one_of(st.none(), words)),
        arrival=draw(st.one_of(st.none(), times())),
        deadline=draw(st.one_of(st.none(), st.none(), times())),
        value=draw(st.one_of(st.just(1.0), st.just(1.0), st.floats(0.01, 100), st.just(1.0),
                             st.sampled_from((0.0, -1.0, 1e300)) if draw(st.integers(0, 9)) == 0 else st.just(2.0))),
        priority=draw(st.one_of(st.just(0), st.integers(-5, 5))),
        every=draw(st.one_of(st.none(), st.none(), st.none(), durations(60, 2 * 86400),
                             st.sampled_from(HUGE_SECONDS))),
    )


@st.composite
def reservation_lists(draw: st.DrawFn) -> list[Reservation]:
    count = draw(st.integers(1, 3))
    return [draw(reservations(i)) for i in range(count)]


# --- mutation -----------------------------------------------------------------------------------------------------

@st.composite
def mutated_text(draw: st.DrawFn, text: str, max_mutations: int = 4) -> str:
    """Text with a few token-level mutations (or none: the valid input is tried too)."""
    tokens = TOKEN.findall(text)
    for _ in range(draw(st.integers(0, max_mutations))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(("delete", "duplicate", "swap", "number", "odd", "word", "number", "truncate")))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "number":
            numeric = [k for k, t in enumerate(tokens) if NUMBER.match(t.lstrip("+"))]
            if numeric:
                k = draw(st.sampled_from(numeric))
                extreme = draw(st.sampled_from(EXTREME_NUMBERS))
                tokens[k] = NUMBER.sub(extreme, tokens[k], count=1) if draw(st.booleans()) else extreme
        elif op == "odd":
            tokens.insert(i, draw(st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=3))))
        elif op == "word":
            tokens[i] = draw(st.sampled_from(WORDS))
        elif op == "truncate":
            tokens = tokens[:i]
    return "".join(tokens)


@st.composite
def encoded(draw: st.DrawFn, text: str) -> bytes:
    """The text's bytes: UTF-8 mostly; sometimes with a BOM, in another encoding, or with a stray byte."""
    how = draw(st.sampled_from(("utf-8",) * 8 + ("bom", "utf-16", "latin-1", "stray", "crlf")))
    if how == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass")
    if how == "utf-16":
        return text.encode("utf-16", "surrogatepass")
    if how == "latin-1":
        return text.encode("latin-1", "replace")
    data = text.encode("utf-8", "surrogatepass")
    if how == "crlf":
        return data.replace(b"\n", b"\r\n")
    if how == "stray":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.sampled_from((b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"))) + data[at:]
    return data


@st.composite
def mutated_bytes(draw: st.DrawFn, text: str) -> bytes:
    return draw(encoded(draw(mutated_text(text))))


# --- RDL text and JSON ----------------------------------------------------------------------------------------------

@st.composite
def rdl_text(draw: st.DrawFn) -> bytes:
    text = format_reservations(draw(reservation_lists()))
    special = draw(st.sampled_from(("none",) * 8 + ("deep", "wide", "old series")))
    if special == "old series":  # a series arriving long before the clock: its past must not be enumerated
        year, every = draw(st.sampled_from((1970, 2000, 1))), draw(st.sampled_from(("1m", "12h", "1d")))
        text = (f"reservation old arrival={year:04d}-01-01T00:00:00Z every={every} {{\n"
                "  atom(b={vcores: 1}, w=1m)\n}\n")
    elif special == "deep":  # a legal-looking tree nested very deep
        n = draw(st.sampled_from((99, 100, 101, 300, 1000, 5000)))
        op = draw(st.sampled_from(("all", "any", "order")))
        text = "reservation deep {\n  " + f"{op}(" * n + "atom(b={vcores: 1}, w=1m)" + ")" * n + "\n}\n"
    elif special == "wide":  # many siblings, or many reservations
        n = draw(st.sampled_from((100, 1000)))
        op = draw(st.sampled_from(("all", "any", "order")))
        text = "reservation wide {\n  " + f"{op}(" + ", ".join(["atom(b={vcores: 1}, w=1m)"] * n) + ")\n}\n"
    return draw(mutated_bytes(text))


@st.composite
def mutated_json(draw: st.DrawFn, value: AnyType, depth: int = 0) -> AnyType:
    """Decoded JSON with a few structural mutations: keys dropped or renamed, values replaced by odd ones."""
    if isinstance(value, dict) and value:
        out = dict(value)
        if draw(st.integers(0, 6)) == 0:
            del out[draw(st.sampled_from(sorted(out)))]
        if draw(st.integers(0, 8)) == 0:
            out[draw(st.sampled_from(("expr", "atom", "name", "q", "all", "gap", "window")))] = draw(odd_json())
        return {k: draw(mutated_json(v, depth + 1)) for k, v in out.items()}
    if isinstance(value, list):
        out_list = [draw(mutated_json(v, depth + 1)) for v in value]
        if out_list and draw(st.integers(0, 8)) == 0:
            out_list.append(out_list[0])
        return out_list
    if draw(st.integers(0, 12)) == 0:
        return draw(odd_json())
    return value


def odd_json() -> st.SearchStrategy[AnyType]:
    scalars = st.one_of(st.none(), st.booleans(), st.sampled_from((0, -1, 2**63 - 1, 2**63, 10**400, 1e308, -0.0)),
                        st.sampled_from(("", "1e309", "nan", "+1h", "5", "2026-11-23T00:00:00Z", "1" * 400, "é")),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5))
    return st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=2),
                                                     st.dictionaries(st.text(max_size=3), c, max_size=2)),
                        max_leaves=4)


def _dumps(value: AnyType) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


@st.composite
def json_text(draw: st.DrawFn) -> bytes:
    forms = [to_json(r) for r in draw(reservation_lists())]
    shape = draw(st.sampled_from(("one", "list", "wrapped")))
    value: AnyType = forms[0] if shape == "one" else forms if shape == "list" else {"reservations": forms}
    value = draw(mutated_json(value))
    text = _dumps(value)
    special = draw(st.sampled_from(("none",) * 6 + ("deep", "deep_expr", "repeat")))
    if special == "deep":
        n = draw(st.sampled_from((200, 999, 1000, 1001, 5000)))
        text = "[" * n + text + "]" * n
    elif special == "deep_expr":  # a legal-looking tree nested very deep
        n = draw(st.sampled_from((100, 500, 1000, 3000)))
        atom = '{"atom": {"b": {"memory": "1GiB"}, "w": "1m"}}'
        text = '{"name": "deep", "expr": ' + '{"all": [' * n + atom + "]}" * n + "}"
    elif special == "repeat":  # a repeated key: `"name": ...` given twice
        text = text.replace('"name":', '"name": "dup", "name":', 1)
    return draw(mutated_bytes(text) if draw(st.integers(0, 3)) == 0 else encoded(text))


# --- YARN ---------------------------------------------------------------------------------------------------------

@st.composite
def yarn_reservations(draw: st.DrawFn) -> Reservation:
    """A YARN-shaped reservation: queue, absolute arrival, deadline, atoms of memory and vcores in whole gangs."""
    def stage(i: int) -> Atom:
        lease = 60.0 * draw(st.integers(1, 120))
        gang = draw(st.integers(1, 8))
        containers = gang * draw(st.integers(1, 20))
        bundle = Resources.of({"memory": float(draw(st.sampled_from((512, 1024, 2048, 4096, 8192)))),
                               "vcores": float(draw(st.integers(1, 8)))})
        return Atom(bundle=bundle, work=lease * containers, gang=gang,
                    parallelism=draw(st.sampled_from((None, containers))), lease=lease)
    stages = tuple(stage(i) for i in range(draw(st.integers(1, 4))))
    if len(stages) == 1 and draw(st.booleans()):
        body: Expr = stages[0]
    else:
        shapes: list[Expr] = [All(stages), Any(stages), Order(stages), Order(stages, gap=0.0)]
        body = draw(st.sampled_from(shapes))
    arrival = START + timedelta(minutes=draw(st.integers(0, 600)))
    deadline = draw(st.one_of(st.integers(1, 48 * 60).map(lambda m: Relative(60.0 * m)),
                              st.integers(1, 48 * 60).map(lambda m: Absolute(arrival + timedelta(minutes=m)))))
    return Reservation(name=draw(names), body=body, queue=draw(st.sampled_from(("prod", "default", "a.b"))),
                       arrival=Absolute(arrival), deadline=deadline, priority=draw(st.integers(-3, 3)),
                       every=draw(st.sampled_from((None, None, 86400.0, 3600.0))))


@st.composite
def yarn_text(draw: st.DrawFn) -> bytes:
    body = to_yarn(draw(yarn_reservations()), draw(st.sampled_from((None, "reservation_1795388400000_0042"))))
    body = draw(mutated_json(body))
    text = _dumps(body)
    return draw(mutated_bytes(text) if draw(st.integers(0, 3)) == 0 else encoded(text))


# --- cluster files ------------------------------------------------------------------------------------------------

def _vector(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in values.items()) + "}"


memory_values = st.sampled_from(("64GiB", "512GiB", "1TiB", "2048", "8Gi", "16GB", "1MiB", "0.5TiB"))
count_values = st.sampled_from(("1", "4", "32", "128", "1000"))


@st.composite
def cluster_yaml_text(draw: st.DrawFn) -> str:
    lines = []
    start = draw(st.sampled_from(("2026-11-23T00:00:00Z", "2026-11-23T08:00:00+01:00", "2026-11-23T00:00Z")))
    lines.append(f"start: {start}")
    step = draw(st.sampled_from(("1m", "1m", "5m", "30s", "1h", None)))
    if step:
        lines.append(f"step: {step}")
    horizon = draw(st.sampled_from(("1d", "2d", "6h", "90m", None)))
    if horizon:
        lines.append(f"horizon: {horizon}")
    resources = {"memory": draw(memory_values), "vcores": draw(count_values)}
    if draw(st.booleans()):
        resources["gpu"] = draw(st.sampled_from(("1", "4", "16")))
    if draw(st.booleans()):
        lines.append(f"capacity: {_vector(resources)}")
    else:
        lines.append("nodes:")
        for i in range(draw(st.integers(1, 3))):
            group = {"name": f"n{i}", "count": draw(st.sampled_from(("1", "4", "16")))} | resources
            lines.append(f"  - {_vector(group)}")
    changes = draw(st.integers(0, 2))
    if changes:
        lines.append("changes:")
        for _ in range(changes):
            at = draw(st.sampled_from(("+1h", "+3h", "+1d", "2026-11-23T06:00:00Z")))
            change = {"vcores": draw(count_values)} if draw(st.booleans()) else {"memory": draw(memory_values)}
            lines.append(f"  - {{at: {at}, capacity: {_vector(change)}}}")
    special = draw(st.sampled_from(("none",) * 6 + ("year", "deep", "dense")))
    if special == "year":
        lines[0] = f"start: {draw(st.sampled_from(EXTREME_YEARS)):04d}-01-01T00:00:00Z"
    elif special == "deep":
        lines.append(f"{draw(st.sampled_from(('changes', 'capacity', 'policies', 'x')))}: {deep_yaml(draw)}")
    elif special == "dense":  # recurring changes every few seconds: planning must not slow to a crawl
        lines.append("changes:")
        lines += [f"  - {{at: +{i}s, every: 2s, for: 1s, capacity: {{vcores: 1}}}}" for i in range(1, 11)]
    if draw(st.integers(0, 2)) == 0:
        lines += ["policies:", "  user_limits:", f"    instantaneous: {draw(st.sampled_from(('50%', '0.5', '100%')))}"]
        if draw(st.booleans()):
            lines += ["    average: 25%", f"    window: {draw(st.sampled_from(('1h', '2m', '24h')))}"]
        if draw(st.booleans()):
            lines += ["    users:", "      u: {instantaneous: 80%}", "      ops: {instantaneous: null}"]
    return "\n".join(lines) + "\n"


@st.composite
def cluster_text(draw: st.DrawFn) -> bytes:
    return draw(mutated_bytes(draw(cluster_yaml_text())))


# --- scenarios ----------------------------------------------------------------------------------------------------

@st.composite
def scenario_yaml_text(draw: st.DrawFn) -> str:
    """A tiny synthetic scenario: a few small nodes, a handful of short jobs, an hour or two at most."""
    lines = [f"name: {draw(names)}", f"seed: {draw(st.integers(0, 5))}", "start: 2026-11-23T00:00:00Z",
             f"duration: {draw(st.sampled_from(('30m', '1h', '2h')))}",
             f"agent: {draw(st.sampled_from(('none', 'gree', 'gree-l')))}",
             f"policy: {draw(st.sampled_from(('fifo', 'fair', 'drf', 'stateaware')))}",
             "cluster:", "  nodes:"]
    for i in range(draw(st.integers(1, 2))):
        lines.append(f"    - {{name: w{i}, count: {draw(st.integers(1, 3))}, memory: 8GiB, vcores: 4}}")
    lines += ["  step: 1m", f"  horizon: {draw(st.sampled_from(('6h', '1d')))}"]
    if draw(st.booleans()):
        lines += ["  failures:", "    events:", f"      - {{node: w0-0, at: {draw(st.sampled_from(('5m', '20m')))}, "
                  "repair: 10m}"]
    lines.append("workload:")
    if draw(st.integers(0, 3)) == 0:
        lines.append(f"  synthetic: {{jobs: {draw(st.integers(0, 4))}, rate: 30, production: 0.5}}")
    else:
        lines.append("  jobs:")
        for j in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(("production", "best_effort")))
            extra = (f", declared: {draw(st.sampled_from(('5m', '10m')))}, deadline: "
                     f"{draw(st.sampled_from(('20m', '40m')))}") if kind == "production" else ""
            lines.append(f"    - {{id: j{j}, user: u{j % 2}, submit: {draw(st.sampled_from(('0s', '1m', '5m')))}, "
                         f"kind: {kind}, driver: {{memory: 1GiB, vcores: 1}}, executors: {draw(st.integers(0, 3))}, "
                         f"executor: {{memory: 2GiB, vcores: 1}}, runtime: {draw(st.sampled_from(('5m', '10m')))}"
                         f"{extra}}}")
    if draw(st.integers(0, 9)) == 0:
        lines.append(f"notes: {deep_yaml(draw)}")
    if draw(st.booleans()):
        lines += ["follower:", "  plan_queue: root.plan", f"  on_expiry: {draw(st.sampled_from(('move', 'kill')))}",
                  f"  round_steps: {draw(st.integers(1, 3))}"]
    return "\n".join(lines) + "\n"


@st.composite
def scenario_text(draw: st.DrawFn) -> bytes:
    return draw(mutated_bytes(draw(scenario_yaml_text())))


INPUTS = {"rdl": rdl_text, "json": json_text, "yarn": yarn_text, "cluster": cluster_text, "scenario": scenario_text}
