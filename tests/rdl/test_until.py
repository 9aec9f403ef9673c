"""`until=`: a recurring reservation has no instance arriving at or after it (rdl.md, Reservations)."""

from __future__ import annotations

from datetime import UTC, datetime

from planner.admission import Planner
from planner.core.check import check_plan
from planner.core.compile import compile_reservation
from rdl import parse_cluster, parse_text
from rdl.forms.jsonform import from_json, to_json
from rdl.syntax.printer import format_reservation
from tests.rdl.support import errors_of, one

CLUSTER = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1h\nhorizon: 7d\ncapacity: {vcores: 8}\n")
START = datetime(2026, 11, 23, tzinfo=UTC)
DAILY = "reservation r every=1d {until} {{ window(e=+6h, atom(b={{vcores: 1}}, w=1h)) }}"


def instances(until: str) -> int:
    (reservation,) = parse_text(DAILY.format(until=until))
    planner = Planner(CLUSTER, START)
    return len(compile_reservation(reservation, START, planner.plan.clock, 0, planner.plan.resources))


def test_until_ends_the_series_relative_or_absolute() -> None:
    assert instances("") == 7
    assert instances("until=+3d") == 3
    assert instances("until=2026-11-25T00:00:00Z") == 2
    assert instances("until=+3d1h") == 4  # an instance arriving before `until` belongs to the series


def test_until_prints_and_reads_back_in_both_forms() -> None:
    reservation = one(DAILY.format(until="until=+3d"))
    assert "until=+3d" in format_reservation(reservation)
    assert parse_text(format_reservation(reservation))[0] == reservation
    assert from_json(to_json(reservation))[0] == reservation


def test_until_needs_every_and_a_time_after_the_arrival() -> None:
    (no_every,) = errors_of("reservation r until=+3d { atom(b={vcores: 1}, w=1h) }").errors
    assert "has `until` but no `every`" in no_every.message and no_every.span.col == 21  # at `until=`'s value
    (before,) = errors_of("reservation r every=1d until=+0h { atom(b={vcores: 1}, w=1h) }").errors
    assert "at or before its arrival" in before.message and before.span.col == 30


def test_a_planned_series_with_until_passes_the_checker() -> None:
    (reservation,) = parse_text(DAILY.format(until="until=+3d"))
    planner = Planner(CLUSTER, START)
    decision = planner.submit(reservation)
    assert decision.accepted and {a.instance for a in decision.allocations} == {0, 1, 2}
    assert check_plan(CLUSTER, [reservation], [decision.to_json(planner.plan.clock)], submitted=START) == []
