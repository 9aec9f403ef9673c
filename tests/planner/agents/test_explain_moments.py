"""A rejection's moments (explain.format_span, format_moment) read as strftime writes them: `%H:%M` when every one
falls on the plan's first day, `%Y-%m-%d %H:%M` otherwise."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from planner.agents.explain import format_moment, format_span
from planner.core.compile import Clock


@given(origin=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(8999, 1, 1)),
       step=st.sampled_from([1, 10, 60, 300, 3600]), lo=st.integers(0, 200_000), length=st.integers(0, 200_000))
def test_moments_are_strftimes(origin: datetime, step: int, lo: int, length: int) -> None:
    clock = Clock(origin.replace(tzinfo=UTC), step, 10**6)
    hi = lo + length
    start, end = clock.at(lo), clock.at(hi)
    day = clock.origin.date()
    pattern = "%H:%M" if start.date() == day and end.date() == day else "%Y-%m-%d %H:%M"
    assert format_span(lo, hi, clock) == f"[{start.strftime(pattern)}, {end.strftime(pattern)})"
    alone = "%H:%M" if start.date() == day else "%Y-%m-%d %H:%M"
    assert format_moment(lo, clock) == start.strftime(alone)
