"""Hostile input to the language: bounded names, JSON objects whose keys repeat."""

from __future__ import annotations

import pytest

import rdl
from rdl.errors import RDLErrors
from rdl.forms.jsonform import parse_json_text
from rdl.forms.yarn import parse_yarn_text
from rdl.validate import MAX_DEPTH, MAX_INSTANCES, MAX_NAME, validate
from tests.rdl.support import errors_of, parse_and_validate

ATOM = "atom(b={vcores: 1}, w=1h)"


def test_a_reservation_name_longer_than_the_limit_is_an_error() -> None:
    (error,) = errors_of(f"reservation {'r' * (MAX_NAME + 1)} {{ {ATOM} }}").errors
    assert f"is {MAX_NAME + 1} characters long; at most {MAX_NAME}" in error.message


def test_a_piece_name_longer_than_the_limit_is_an_error() -> None:
    (error,) = errors_of(f"reservation r {{ {'p' * (MAX_NAME + 1)}: {ATOM} }}").errors
    assert error.message.startswith("the name `pppp")


def test_names_at_the_limit_are_fine() -> None:
    (reservation,) = parse_and_validate(f"reservation {'r' * MAX_NAME} {{ {'p' * MAX_NAME}: {ATOM} }}")
    assert len(reservation.name) == MAX_NAME


@pytest.mark.parametrize("parse", [parse_json_text, parse_yarn_text])
def test_a_json_key_given_twice_is_an_error_at_its_second_place(parse: object) -> None:
    text = '{\n  "name": "a",\n  "name": "b"\n}\n'
    with pytest.raises(RDLErrors) as caught:
        parse(text, "r.json")  # type: ignore[operator]
    (error,) = caught.value.errors
    assert str(error.span) == "r.json:3:3" and error.message == "the key `name` is given twice in one JSON object"


def test_a_recurring_period_shorter_than_the_plan_step_is_bad_input() -> None:
    (error,) = errors_of(f"reservation r every=1s deadline=+1m {{ {ATOM.replace('1h', '1m')} }}").errors
    assert error.message.startswith("`every=1s` is shorter than the plan step")


def test_a_recurring_reservation_with_more_instances_than_the_bound_is_bad_input() -> None:
    cluster = rdl.parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 7d\ncapacity: {vcores: 8}\n")
    (error,) = errors_of(f"reservation r every=5m deadline=+5m {{ {ATOM.replace('1h', '1m')} }}", cluster).errors
    assert f"repeats 2016 times in the plan's horizon (7d); at most {MAX_INSTANCES}" in error.message


@pytest.mark.parametrize("value", ["9223372036854775807", "1e30", str(10**30)])
def test_a_count_beyond_the_largest_integer_is_an_error_not_an_overflow(value: str) -> None:
    (error,) = errors_of(f"reservation r {{ atom(b={{vcores: 1}}, h={value}, w=1h) }}").errors
    assert error.message.startswith("`h` must be at most 2,147,483,647")


def test_yarn_num_containers_beyond_the_largest_integer_is_an_error() -> None:
    body = ('{"reservation-definition": {"arrival": 0, "deadline": 3600000, "reservation-name": "r", '
            '"reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [{"capability": '
            '{"memory": 1024, "vCores": 1}, "num-containers": ' + str(10**30) + ', "min-concurrency": 1, '
            '"duration": 60000}]}}}')
    with pytest.raises(RDLErrors) as caught:
        parse_yarn_text(body, "r.json")
    assert any("must be at most 2,147,483,647" in e.message for e in caught.value.errors)


def test_expressions_nested_deeper_than_the_limit_are_an_error_in_every_form() -> None:
    deep = "all(" * MAX_DEPTH + ATOM + ")" * MAX_DEPTH
    (error,) = errors_of(f"reservation r {{ {deep} }}").errors
    assert f"nests expressions more than {MAX_DEPTH} levels deep" in error.message
    assert error.span.line == 1 and error.span.col == len("reservation r { ") + 4 * MAX_DEPTH + 1
    json_atom = '{"atom": {"b": {"vcores": 1}, "w": "1h"}}'
    text = '{"name": "r", "expr": ' + '{"all": [' * MAX_DEPTH + json_atom + "]}" * MAX_DEPTH + "}"
    with pytest.raises(RDLErrors, match="more than 100 levels deep"):
        validate(parse_json_text(text, "deep.json"))


def test_expressions_nested_to_the_limit_are_fine() -> None:
    deep = "all(" * (MAX_DEPTH - 1) + ATOM + ")" * (MAX_DEPTH - 1)
    (reservation,) = parse_and_validate(f"reservation r {{ {deep} }}")
    assert reservation.name == "r"
