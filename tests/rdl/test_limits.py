"""Hostile input to the language: bounded names, JSON objects whose keys repeat."""

from __future__ import annotations

import pytest

from rdl.errors import RDLErrors
from rdl.forms.jsonform import parse_json_text
from rdl.forms.yarn import parse_yarn_text
from rdl.validate import MAX_NAME
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
