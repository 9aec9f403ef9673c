"""Bad input is rejected whole, every error names its `FILE:LINE:COL` and says what was expected (spec: Errors)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import rdl
from rdl.errors import shown
from rdl.forms.jsonform import from_json, parse_json_text
from tests.rdl.support import EXAMPLE_CLUSTER, FILE, errors_of, parse_and_validate

B = "b={memory: 1GiB, vcores: 1}"


@dataclass(frozen=True)
class Bad:
    """A bad input and the one error it must give: where, words the message holds, and the hint if any."""

    id: str
    text: str
    at: str  # "LINE:COL"
    words: tuple[str, ...]
    hint: str | None = None


def case(id: str, text: str, at: str, *words: str, hint: str | None = None) -> Bad:
    return Bad(id, text, at, words, hint)


# The column comments count from 1; `r { ` puts a body's first token at column 17.
SYNTAX = [
    case("misspelt combinator", f"reservation r {{ atm({B}, w=1h) }}",
         "1:17", "expected an expression", "`atm`", hint="did you mean `atom`?"),
    case("misspelt window", f"reservation r {{ windw(e=+1h, atom({B}, w=1h)) }}",
         "1:17", "`windw`", hint="did you mean `window`?"),
    case("unknown header attribute", f"reservation r dedline=+6h {{ atom({B}, w=1h) }}",
         "1:15", "unknown header attribute `dedline`", "user, queue, arrival, deadline",
         hint="did you mean `deadline`?"),
    case("missing close paren", f"reservation r {{\n  atom({B}, w=1h\n}}\n",
         "3:1", "`atom(...)`", "closed by `)`", "got `}`"),
    case("missing close brace", f"reservation r {{\n  atom({B}, w=1h)\n",
         "3:1", "ends with `}`", "the end of the file"),
    case("missing comma between arguments", f"reservation r {{ atom({B} w=1h) }}",
         "1:50", "separated by `,`", "got `w`"),
    case("missing comma between children", f"reservation r {{ all(atom({B}, w=1h)\n  atom({B}, w=1h)) }}",
         "2:3", "arguments of `all(...)`", "separated by `,`", "got `atom`"),
    case("missing comma in a resource vector", "reservation r { atom(b={memory: 1GiB vcores: 1}, w=1h) }",
         "1:38", "resource entries are separated by `,`", "got `vcores`"),
    case("missing colon in a resource vector", "reservation r { atom(b={memory 1GiB}, w=1h) }",
         "1:32", "resource `memory` needs `:`", "got `1GiB`"),
    case("missing open brace", f"reservation r user=alice atom({B}, w=1h) }}",
         "1:26", "body of a reservation starts with `{`", "`atom(`"),
    case("missing reservation name", f"reservation {{ atom({B}, w=1h) }}",
         "1:13", "needs a name after `reservation`", "got `{`"),
    case("misspelt reservation keyword", f"reservaton r {{ atom({B}, w=1h) }}",
         "1:1", "unexpected `reservaton`", hint="did you mean `reservation`?"),
    case("two expressions in a body", f"reservation r {{\n  atom({B}, w=1h)\n  atom({B}, w=1h)\n}}",
         "3:3", "holds one expression", hint="wrap several pieces in `all(...)` or `order(...)`"),
    case("single quotes", f"reservation r user='alice' {{ atom({B}, w=1h) }}",
         "1:20", "unexpected character `'`", hint="strings go in double quotes"),
    case("stray character", f"reservation r {{ atom({B}, w=1h); }}",
         "1:56", "unexpected character `;`"),
    case("missing value", f"reservation r {{ atom({B}, w=) }}",
         "1:53", "`w=` needs a value", "got `)`"),
]

# Errors in values: the parse goes on and reports them all together.
VALUES = [
    case("bare number duration", f"reservation r {{ atom({B}, w=50) }}",
         "1:53", "`50` needs a unit for a duration", hint=None),
    case("bare number lease", f"reservation r {{ atom({B}, l=30, w=1h) }}",
         "1:53", "`l`", "needs a unit", "did you mean `30m`?"),
    case("unknown duration unit", f"reservation r {{ atom({B}, l=5min, w=1h) }}",
         "1:53", "unknown duration unit `min`", "s, m, h, d, w"),
    case("unknown memory unit", "reservation r { atom(b={memory: 2Gb}, w=1h) }",
         "1:33", "unknown memory unit `Gb`", "KiB, MiB, GiB or TiB"),
    case("unit on a count", "reservation r { atom(b={vcores: 2GiB}, w=1h) }",
         "1:33", "`vcores` is a count", "no unit"),
    case("missing work", f"reservation r {{\n  load: atom({B}, h=10)\n}}",
         "2:3", "`atom` needs its work `w`", hint="bundle-time as a duration, such as `w=50h`"),
    case("missing bundle", "reservation r { atom(h=10, w=1h) }",
         "1:17", "`atom` needs a bundle `b={...}`", hint="for example `b={memory: 2GiB, vcores: 1}`"),
    case("negative work", f"reservation r {{ atom({B}, w=-1h) }}",
         "1:53", "`w` must be positive", "`-1h`"),
    case("zero lease", f"reservation r {{ atom({B}, l=0s, w=1h) }}",
         "1:53", "`l` must be positive"),
    case("bare zero lease", f"reservation r {{ atom({B}, l=0, w=1h) }}",
         "1:53", "`l` must be positive", "`0`"),
    case("negative memory", "reservation r { atom(b={memory: -2GiB}, w=1h) }",
         "1:33", "`memory` cannot be negative", "`-2GiB`"),
    case("negative parallelism", f"reservation r {{ atom({B}, h=-3, w=1h) }}",
         "1:53", "`h` must be at least 1", "`-3`"),
    case("negative gap", f"reservation r {{ order(atom({B}, w=1h), gap=-5m) }}",
         "1:68", "`gap` must be zero or more"),
    case("non-integer gang", f"reservation r {{ atom({B}, g=1.5, w=1h) }}",
         "1:53", "`g` must be a whole number", "`1.5`"),
    case("non-integer priority", f"reservation r priority=1.5 {{ atom({B}, w=1h) }}",
         "1:24", "`priority` must be a whole number"),
    case("zero value", f"reservation r value=0 {{ atom({B}, w=1h) }}",
         "1:21", "`value` must be positive", "a positive number"),
    case("unit on a plain number", f"reservation r value=5h {{ atom({B}, w=1h) }}",
         "1:21", "`value` is a plain number and takes no unit"),
    case("time without a zone", f"reservation r arrival=2026-11-23T06:00:00 {{ atom({B}, w=1h) }}",
         "1:23", "is not a time", "with a zone"),
    case("relative time without plus", f"reservation r deadline=6h {{ atom({B}, w=1h) }}",
         "1:24", "`deadline` is a time, got `6h`", hint="did you mean `+6h`?"),
    case("bare number as a time", f"reservation r deadline=60 {{ atom({B}, w=1h) }}",
         "1:24", "`deadline` is a time, got `60`", hint="did you mean `+60m`?"),
    case("impossible date", f"reservation r arrival=2026-13-45T00:00:00Z {{ atom({B}, w=1h) }}",
         "1:23", "not a valid time", "month"),
    case("name as a duration", f"reservation r {{ atom({B}, w=long) }}",
         "1:53", "`w` is a duration, got `long`", "a number with a unit"),
    case("unknown atom argument", f"reservation r {{ atom({B}, gg=2, w=1h) }}",
         "1:51", "`atom` has no argument `gg`", "b, g, h, l, w", hint="did you mean `g`?"),
    case("gap on all", f"reservation r {{ all(atom({B}, w=1h), gap=1m) }}",
         "1:62", "`all` has no argument `gap`"),
    case("window without end", f"reservation r {{ window(s=+1h, atom({B}, w=1h)) }}",
         "1:17", "`window` needs its end `e=`", hint="for example `e=+6h`"),
    case("window with two expressions", f"reservation r {{ window(e=+1h, atom({B}, w=1h), atom({B}, w=1h)) }}",
         "1:17", "`window` wraps exactly one expression, got 2", hint="wrap several in `all(...)`"),
    case("empty order", "reservation r { order() }",
         "1:17", "`order` needs at least one expression"),
    case("empty resource vector", "reservation r { atom(b={}, w=1h) }",
         "1:22", "`b` is an empty resource vector", "at least one resource"),
    case("resource given twice", "reservation r { atom(b={vcores: 1, vcores: 2}, w=1h) }",
         "1:36", "resource `vcores` is given twice"),
    case("argument given twice", f"reservation r {{ atom({B}, w=1h, w=2h) }}",
         "1:57", "`w` is given twice"),
    case("header attribute given twice", f"reservation r user=a user=b {{ atom({B}, w=1h) }}",
         "1:22", "header attribute `user` is given twice"),
    case("too large a number", f"reservation r {{ atom({B}, g=1e400, w=1h) }}",
         "1:53", "`1e400` is too large"),
    case("vector for a scalar", f"reservation r {{ atom({B}, g={{vcores: 1}}, w=1h) }}",
         "1:51", "`g` takes a single value, not a resource vector"),
]

# Semantic errors, found by validation against SMALL_CLUSTER (64 GiB, 32 vcores, 4 GPUs, 1-minute steps).
SEMANTIC = [
    case("gang larger than parallelism", f"reservation r {{\n  solve: atom({B}, g=8, h=4, w=8h)\n}}",
         "2:3", "`solve` has gang g=8 larger than its parallelism h=4", hint="a gang of g bundles must fit under h"),
    case("lease longer than its window", f"reservation r {{\n  window(e=+1h,\n    a: atom({B}, l=2h, w=2h))\n}}",
         "3:5", "atom `a` has leases of 2h, longer than its window (1h)"),
    case("lease longer than the deadline", f"reservation r deadline=+30m {{ atom({B}, l=45m, w=45m) }}",
         "1:31", "atom `0` has leases of 45m", "longer than its window (30m)"),
    case("order cannot fit its window",
         f"reservation r {{\n  window(e=+1h, order(\n    x: atom({B}, l=40m, w=40m),\n"
         f"    y: atom({B}, l=40m, w=40m)))\n}}",
         "2:3", "window `0`", "is 1h long", "needs at least 80m", "even on an empty cluster",
         "critical path: x → y"),
    case("order cannot fit its deadline",
         f"reservation late deadline=+1h {{ order(atom({B}, l=40m, w=40m), atom({B}, l=40m, w=40m)) }}",
         "1:1", "needs at least 80m", "critical path: 0.0 → 0.1"),
    case("bundle larger than the cluster", "reservation r {\n  big: atom(b={memory: 128GiB, vcores: 1}, w=1h)\n}",
         "2:3", "atom `big` has a bundle larger than the cluster", "memory 128GiB > 64GiB"),
    case("gang larger than the cluster", "reservation r { mpi: atom(b={memory: 16GiB}, g=8, h=8, l=1h, w=8h) }",
         "1:17", "atom `mpi` has a gang of 8 bundles, larger than the cluster holds at once",
         hint="lower g or the bundle size"),
    case("unknown resource", "reservation r { atom(b={memory: 1GiB, gpus: 1}, w=1h) }",
         "1:17", "asks for `gpus`, which the cluster lacks", "one of gpu, memory, vcores",
         hint="did you mean `gpu`?"),
    case("duplicate child names", f"reservation r {{\n  order(\n    a: atom({B}, w=1h),\n    a: atom({B}, w=1h))\n}}",
         "4:5", "name `a` is used twice in reservation `r`", "first at bad.rdl:3:5",
         hint="names are unique within a reservation"),
    case("duplicate names across levels", f"reservation r {{ a: all(b: atom({B}, w=1h), a: atom({B}, w=1h)) }}",
         "1:68", "name `a` is used twice"),
    case("duplicate reservation names",
         f"reservation r {{ atom({B}, w=1h) }}\nreservation r {{ atom({B}, w=2h) }}\n",
         "2:1", "reservation `r` is defined twice", "first at bad.rdl:1:1",
         hint="reservation names are unique within a file"),
    case("window ends before it starts", f"reservation r {{ window(s=+2h, e=+1h, atom({B}, w=1h)) }}",
         "1:17", "window `0` ends (2026-11-23T01:00:00Z) at or before it starts (2026-11-23T02:00:00Z)"),
    case("absolute window ends before it starts",
         f"reservation r {{ w: window(s=2026-11-24T00:00:00Z, e=2026-11-23T12:00:00Z, atom({B}, w=1h)) }}",
         "1:17", "window `w` ends", "at or before it starts"),
    case("deadline before arrival",
         f"reservation r arrival=2026-11-23T06:00:00Z deadline=2026-11-23T05:00:00Z {{ atom({B}, w=1h) }}",
         "1:53", "deadline 2026-11-23T05:00:00Z at or before its arrival 2026-11-23T06:00:00Z"),
    case("no alternative of any fits",
         "reservation r {\n  pick: any(\n    atom(b={memory: 128GiB}, w=1h),\n    atom(b={gpu: 8}, w=1h))\n}",
         "2:3", "none of the alternatives of `any` `pick` could ever fit", "memory 128GiB > 64GiB", "gpu 8 > 4"),
    case("bundle of nothing", "reservation r { atom(b={vcores: 0}, w=1h) }",
         "1:17", "has a bundle of nothing", "some resource above zero"),
    case("window shorter than a step", f"reservation r {{ window(s=+10s, e=+50s, atom({B}, l=1s, w=1s)) }}",
         "1:17", "shorter than one plan step (1m)"),
    case("window outside its enclosing window",
         f"reservation r {{ window(e=+1h, inner: window(s=+2h, e=+3h, atom({B}, w=1h))) }}",
         "1:31", "window `inner` lies outside its enclosing window"),
    case("windows contradict the order",
         f"reservation r {{ order(window(s=+2h, e=+3h, atom({B}, w=1h)), window(e=+1h, atom({B}, w=1h))) }}",
         "1:1", "reservation `r` can never be placed", "even on an empty cluster"),
    case("time beyond the calendar",
         f"reservation r arrival=8999-12-01T00:00:00Z deadline=+36000d {{ atom({B}, w=1h) }}",
         "1:1", "time outside the calendar"),
]

ALL_CASES = [*SYNTAX, *VALUES, *SEMANTIC]


def test_there_are_many_distinct_bad_inputs() -> None:
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES) >= 30
    assert len({c.text for c in ALL_CASES}) == len(ALL_CASES)


@pytest.mark.parametrize("bad", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_each_error_names_its_place_and_says_what_was_expected(bad: Bad) -> None:
    errors = errors_of(bad.text)
    assert len(errors.errors) == 1, errors.render()
    (error,) = errors.errors
    assert str(error.span) == f"{FILE}:{bad.at}", errors.render()
    for word in bad.words:
        assert word in error.headline(), f"{word!r} not in {error.headline()!r}"
    if bad.hint is not None:
        assert error.hint is not None and bad.hint in error.hint, error.headline()
    assert str(errors).startswith(f"{FILE}:{bad.at}: ")


@pytest.mark.parametrize("bad", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_render_points_a_caret_at_the_column(bad: Bad) -> None:
    errors = errors_of(bad.text)
    rendered = errors.render().splitlines()
    line, col = map(int, bad.at.split(":"))
    assert rendered[0] == errors.errors[0].headline()
    source_lines = bad.text.splitlines()
    if line > len(source_lines):  # the end of a file that ends with a newline: nothing to point at
        assert len(rendered) == 1
        return
    assert rendered[1] == "    " + source_lines[line - 1]
    assert rendered[2] == "    " + " " * (col - 1) + "^"


# -- every error of a file, together ------------------------------------------------------------


def test_two_bad_reservations_are_both_reported() -> None:
    text = (f"reservation a {{ atom({B}, g=4, h=2, w=1h) }}\n"
            "reservation b { atom(b={memory: 128GiB}, w=1h) }\n")
    errors = errors_of(text)
    assert [str(e.span) for e in errors.errors] == [f"{FILE}:1:17", f"{FILE}:2:17"]
    assert "parallelism" in errors.errors[0].message
    assert "larger than the cluster" in errors.errors[1].message


def test_two_semantic_errors_in_one_reservation_are_both_reported() -> None:
    text = ("reservation r {\n  all(\n    a: atom(b={memory: 1GiB}, g=4, h=2, w=1h),\n"
            "    b: atom(b={memory: 1GiB, disk: 1}, w=1h))\n}\n")
    errors = errors_of(text)
    assert [(str(e.span), e.message.split(" ")[1]) for e in errors.errors] == [
        (f"{FILE}:3:5", "`a`"), (f"{FILE}:4:5", "`b`")]


def test_errors_inside_a_window_that_ends_before_it_starts_are_still_reported() -> None:
    text = f"reservation r {{\n  window(s=+2h, e=+1h,\n    atom({B}, g=4, h=2, w=1h))\n}}"
    errors = errors_of(text)
    assert [str(e.span) for e in errors.errors] == [f"{FILE}:2:3", f"{FILE}:3:5"]


def test_errors_inside_a_reservation_whose_deadline_precedes_arrival_are_still_reported() -> None:
    text = f"reservation r deadline=+0s {{\n  dup: all(atom({B}, w=1h), dup: atom({B}, g=2, h=1, w=1h))\n}}"
    messages = [e.message for e in errors_of(text).errors]
    assert len(messages) == 3
    assert "deadline" in messages[0] and "used twice" in messages[1] and "parallelism" in messages[2]


def test_duplicate_names_and_fit_errors_are_reported_together() -> None:
    text = (f"reservation r {{ window(e=+1h, order(x: atom({B}, l=40m, w=40m),\n"
            f"  x: atom({B}, l=40m, w=40m))) }}")
    errors = errors_of(text)
    assert [str(e.span) for e in errors.errors] == [f"{FILE}:1:17", f"{FILE}:2:3"]
    assert "needs at least 80m" in errors.errors[0].message
    assert "used twice" in errors.errors[1].message


def test_every_value_error_of_a_file_is_reported_at_once() -> None:
    text = (f"reservation a value=0 {{ atom({B}, g=1.5, w=50) }}\n"
            "reservation b { atom(b={memory: 2Gb}, l=5min, w=1h) }\n")
    errors = errors_of(text)
    assert [str(e.span) for e in errors.errors] == [
        f"{FILE}:1:21", f"{FILE}:1:61", f"{FILE}:1:68", f"{FILE}:2:33", f"{FILE}:2:41"]


def test_value_errors_before_a_syntax_error_are_kept() -> None:
    text = f"reservation a {{ atom({B}, w=50) }}\nreservation b {{ atm({B}, w=1h) }}\n"
    errors = errors_of(text)
    assert [str(e.span) for e in errors.errors] == [f"{FILE}:1:53", f"{FILE}:2:17"]
    assert "did you mean `atom`?" in errors.render()


def test_errors_are_sorted_by_place() -> None:
    text = (f"reservation a {{ atom({B}, g=4, h=2, w=1h) }}\n"
            f"reservation a {{ atom({B}, w=1h) }}\n"
            "reservation c { atom(b={memory: 128GiB}, w=1h) }\n")
    spans = [(e.span.line, e.span.col) for e in errors_of(text).errors]
    assert spans == sorted(spans) == [(1, 17), (2, 1), (3, 17)]


# -- any: an impossible alternative is fine, all impossible is an error ------------------------------


def test_any_with_one_impossible_alternative_is_accepted() -> None:
    text = ("reservation r deadline=+2h {\n  any(\n    huge: atom(b={memory: 128GiB}, w=1h),\n"
            "    slow: atom(b={memory: 1GiB}, l=3h, w=3h),\n"
            "    fits: atom(b={memory: 1GiB}, l=1h, w=1h))\n}")
    (reservation,) = parse_and_validate(text)
    assert reservation.name == "r"


def test_any_whose_only_fitting_alternative_misses_the_window_is_an_error() -> None:
    text = ("reservation r deadline=+2h {\n  any(\n    huge: atom(b={memory: 128GiB}, w=1h),\n"
            "    slow: atom(b={memory: 1GiB}, l=3h, w=3h))\n}")
    (error,) = errors_of(text).errors
    assert str(error.span) == f"{FILE}:2:3"
    assert "none of the alternatives" in error.message
    assert "bundle larger than the cluster" in error.message and "longer than its window" in error.message


def test_gang_larger_than_cluster_inside_any_is_not_an_error() -> None:
    text = ("reservation r { any(atom(b={memory: 16GiB}, g=8, h=8, w=8h), "
            "atom(b={memory: 16GiB}, g=4, h=4, w=8h)) }")
    parse_and_validate(text)


def test_structural_errors_inside_any_are_still_errors() -> None:
    text = f"reservation r {{ any(atom({B}, g=4, h=2, w=1h), atom({B}, w=1h)) }}"
    (error,) = errors_of(text).errors
    assert "parallelism" in error.message


def test_valid_examples_pass(example_cluster: rdl.Cluster) -> None:
    text = ("reservation etl_nightly user=alice queue=prod deadline=+6h value=10 {\n  order(\n"
            "    extract: atom(b={memory: 2GiB, vcores: 1}, h=100, l=5m, w=50h),\n"
            "    load:    atom(b={memory: 8GiB, vcores: 4}, g=10, h=10, l=1h, w=10h)\n  )\n}\n")
    parse_and_validate(text, example_cluster)


def test_the_example_cluster_is_aggregated_over_its_nodes() -> None:
    # 64 nodes of 64 GiB: a 1 TiB bundle fits the cluster; 8 TiB does not.
    parse_and_validate("reservation r { atom(b={memory: 1TiB}, w=1h) }", EXAMPLE_CLUSTER)
    (error,) = errors_of("reservation r { atom(b={memory: 8TiB}, w=1h) }", EXAMPLE_CLUSTER).errors
    assert "memory 8TiB > 4TiB" in error.message


def test_without_a_cluster_only_structural_errors_are_found() -> None:
    parse_and_validate("reservation r { atom(b={memory: 128TiB, widgets: 3}, w=1h) }", cluster=None)
    errors_of(f"reservation r {{ atom({B}, g=4, h=2, w=1h) }}", cluster=None)


# -- the cluster file ---------------------------------------------------------------------------------

CLUSTER_OK = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {memory: 64GiB, vcores: 32}\n"

CLUSTER_BAD = [
    case("unknown key", CLUSTER_OK + "stp: 1m\n", "5:1", "unknown cluster key `stp`", hint="did you mean `step`?"),
    case("bare step", CLUSTER_OK.replace("step: 1m", "step: 5"), "2:7", "`step`", "needs a unit"),
    case("missing start", CLUSTER_OK.replace("start: 2026-11-23T00:00:00Z\n", ""), "1:1",
         "needs `start`", hint="start: 2026-11-23T00:00:00Z"),
    case("bad yaml", "start: 2026-11-23T00:00:00Z\ncapacity: {memory: 1GiB\n", "3:1", "not valid YAML"),
    case("negative capacity", CLUSTER_OK.replace("vcores: 32", "vcores: -32"), "4:35",
         "`vcores` in `capacity` must be positive"),
    case("unknown memory unit", CLUSTER_OK.replace("64GiB", "64Gb"), "4:20", "unknown memory unit `Gb`"),
    case("capacity and nodes", CLUSTER_OK + "nodes: [{count: 2, memory: 1GiB}]\n", "5:1",
         "either `capacity` or `nodes`"),
    case("change of an unknown resource", CLUSTER_OK + "changes:\n  - {at: +1d, capacity: {gpu: 4}}\n", "6:25",
         "no resource `gpu`", "one of memory, vcores"),
    case("change without at", CLUSTER_OK + "changes:\n  - {capacity: {vcores: 4}}\n", "6:5",
         "needs `at` and `capacity`"),
    case("negative change", CLUSTER_OK + "changes:\n  - {at: +1d, capacity: {vcores: -4}}\n", "6:34",
         "`vcores` in the changed capacity must be zero or more"),
    case("fractional step", CLUSTER_OK.replace("step: 1m", "step: 1.5s"), "2:7", "whole number of seconds"),
    case("start without zone", CLUSTER_OK.replace("00:00:00Z", "00:00:00"), "1:8", "with a zone"),
    case("no capacity", "start: 2026-11-23T00:00:00Z\n", "1:1", "needs `capacity`"),
    case("empty file", "# nothing\n", "1:1", "is empty"),
    case("misspelt node count", "start: 2026-11-23T00:00:00Z\nnodes:\n  - {name: n, cont: 4, memory: 1GiB}\n",
         "3:15", "node group 1 has `cont`", hint="did you mean `count`?"),
    case("misspelt node name", "start: 2026-11-23T00:00:00Z\nnodes:\n  - {nme: n, count: 4, memory: 1GiB}\n",
         "3:6", "node group 1 has `nme`", hint="did you mean `name`?"),
    case("bad node count", "start: 2026-11-23T00:00:00Z\nnodes:\n  - {count: 1.5, memory: 1GiB}\n", "3:13",
         "`count`", "whole number"),
]


@pytest.mark.parametrize("bad", CLUSTER_BAD, ids=[c.id for c in CLUSTER_BAD])
def test_cluster_file_errors_name_line_and_column(bad: Bad) -> None:
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(bad.text, "c.yaml")
    errors = caught.value
    assert len(errors.errors) == 1, errors.render()
    (error,) = errors.errors
    assert str(error.span) == f"c.yaml:{bad.at}", errors.render()
    for word in bad.words:
        assert word in error.headline(), f"{word!r} not in {error.headline()!r}"
    if bad.hint is not None:
        assert error.hint is not None and bad.hint in error.hint
    line, col = map(int, bad.at.split(":"))
    if line <= len(bad.text.splitlines()):  # else the error is at the very end, with no line to show
        assert errors.render().splitlines()[2] == "    " + " " * (col - 1) + "^"


def test_cluster_file_reports_every_error_at_once() -> None:
    text = "start: yesterday\nstep: 5\nhorizon: 7days\ncapacity: {memory: 1GiB, vcores: 0}\n"
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(text, "c.yaml")
    assert [str(e.span) for e in caught.value.errors] == ["c.yaml:1:8", "c.yaml:2:7", "c.yaml:3:10", "c.yaml:4:34"]


def test_cluster_file_ok() -> None:
    cluster = rdl.parse_cluster(CLUSTER_OK + "changes:\n  - {at: +1d, capacity: {vcores: 64}}\n")
    assert cluster.step == 60 and cluster.steps == 7 * 24 * 60
    assert cluster.peak_capacity()["vcores"] == 64


def test_a_change_to_zero_is_an_outage() -> None:
    """A change may take a resource to nothing for a while (maintenance); the cluster's own capacity may not."""
    cluster = rdl.parse_cluster(CLUSTER_OK + "changes:\n  - {at: +1d, capacity: {vcores: 0}}\n"
                                "  - {at: +1d2h, capacity: {vcores: 32}}\n")
    assert [(change.capacity["vcores"], change.capacity["memory"]) for change in cluster.changes] == \
        [(0, 64 * 1024), (32, 64 * 1024)]
    assert cluster.peak_capacity()["vcores"] == 32


