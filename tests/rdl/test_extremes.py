"""Extreme values a hostile user writes: years outside 1970–9000, durations past a century (issue #29)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rdl.cluster import parse_cluster
from rdl.config import safe_load
from rdl.errors import RDLErrors
from rdl.units import format_instant, parse_duration, parse_instant, read_instant
from tests.rdl.support import errors_of

B = "b={memory: 1GiB, vcores: 1}"
RANGE = "times must fall between the years 1970 and 9000"


@pytest.mark.parametrize("text", ["0999-06-01T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
                                  "9001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_a_time_outside_the_years_1970_to_9000_is_an_error_at_the_value(text: str) -> None:
    (error,) = errors_of(f"reservation r arrival={text} {{ atom({B}, w=1h) }}").errors
    assert str(error.span) == "bad.rdl:1:23"
    assert error.message == f"`arrival`: `{text}` is outside the times the planner keeps; {RANGE}"


def test_a_window_in_year_999_is_an_error_at_both_of_its_times() -> None:
    text = f"reservation r {{ window(s=0999-06-01T00:00:00Z, e=0999-06-02T00:00:00Z, atom({B}, w=1h)) }}"
    assert [str(e.span) for e in errors_of(text).errors] == ["bad.rdl:1:26", "bad.rdl:1:50"]


def test_the_ends_of_the_range_are_times() -> None:
    assert parse_instant("1970-01-01T00:00:00Z") == datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_instant("9000-12-31T23:59:59Z") == datetime(9000, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_a_relative_time_past_9000_is_an_error_at_the_reservation() -> None:
    text = f"reservation r arrival=8999-12-31T00:00:00Z deadline=+36000d {{ atom({B}, w=1h) }}"
    (error,) = errors_of(text).errors
    assert str(error.span) == "bad.rdl:1:1" and RANGE in str(error)


def test_every_stored_time_prints_with_four_digit_years_and_reads_back() -> None:
    early = datetime(999, 6, 1, tzinfo=UTC)
    assert format_instant(early) == "0999-06-01T00:00:00Z"
    assert read_instant(format_instant(early)) == early


@pytest.mark.parametrize("text", ["99999999999d", "1e300h", "36526d", "5218w", "876600h1s"])
def test_a_duration_longer_than_a_century_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="longer than 100 years"):
        parse_duration(text)


def test_a_century_is_the_longest_duration() -> None:
    assert parse_duration("36525d") == 36525 * 86400


@pytest.mark.parametrize("every", ["99999999999d", "1e300h"])
def test_a_huge_period_is_an_error_at_the_value(every: str) -> None:
    (error,) = errors_of(f"reservation r every={every} {{ atom({B}, w=1h) }}").errors
    assert str(error.span) == "bad.rdl:1:21" and "longer than 100 years" in error.message


@pytest.mark.parametrize("nested", ["[" * 5000 + "]" * 5000, "{a: " * 5000 + "1" + "}" * 5000,
                                    "".join(f"\n{'  ' * i}a:" for i in range(600)) + " 1"])
def test_yaml_nested_thousands_deep_is_an_error_at_its_place_not_a_recursion_error(nested: str) -> None:
    text = f"start: 2026-11-23T00:00:00Z\ncapacity: {{vcores: 4}}\nx: {nested}\n"
    with pytest.raises(RDLErrors) as raised:
        parse_cluster(text, "deep.yaml")
    (error,) = raised.value.errors
    assert str(error.span).startswith("deep.yaml:") and "nested deeper than 100 levels" in error.message


def test_yaml_a_hundred_deep_is_still_read() -> None:
    assert safe_load("[" * 100 + "]" * 100) is not None


def test_recurring_capacity_changes_too_dense_for_the_planner_are_an_error_at_changes() -> None:
    changes = "".join(f"  - {{at: +{i}s, every: 2s, for: 1s, capacity: {{vcores: 2}}}}\n" for i in range(1, 11))
    text = f"start: 2026-11-23T00:00:00Z\nstep: 1s\nhorizon: 7d\ncapacity: {{vcores: 4}}\nchanges:\n{changes}"
    with pytest.raises(RDLErrors) as raised:
        parse_cluster(text, "dense.yaml")
    (error,) = raised.value.errors
    assert str(error.span) == "dense.yaml:6:3" and "3,024,010 times in one horizon (7d); at most 5,000" in error.message


def test_recurring_capacity_changes_a_few_thousand_times_a_horizon_are_fine() -> None:
    changes = "  - {at: +1s, every: 5m, for: 1m, capacity: {vcores: 2}}\n"
    cluster = parse_cluster(f"start: 2026-11-23T00:00:00Z\ncapacity: {{vcores: 4}}\nchanges:\n{changes}", "c.yaml")
    assert len(cluster.windows) == 1
