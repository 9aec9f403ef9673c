"""Values as people write them: times that are not times, unit spellings, warnings, node typos, printed durations."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import rdl
from rdl.cli import check_command
from rdl.forms.jsonform import from_json, to_json
from rdl.lint import lint_json, lint_rdl
from rdl.syntax.printer import format_reservations
from rdl.units import format_duration, parse_duration, parse_quantity
from tests.rdl.support import errors_of

B = "b={memory: 1GiB, vcores: 1}"
FORMS = "write an ISO-8601 time with a zone such as `2026-11-23T08:00:00Z`, or a relative time such as `+6h`"
CLUSTER = "start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {memory: 64GiB, vcores: 32}\n"

NOT_TIMES = [
    ("2026-11-23", "did you mean `2026-11-23T00:00:00Z`?"),
    ("2026-11-23 08:00:00Z", "did you mean `2026-11-23T08:00:00Z`?"),
    ("2026-11-23T08:00:00z", "did you mean `2026-11-23T08:00:00Z`?"),
    ("+25:00", None),
]


@pytest.mark.parametrize(("text", "guess"), NOT_TIMES)
def test_a_time_that_is_not_a_time_is_one_error_at_the_whole_value(text: str, guess: str | None) -> None:
    (error,) = errors_of(f"reservation r deadline={text} {{ atom({B}, w=1h) }}").errors
    assert str(error.span) == "bad.rdl:1:24"
    assert error.message.startswith(f"`deadline`: `{text}` is not a time; {FORMS}")
    assert (guess in error.message) if guess else "did you mean" not in error.message


@pytest.mark.parametrize(("text", "guess"), NOT_TIMES)
def test_the_json_form_says_the_same(text: str, guess: str | None) -> None:
    data = {"name": "r", "deadline": text, "expr": {"atom": {"b": {"vcores": 1}, "w": "1h"}}}
    with pytest.raises(rdl.RDLErrors) as caught:
        from_json(data, "r.json")
    (error,) = caught.value.errors
    assert str(error.span) == "r.json:$.deadline"
    assert error.message.startswith(f"`deadline`: `{text}` is not a time; {FORMS}")


@pytest.mark.parametrize(("text", "guess"), NOT_TIMES)
def test_the_cluster_file_says_the_same_for_start_and_at(text: str, guess: str | None) -> None:
    start = "2026-11-23T00:00:00Z" if text.startswith("+") else text
    source = CLUSTER.replace("2026-11-23T00:00:00Z", start) + f"changes:\n  - {{at: {text}, capacity: {{vcores: 4}}}}\n"
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(source, "c.yaml")
    messages = {str(e.span): e.message for e in caught.value.errors}
    assert messages["c.yaml:6:10"].startswith(f"`at`: `{text}` is not a time; {FORMS}")
    if not text.startswith("+"):
        assert messages["c.yaml:1:8"].startswith(f"`start`: `{text}` is not a time; {FORMS}")
    assert len(messages) == (1 if text.startswith("+") else 2)


def test_times_that_are_times_still_read() -> None:
    (r,) = rdl.parse_text(f"reservation r arrival=2026-11-23T07:00+01:00 deadline=+1h30m {{ atom({B}, w=1h) }}")
    assert format_reservations([r]).startswith("reservation r arrival=2026-11-23T06:00:00Z deadline=+90m {")


@pytest.mark.parametrize(("text", "seconds"), [("1h30m", 5400), ("1d12h", 129600), ("2m30s", 150),
                                               ("1w1d", 691200), ("1h0.5m", 3630)])
def test_compound_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    (r,) = rdl.parse_text(f"reservation r every={text} {{ atom({B}, l={text}, w={text}) }}")
    assert r.every == seconds and r.body.work == seconds  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "words"), [
    ("30m1h", "largest first"), ("1h1h", "largest first"), ("1h30x", "one of s, m, h, d, w"),
])
def test_bad_compound_durations_say_how_to_write_them(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_duration(text)


def test_kubernetes_binary_suffixes_are_the_binary_units() -> None:
    for short, long in (("Ki", "KiB"), ("Mi", "MiB"), ("Gi", "GiB"), ("Ti", "TiB")):
        assert parse_quantity("memory", f"3{short}") == parse_quantity("memory", f"3{long}")


def test_a_memory_unit_error_lists_every_accepted_unit() -> None:
    (error,) = errors_of("reservation r { atom(b={memory: 2G}, w=1h) }").errors
    for unit in ("KiB", "MiB", "GiB", "TiB", "Ki", "Mi", "Gi", "Ti", "KB", "MB", "GB", "TB"):
        assert f"{unit}," in error.message or f"{unit} " in error.message, unit


def test_bare_memory_is_mib_with_a_warning() -> None:
    text = "reservation r {\n  atom(b={memory: 2, vcores: 1}, w=1h)\n}\n"
    (r,) = rdl.parse_text(text)
    assert r.body.bundle["memory"] == 2  # type: ignore[attr-defined]
    (warning,) = lint_rdl(text, "t.rdl")
    assert warning.headline() == ("t.rdl:2:19: warning: `memory: 2` is 2 MiB; did you mean 2GiB? "
                                  "(write `2MiB` to keep MiB and silence this warning)")
    assert lint_rdl(text.replace("memory: 2,", "memory: 2MiB,"), "t.rdl") == []
    assert lint_rdl("reservation r { memory: atom(b={memory: 2GiB}, w=1h) }", "t.rdl") == []


def test_bare_memory_in_json_warns_at_its_place_and_path() -> None:
    text = '{"name": "r", "expr": {"order": [{"atom": {"b": {"memory": 2}, "w": "1h"}}]}}'
    (warning,) = lint_json(text, "r.json")
    assert str(warning.span) == "r.json:1:60" and text[59] == "2"  # columns count from 1
    assert warning.span.json_path == "$.expr.order[0].atom.b.memory"


def test_rayon_check_prints_the_warning_and_keeps_its_exit_status(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER)
    (tmp_path / "r.rdl").write_text("reservation r {\n  atom(b={memory: 2, vcores: 1}, w=1h)\n}\n")
    result = CliRunner().invoke(check_command, ["--cluster", str(tmp_path / "c.yaml"), str(tmp_path / "r.rdl")])
    assert result.exit_code == 0
    assert "warning: `memory: 2` is 2 MiB; did you mean 2GiB?" in result.output


def test_a_misspelt_node_resource_is_reported_at_the_node_key() -> None:
    text = ("start: 2026-11-23T00:00:00Z\nnodes: [{name: n, count: 4, vcore: 32, memory: 64GiB}]\n"
            "changes:\n  - {at: +1d, capacity: {vcores: 64}}\n  - {at: +2d, capacity: {vcores: 16}}\n")
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(text, "c.yaml")
    (error,) = caught.value.errors
    assert str(error.span) == "c.yaml:2:29"
    assert "node group `n` names resource `vcore`" in error.message and error.hint == "did you mean `vcores`?"


def test_a_node_group_that_spells_a_resource_unlike_the_others_is_reported_there() -> None:
    text = ("start: 2026-11-23T00:00:00Z\nnodes:\n  - {name: a, vcores: 32, memory: 64GiB}\n"
            "  - {name: b, vcore: 32, memory: 64GiB}\n  - {name: g, vcores: 8, memory: 64GiB, gpu: 4}\n")
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(text, "c.yaml")
    (error,) = caught.value.errors
    assert str(error.span) == "c.yaml:4:15" and error.hint == "did you mean `vcores`?"


def test_an_unknown_changed_resource_unlike_any_node_resource_is_still_reported_at_the_change() -> None:
    text = "start: 2026-11-23T00:00:00Z\nnodes: [{vcores: 4}]\nchanges:\n  - {at: +1d, capacity: {gpu: 4}}\n"
    with pytest.raises(rdl.RDLErrors) as caught:
        rdl.parse_cluster(text, "c.yaml")
    (error,) = caught.value.errors
    assert str(error.span) == "c.yaml:4:25" and "no resource `gpu`" in error.message


@pytest.mark.parametrize(("written", "printed"), [
    ("4000m", "4000m"), ("1.1h", "1.1h"), ("66.7h", "4002m"), ("1.5d", "36h"), ("0.1h", "6m"), ("1h30m", "90m"),
    ("2d18h40m", "4000m"), ("0.3s", "0.3s"),
])
def test_durations_print_in_the_largest_exact_unit(written: str, printed: str) -> None:
    (r,) = rdl.parse_text(f"reservation r {{ atom({B}, w={written}) }}")
    text = format_reservations([r])
    assert f"w={printed})" in text
    assert rdl.parse_text(text) == [r] and from_json([to_json(r)]) == [r]
    assert format_duration(parse_duration(written)) == printed