# -- JSON --------------------------------------------------------------------------------------------

ATOM_JSON = {"b": {"memory": "1GiB", "vcores": 1}, "w": "1h"}


def json_res(**fields: object) -> dict[str, object]:
    return {"name": "r", "expr": {"atom": dict(ATOM_JSON)}} | fields


JSON_BAD = [
    ("unknown field", json_res(exprr=1), "$.exprr", ("unknown reservation field `exprr`",), "did you mean `expr`?"),
    ("missing expr", {"name": "r"}, "$", ("reservation `r` needs `expr`",), None),
    ("bad name", json_res(name="bad name"), "$.name", ("`bad name` is not a valid name",), None),
    ("misspelt combinator", json_res(expr={"atm": ATOM_JSON}), "$.expr.atm",
     ("unknown expression field `atm`",), "did you mean `atom`?"),
    ("bare duration", json_res(expr={"atom": {**ATOM_JSON, "w": 50}}), "$.expr.atom.w",
     ("`50` needs a unit for a duration",), None),
    ("non-integer gang", json_res(expr={"atom": {**ATOM_JSON, "g": 1.5}}), "$.expr.atom.g",
     ("`g` must be a whole number",), None),
    ("bad memory", json_res(expr={"atom": {**ATOM_JSON, "b": {"memory": "2Gb"}}}), "$.expr.atom.b.memory",
     ("unknown memory unit `Gb`",), None),
    ("order not a list", json_res(expr={"order": {"atom": ATOM_JSON}}), "$.expr.order",
     ("`order` takes a list of expressions",), None),
    ("nested path", json_res(expr={"order": [{"atom": ATOM_JSON}, {"atom": {**ATOM_JSON, "l": "5min"}}]}),
     "$.expr.order[1].atom.l", ("unknown duration unit `min`",), None),
    ("gap on all", json_res(expr={"all": [{"atom": ATOM_JSON}], "gap": "1m"}), "$.expr.gap",
     ("`gap` belongs to `order`, not `all`",), None),
    ("relative without plus", json_res(deadline="6h"), "$.deadline", ("`deadline` is a time",), "did you mean `+6h`?"),
    ("boolean value", json_res(value=True), "$.value", ("`value` is a number, got `true`",), None),
    ("infinite gang", json_res(expr={"atom": {**ATOM_JSON, "g": float("inf")}}), "$.expr.atom.g",
     ("`inf`",), None),
    ("two combinators", json_res(expr={"atom": ATOM_JSON, "all": []}), "$.expr",
     ("exactly one of atom, window, order, all, any",), None),
    ("unknown nested order field", json_res(expr={"order": {"order": [{"atom": ATOM_JSON}], "gapp": "1m"}}),
     "$.expr.order.gapp", ("unknown `order` field `gapp`",), None),
]


