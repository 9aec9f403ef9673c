"""An error found in a JSON file names its line and column, as every error of the language does (rdl.md: Errors),
and keeps its JSON path for tools: rdl/jsonplaces.py finds where each value starts, and RDLErrors.with_sources
places the errors once the file's text is known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.cli import error_json
from rdl.errors import RDLErrors, Span
from rdl.jsonplaces import line_and_column, place_of, value_offsets
from rdl.lint import RDLWarning
from rdl.load import load
from tests.rdl.support import EXAMPLE_CLUSTER

KEYS = st.text(st.characters(codec="utf-8", exclude_characters=".[]"), max_size=6)
DOCUMENTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=25)


def _paths(value: Any, path: str = "$") -> list[tuple[str, Any]]:
    found = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, f"{path}[{index}]")
    return found


@settings(max_examples=300)
@given(document=DOCUMENTS, indent=st.sampled_from([None, 0, 1, 4]), spaced=st.booleans(), ascii=st.booleans())
def test_every_value_is_found_where_it_starts(document: Any, indent: int | None, spaced: bool, ascii: bool) -> None:
    """Whatever the layout, decoding the text from a path's offset gives the value at that path."""
    separators = (" , ", " : ") if spaced else None
    text = json.dumps(document, indent=indent, separators=separators, ensure_ascii=ascii)
    offsets = value_offsets(text)
    decoder = json.JSONDecoder()
    for path, value in _paths(document):
        assert path in offsets, path
        assert decoder.raw_decode(text, offsets[path])[0] == value, path


def test_a_missing_key_is_placed_at_the_object_that_lacks_it() -> None:
    text = '{"reservations": [\n  {"name": "a"},\n  {"name": "b"}\n]}'
    offsets = value_offsets(text)
    assert line_and_column(text, place_of("$.reservations[1].expr", offsets) or 0) == (3, 3)
    assert line_and_column(text, place_of("$.nothing.deeper[2]", offsets) or 0) == (1, 1)


BAD = """{"reservations": [
  {"name": "a", "deadline": "+6h",
   "expr": {"atom": {"b": {"vcores": 1}, "w": "1h"}}},
  {"name": "b",
   "deadline": "+6h",
   "body": {"atom": {"b": {"vcores": 1}, "w": "1h"}}},
  {"name": "c", "deadline": "+6h",
   "expr": {"order": [{"atom": {"b": {"vcores": 1}, "w": "1h"}},
                      {"atom": {"b": {"vcores": 1}, "w": 50}}]}}
]}
"""


def _errors(tmp_path: Path, name: str, text: str) -> list[rdl.RDLError]:
    path = tmp_path / name
    path.write_text(text)
    (loaded,) = load([path], cluster=EXAMPLE_CLUSTER)
    assert loaded.errors is not None
    return loaded.errors.errors


def test_errors_in_a_json_file_name_line_and_column_and_keep_the_path(tmp_path: Path) -> None:
    errors = _errors(tmp_path, "bad.json", BAD)
    file = str(tmp_path / "bad.json")
    assert [(str(e.span), e.span.json_path) for e in errors] == [
        (f"{file}:4:3", "$.reservations[1]"),  # `b` has no `expr`: its object
        (f"{file}:6:12", "$.reservations[1].body"),
        (f"{file}:9:58", "$.reservations[2].expr.order[1].atom.w"),
    ]
    assert all(e.headline().startswith(f"{file}:{e.span.line}:{e.span.col}: ") for e in errors)
    record = error_json(errors[2])
    assert (record["line"], record["col"], record["json_path"]) == (9, 58, "$.reservations[2].expr.order[1].atom.w")


def test_a_semantic_error_in_json_is_placed_too(tmp_path: Path) -> None:
    """Validation finds it after reading (a lease longer than its window): its reservation's place."""
    text = '{"name": "late",\n "deadline": "+1h",\n "expr": {"atom": {"b": {"vcores": 1}, "l": "2h", "w": "2h"}}}'
    (error,) = _errors(tmp_path, "late.json", text)
    assert (error.span.line, error.span.col) == (3, 10) and "longer than its window" in error.message


def test_a_yarn_submission_s_errors_are_placed(tmp_path: Path) -> None:
    text = json.dumps({"queue": "dedicated", "reservation-id": "reservation_1_0001", "reservation-definition": {
        "arrival": 0, "deadline": 60_000, "reservation-name": "y", "reservation-requests": {
            "reservation-request-interpreter": 0, "reservation-request": [
                {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
                 "duration": "soon"}]}}}, indent=2)
    (error,) = _errors(tmp_path, "sub.json", text)
    assert error.span.json_path is not None and error.span.json_path.endswith(".duration")
    assert text.splitlines()[error.span.line - 1][error.span.col - 1:] == '"soon"'  # the caret under the value


@pytest.mark.parametrize("text", ['{"name": "r",\n  "expr": {"atom": }}', '{"a": 1, "a": 2}'])
def test_errors_of_the_text_itself_keep_their_own_place(tmp_path: Path, text: str) -> None:
    (error,) = _errors(tmp_path, "broken.json", text)
    assert error.span.json_path is None and error.span.line >= 1


def test_a_header_attribute_s_error_points_at_its_value_in_either_form(tmp_path: Path) -> None:
    """An unknown queue is found against the cluster, after reading: at `queue`'s value, not the reservation's start."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {vcores: 8}\nqueues: [prod]\n")
    text = tmp_path / "q.rdl"
    text.write_text("reservation r user=al queue=prd deadline=+2h {\n  atom(b={vcores: 1}, w=1h)\n}\n")
    data = tmp_path / "q.json"
    data.write_text('{"name": "r",\n "queue": "prd", "deadline": "+2h",\n "expr": {"atom": {"b": {"vcores": 1}, '
                    '"w": "1h"}}}')
    files = load([text, data], cluster=rdl.load_cluster(cluster))
    places = [(e.span.line, e.span.col) for f in files if f.errors is not None for e in f.errors.errors]
    assert places == [(1, 29), (2, 11)]


def test_placing_keeps_what_kind_of_error_it_is() -> None:
    warning = RDLWarning(Span("w.json", json_path="$.b"), "a warning")
    (placed,) = RDLErrors([warning]).with_sources({"w.json": '{"a": 1,\n "b": 2}'}).errors
    assert isinstance(placed, RDLWarning) and (placed.span.line, placed.span.col) == (2, 7)
    assert placed.headline().startswith("w.json:2:7: ") and warning.span.line == 0  # the original is left as it was
