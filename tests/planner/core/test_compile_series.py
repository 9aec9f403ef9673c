"""A series' past is not enumerated (issue #29): compiling costs work for the plan's periods, not the series' age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from planner.admission import Planner
from planner.core import compile as compiling
from planner.core.compile import compile_reservation
from planner.store.series import entering
from rdl.cluster import parse_cluster
from rdl.syntax.parser import parse_text

CLUSTER = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {vcores: 8}\n")
START = datetime(2026, 11, 23, tzinfo=UTC)


def series(arrival: str, every: str) -> object:
    (reservation,) = parse_text(f"reservation r user=a arrival={arrival} every={every} "
                                "{ window(e=+1h, atom(b={vcores: 1}, w=1m)) }")
    return reservation


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every expression compiled, by path: the work compiling does."""
    seen: list[str] = []
    original = compiling.compile_expr

    def counting(expr, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(path)
        return original(expr, path, *args, **kwargs)

    monkeypatch.setattr(compiling, "compile_expr", counting)
    return seen


@pytest.mark.parametrize(("arrival", "every", "periods"), [("1970-01-01T00:00:00Z", "12h", 2),
                                                           ("1970-01-01T00:00:00Z", "2m", 720),
                                                           ("2000-01-01T00:00:00Z", "1h", 24)])
def test_a_series_arriving_long_ago_is_rejected_with_work_for_the_horizon_only(compiled: list[str], arrival: str,
                                                                                every: str, periods: int) -> None:
    decision = Planner(CLUSTER, START).submit(series(arrival, every), "gree")  # type: ignore[arg-type]
    assert not decision.accepted and decision.reason is not None and decision.reason.code == "window"
    assert arrival[:10] in decision.reason.message  # the first instance, which ended long ago, is the one named
    assert len(compiled) <= 2 * (periods + 3)  # atom and window per instance: the horizon's periods, at most


def test_the_instances_of_an_old_series_keep_their_indices(compiled: list[str]) -> None:
    reservation = series("2026-11-23T00:00:00Z", "1h")
    planner = Planner(CLUSTER, START)
    clock = planner.plan.clock
    later = compiling.Clock(clock.origin + timedelta(days=3650), clock.step, clock.steps)
    instances = compile_reservation(reservation, START, later, 0, planner.plan.resources)  # type: ignore[arg-type]
    assert instances[0].index == 0
    indices = [i.index for i in instances[1:]]
    assert indices == list(range(indices[0], indices[0] + len(indices)))
    assert all(i.arrival == START + timedelta(hours=i.index) for i in instances)
    assert indices[0] <= 3650 * 24 <= indices[0] + 2 and len(instances) <= 24 + 3
    moved = compiling.Clock(later.origin + timedelta(hours=5), later.step, later.steps)
    span = entering(reservation, START, later, moved, planner.plan.resources)  # type: ignore[arg-type]
    assert span == range(indices[-1] + 1, indices[-1] + 6)