@pytest.mark.parametrize(("data", "path", "words", "hint"), [c[1:] for c in JSON_BAD], ids=[c[0] for c in JSON_BAD])
def test_json_errors_name_the_json_path(data: object, path: str, words: tuple[str, ...], hint: str | None) -> None:
    with pytest.raises(rdl.RDLErrors) as caught:
        from_json(data, "r.json")
    (error,) = caught.value.errors
    assert str(error.span) == f"r.json:{path}"
    for word in words:
        assert word in error.headline()
    if hint is not None:
        assert error.hint is not None and hint in error.hint


def test_json_list_items_are_indexed() -> None:
    with pytest.raises(rdl.RDLErrors) as caught:
        from_json({"reservations": [json_res(), json_res(name="s", value=-1)]}, "r.json")
    assert [str(e.span) for e in caught.value.errors] == ["r.json:$.reservations[1].value"]


def test_json_syntax_errors_name_line_and_column() -> None:
    with pytest.raises(rdl.RDLErrors) as caught:
        parse_json_text('{"name": "r",\n  "expr": {"atom": }}', "r.json")
    (error,) = caught.value.errors
    assert str(error.span) == "r.json:2:20"
    assert "not valid JSON" in error.message


def test_json_reports_every_error_at_once() -> None:
    data = json_res(value=0, expr={"order": [{"atom": {**ATOM_JSON, "w": 5}}, {"atm": {}}]})
    with pytest.raises(rdl.RDLErrors) as caught:
        from_json(json.loads(json.dumps(data)), "r.json")
    assert sorted(str(e.span) for e in caught.value.errors) == [
        "r.json:$.expr.order[0].atom.w", "r.json:$.expr.order[1].atm", "r.json:$.value"]


def test_json_and_text_agree_on_messages() -> None:
    text_error = errors_of(f"reservation r {{ atom({B}, w=50) }}").errors[0]
    with pytest.raises(rdl.RDLErrors) as caught:
        from_json(json_res(expr={"atom": {**ATOM_JSON, "w": "50"}}))
    assert caught.value.errors[0].message == text_error.message


def test_a_long_value_is_echoed_short() -> None:
    assert shown("12") == "12"
    assert shown("1" * 400) == "1" * 40 + "... (400 characters)"


def test_a_keyword_given_to_all_says_where_gap_belongs_not_one_of_nothing() -> None:
    """Not "expected one of " and an empty list (issue #30); as the JSON form says it."""
    (error,) = errors_of(f"reservation r {{ all(atom({B}, w=1h), atom({B}, w=1h), gap=5m) }}").errors
    assert error.message == "`all` has no argument `gap`"
    assert error.hint == "`gap` belongs to `order`, not `all`" and "one of" not in error.render()
