"""A stored `tz=` series goes on across a change of clocks: each instance that comes into the horizon as the plan
rolls keeps the series' local wall time, and the plan as stored passes the checker (docs/rdl.md, Time zones)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from planner.store.facade import Store
from rdl import parse_text
from tests.planner.store.test_lifecycle import violations

BERLIN = ZoneInfo("Europe/Berlin")
CLUSTER = "start: 2027-03-26T00:00:00Z\nstep: 15m\nhorizon: 2d\ncapacity: {vcores: 8}\n"
DAILY = ("reservation report tz=Europe/Berlin arrival=2027-03-26T06:00 deadline=+2h every=1d until=2027-04-01T00:00 "
         "{ atom(b={vcores: 2}, g=2, h=2, l=1h, w=2h) }")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "plan.db")
    opened.init(CLUSTER, "spring.yaml")
    yield opened
    opened.close()


def test_a_stored_daily_series_keeps_its_local_hour_as_the_plan_rolls_across_the_change(store: Store) -> None:
    assert store.submit(parse_text(DAILY)[0], "gree").accepted
    ends: dict[int, datetime] = {}
    for day in (27, 28, 29, 30):  # the clocks go forward on the 28th
        store.advance(datetime(2027, 3, day, 12, tzinfo=UTC))
        assert violations(store) == []
        clock = store.clock()
        ends |= {a.instance: clock.at(a.end).astimezone(BERLIN) for a in store.get("report").allocations}
    assert sorted(ends) == [0, 1, 2, 3, 4, 5]  # arrivals on the 26th to the 31st, each placed once
    assert [moment.day for _, moment in sorted(ends.items())] == [26, 27, 28, 29, 30, 31]
    assert {moment.hour for moment in ends.values()} == {8}  # GREE: as late as 06:00 + 2h, Berlin time, every day
