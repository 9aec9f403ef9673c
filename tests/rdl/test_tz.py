"""`tz=ZONE`: a daily series keeps its local wall time across daylight-saving changes, and zone-less times are
wall times in that zone (docs/rdl.md, Time zones)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.admission import Planner
from planner.core.check import check_plan
from planner.core.compile import Clock, compile_reservation, series_instance
from planner.store.series import first_from
from rdl import parse_cluster, parse_text
from rdl.forms.jsonform import from_json, to_json
from rdl.forms.yarn import to_yarn
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation, later
from tests.rdl.support import FAST, errors_of

BERLIN = ZoneInfo("Europe/Berlin")
# The last Sundays of March and October 2027: Berlin's clocks go forward on 28 March, back on 31 October.
SPRING, AUTUMN = datetime(2027, 3, 25, tzinfo=UTC), datetime(2027, 10, 28, tzinfo=UTC)
DAILY = ("reservation report user=alice {tz} arrival={arrival} every=1d "
         "{{ window(e=+2h, atom(b={{vcores: 2}}, w=1h)) }}")


def cluster(start: datetime) -> object:
    return parse_cluster(f"start: {start:%Y-%m-%dT%H:%M:%SZ}\nstep: 15m\nhorizon: 7d\ncapacity: {{vcores: 8}}\n")


def planned(text: str, start: datetime) -> tuple[Reservation, list[datetime], list[datetime]]:
    """The reservation, its instances' arrivals, and the start of each instance's placement (the plan checked)."""
    (reservation,) = parse_text(text)
    planner = Planner(cluster(start), start)  # type: ignore[arg-type]
    decision = planner.submit(reservation, "gree")
    assert decision.accepted, decision.reason
    clock = planner.plan.clock
    assert check_plan(cluster(start), [reservation], [decision.to_json(clock)], submitted=start) == []  # type: ignore[arg-type]
    arrivals = [i.arrival for i in compile_reservation(reservation, start, clock, 0, planner.plan.resources)]
    starts = [clock.at(min(a.start for a in decision.allocations if a.instance == i)) for i in range(len(arrivals))]
    return reservation, arrivals, starts


def local_hours(moments: list[datetime]) -> list[int]:
    return [moment.astimezone(BERLIN).hour for moment in moments]


@pytest.mark.parametrize("start", [SPRING, AUTUMN], ids=["march", "october"])
def test_a_daily_series_in_a_zone_arrives_at_the_same_local_time_across_the_change(start: datetime) -> None:
    _, arrivals, starts = planned(DAILY.format(tz="tz=Europe/Berlin", arrival="2027-03-25T06:00"
                                               if start == SPRING else "2027-10-28T06:00"), start)
    assert len(arrivals) == 7
    assert local_hours(arrivals) == [6] * 7
    assert local_hours(starts) == [7] * 7  # GREE: the hour's lease as late as its window (06:00 + 2h) lets it
    gaps = {(b - a) / timedelta(hours=1) for a, b in pairwise(arrivals)}
    assert gaps == ({24.0, 23.0} if start == SPRING else {24.0, 25.0})  # the changing day is an hour short or long


def test_without_a_zone_the_series_keeps_24_hours_and_its_local_time_drifts_as_before() -> None:
    _, arrivals, _ = planned(DAILY.format(tz="", arrival="2027-03-25T05:00:00Z"), SPRING)
    assert {(b - a) / timedelta(hours=1) for a, b in pairwise(arrivals)} == {24.0}
    assert local_hours(arrivals) == [6, 6, 6, 7, 7, 7, 7]


def test_absolute_windows_move_by_calendar_days_in_the_zone() -> None:
    text = ("reservation r tz=Europe/Berlin arrival=2027-03-26T00:00 every=1d "
            "{ window(s=2027-03-26T04:00, e=2027-03-26T06:00, atom(b={vcores: 1}, w=1h)) }")
    (reservation,) = parse_text(text)
    planner = Planner(cluster(SPRING), SPRING)  # type: ignore[arg-type]
    decision = planner.submit(reservation, "gree")
    assert decision.accepted
    clock = planner.plan.clock
    for instance in range(4):  # 26 to 29 March: the window is 04:00-06:00 Berlin time on each day
        (lease,) = [a for a in decision.allocations if a.instance == instance]
        assert clock.at(lease.end).astimezone(BERLIN).hour == 6
    assert check_plan(cluster(SPRING), [reservation], [decision.to_json(clock)], submitted=SPRING) == []  # type: ignore[arg-type]


def test_a_zone_less_time_is_the_wall_time_in_the_zone_and_prints_back_the_same() -> None:
    (reservation,) = parse_text("reservation r tz=Europe/Berlin arrival=2027-07-01T06:00 every=1w "
                                "{ window(e=2027-07-01T09:30, atom(b={vcores: 1}, w=1h)) }")
    assert reservation.arrival is not None and reservation.arrival.resolve(SPRING) == datetime(2027, 7, 1, 4,
                                                                                                   tzinfo=UTC)
    assert reservation.tz == "Europe/Berlin"
    assert parse_text(format_reservation(reservation))[0] == reservation
    assert from_json(to_json(reservation))[0] == reservation
    assert "tz=Europe/Berlin" in format_reservation(reservation)


def test_a_wall_time_the_change_skips_moves_on_and_one_it_repeats_is_its_first() -> None:
    (skipped,) = parse_text("reservation r tz=Europe/Berlin arrival=2027-03-28T02:30 { atom(b={vcores: 1}, w=1h) }")
    assert skipped.arrival is not None and skipped.arrival.resolve(SPRING).astimezone(BERLIN).hour == 3
    (twice,) = parse_text("reservation r tz=Europe/Berlin arrival=2027-10-31T02:30 { atom(b={vcores: 1}, w=1h) }")
    assert twice.arrival is not None and twice.arrival.resolve(AUTUMN) == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)


def test_an_instance_on_its_own_keeps_its_calendar_period() -> None:
    """How a series goes on as the plan rolls: each instance compiled alone ends where the next one arrives."""
    (reservation,) = parse_text(DAILY.format(tz="tz=Europe/Berlin", arrival="2027-03-25T02:30"))
    clock = Clock(SPRING, 900, 7 * 96)
    first = reservation.arrival_at(SPRING)
    for index in range(5):
        (alone,) = compile_reservation(series_instance(reservation, SPRING, index), SPRING, clock, 0, ("vcores",))
        assert alone.arrival == reservation.instance_arrival(first, index)
        assert clock.at(alone.task.hi) <= reservation.instance_arrival(first, index + 1)
    assert first_from(reservation, SPRING, datetime(2027, 3, 28, 1, 30, tzinfo=UTC)) == 3  # 03:30 CEST that day


@FAST
@given(st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "UTC"]),
       st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1)), st.integers(1, 800))
def test_calendar_days_keep_the_wall_time(zone: str, wall: datetime, days: int) -> None:
    """Moved on by whole days in a zone, a wall time stays that wall time (unless that day skips it)."""
    first = wall.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
    moved = later(first, days * 86400.0, zone).astimezone(ZoneInfo(zone))
    expected = (first.astimezone(ZoneInfo(zone)).replace(tzinfo=None) + timedelta(days=days))
    if moved.replace(tzinfo=None) != expected:  # only a wall time that day skips: then the change's length later
        assert moved.replace(tzinfo=None) - expected == moved.dst() - (moved - timedelta(hours=3)).dst()
    assert moved.date() == expected.date()


# -- errors ---------------------------------------------------------------------------------------------------


def test_an_unknown_zone_is_named_with_its_place_and_a_suggestion() -> None:
    (error,) = errors_of("reservation r\n  tz=Europe/Berln { atom(b={vcores: 1}, w=1h) }").errors
    assert (error.span.line, error.span.col) == (2, 6)
    assert "`Europe/Berln` is not a time zone" in error.message and "Europe/Berlin" in (error.hint or "")
    assert "bad.rdl:2:6:" in str(errors_of("reservation r\n  tz=Europe/Berln { atom(b={vcores: 1}, w=1h) }"))


def test_with_a_zone_every_is_whole_days() -> None:
    (error,) = errors_of("reservation r tz=UTC every=36h { atom(b={vcores: 1}, w=1h) }").errors
    assert "whole number of days" in error.message and error.span.col == 28


def test_a_zone_less_time_without_tz_is_still_an_error() -> None:
    (error,) = errors_of("reservation r arrival=2027-03-25T06:00 { atom(b={vcores: 1}, w=1h) }").errors
    assert "is not a time" in error.message


def test_a_zone_name_anywhere_else_is_an_error_at_its_place() -> None:
    (error,) = errors_of("reservation r user=a/b { atom(b={vcores: 1}, w=1h) }").errors
    assert "`user` is a name" in error.message and error.span.col == 20
    (quoted,) = errors_of('reservation r tz="Mars/Olympus" { atom(b={vcores: 1}, w=1h) }').errors
    assert "not a time zone" in quoted.message


def test_json_takes_the_zone_and_reads_zone_less_times_in_it() -> None:
    data = {"name": "r", "tz": "Europe/Berlin", "arrival": "2027-03-29T06:00", "every": "1d",
            "expr": {"atom": {"b": {"vcores": 1}, "w": "1h"}}}
    (reservation,) = from_json(data)
    assert reservation.arrival is not None and reservation.arrival.resolve(SPRING).hour == 4
    with pytest.raises(Exception, match="not a time zone"):
        from_json({**data, "tz": "Berlin"})


def test_yarn_cannot_say_a_calendar_series_and_the_form_says_so() -> None:
    text = ("reservation r queue=default {tz} arrival=2027-03-25T05:00:00Z every=1d deadline=+2h "
            "{{ atom(b={{memory: 1GiB, vcores: 1}}, l=1h, w=1h) }}")
    assert to_yarn(parse_text(text.format(tz=""))[0])["reservation-definition"]["recurrence-expression"] == "86400000"
    with pytest.raises(ValueError, match="calendar days in Europe/Berlin"):
        to_yarn(parse_text(text.format(tz="tz=Europe/Berlin"))[0])
