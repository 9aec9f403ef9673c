"""The API's pydantic models describe what the language's loaders read and its printers write."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from planner.admission import Planner
from planner.api.models import DecisionOut, ReservationJSON, YarnSubmission
from rdl.cluster import load_cluster
from rdl.forms.jsonform import from_json, to_json
from rdl.forms.yarn import from_yarn, to_yarn
from rdl.syntax.parser import parse_text
from tests.planner.api.support import EXAMPLES

RESERVATIONS = [r for path in sorted(EXAMPLES.glob("*.rdl")) for r in parse_text(path.read_text(), str(path))]
YARN_EXAMPLE = EXAMPLES / "yarn_spark_pipeline.json"


@pytest.mark.parametrize("reservation", RESERVATIONS, ids=lambda r: r.name)
def test_every_example_in_the_json_form_fits_the_reservation_model(reservation: object) -> None:
    data = to_json(reservation)  # type: ignore[arg-type]
    model = ReservationJSON.model_validate(data)
    assert model.model_dump(exclude_none=True) == data  # nothing dropped, nothing added
    assert from_json(model.model_dump(exclude_none=True)) == from_json(data)


def test_the_reservation_model_refuses_what_the_json_form_refuses() -> None:
    with pytest.raises(ValidationError):
        ReservationJSON.model_validate({"name": "x", "expr": {"atom": {"b": {"vcores": 1}, "w": "1h", "q": 3}}})
    with pytest.raises(ValidationError):
        ReservationJSON.model_validate({"name": "x", "expr": {"loop": []}})


def test_yarn_submissions_fit_the_yarn_model_both_ways() -> None:
    data = json.loads(YARN_EXAMPLE.read_text())
    model = YarnSubmission.model_validate(data)
    assert model.model_dump(by_alias=True, exclude_none=True) == data
    written = to_yarn(from_yarn(data), data["reservation-id"])
    assert YarnSubmission.model_validate(written).model_dump(by_alias=True, exclude_none=True) == written


def test_decision_records_fit_the_decision_model() -> None:
    planner = Planner(load_cluster(str(EXAMPLES / "cluster.yaml")))
    records = [planner.submit(r).to_json(planner.plan.clock) for r in RESERVATIONS]
    assert any(not r["accepted"] for r in records) and any(r["accepted"] for r in records)
    for record in records:
        assert DecisionOut.model_validate(record).model_dump(exclude_unset=True) == record
