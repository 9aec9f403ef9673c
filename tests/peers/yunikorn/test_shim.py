"""The same scenarios through the real yunikorn-core (tests/peers/yunikorn/shim, core 1.4.0: the last with stateaware)
and through our scheduler, the follower's rounds applied to both: what matters per policy must agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from follower.follow.follower import Follower
from tests.follower.fakes import START, bundles, minute, plan_of
from tests.peers.yunikorn.shim_harness import (
    App,
    Scenario,
    Task,
    Trace,
    guaranteed_reached,
    over_max,
    run_core,
    run_ours,
)
from tests.peers.yunikorn.validator import PeerUnavailable

pytestmark = pytest.mark.peer

NODES = {f"n{i}": bundles(10) for i in range(10)}  # the plan's 100 bundles in ten nodes
ONE = bundles(1)
SCALE = 1 / 60  # one scenario minute (a plan step) is one real second


def scenario(reservations: tuple[tuple[str, int, int, list[tuple[int, int, int]]], ...], apps: list[App],
             minutes: int, **options: Any) -> Scenario:
    """The follower's rounds over `minutes` of a plan holding `reservations`, with these applications."""
    rounds = Follower().rounds(plan_of(*reservations), minute(0), minute(minutes))
    points: list[tuple[float, Any]] = []
    for round in rounds:
        if not points or points[-1][1].settings() != round.settings():
            points.append(((round.time - START).total_seconds(), round))
    return Scenario(nodes=NODES, queues=options.pop("queues", {}), rounds=tuple(points), apps=tuple(apps),
                    end=60.0 * minutes, scale=options.pop("scale", SCALE), **options)


def tasks(prefix: str, at: float, count: int, duration: float, size: Mapping[str, float] = ONE) -> tuple[Task, ...]:
    return tuple(Task(f"{prefix}{i}", at, size, duration) for i in range(1, count + 1))


def both(s: Scenario) -> tuple[Trace, Trace]:
    try:
        core = run_core(s)
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    return core, run_ours(s)


# ---- stateaware: the seed's example run ---------------------------------------------------------------------------


def test_stateaware_runs_the_design_example_as_the_1_4_core_does() -> None:
    """App1's driver, then E11 and E12, and only then App2's driver (YuniKorn's StateAware design), in a reservation
    queue the follower made."""
    long = 3600.0
    apps = [App("App1", "root.plan.r", 0.0, (Task("D1", 0.0, ONE, long), *tasks("E1", 120.0, 2, long))),
            App("App2", "root.plan.r", 60.0, (Task("D2", 60.0, ONE, long), *tasks("E2", 240.0, 1, long)))]
    s = scenario((("r", 0, 30, [(0, 30, 20)]),), apps, 6, sort_policy="stateaware")
    core, ours = both(s)
    expected = [("App1", "D1"), ("App1", "E11"), ("App1", "E12"), ("App2", "D2"), ("App2", "E21")]
    assert core.order() == expected
    assert ours.order() == expected
    assert _states(core, "App1") == _states(ours, "App1") == ["Accepted", "Starting", "Running"]


def _states(trace: Trace, app: str) -> list[str]:
    return [state for _, a, state in trace.states if a == app and state != "New"]


# ---- fifo and fair inside a reservation queue ----------------------------------------------------------------------


def _queue_apps(policy: str) -> Scenario:
    """Three applications in one reservation queue of 20 bundles (max = guaranteed), more work than room."""
    apps = [App("A", "root.plan.r", 0.0, tasks("a", 0.0, 15, 120.0)),
            App("B", "root.plan.r", 30.0, tasks("b", 30.0, 10, 120.0)),
            App("C", "root.plan.r", 60.0, tasks("c", 60.0, 10, 60.0))]
    return scenario((("r", 0, 30, [(0, 30, 20)]),), apps, 6, sort_policy=policy)


def test_fifo_serves_the_oldest_application_first_as_the_core_does() -> None:
    s = _queue_apps("fifo")
    core, ours = both(s)
    assert core.order() == ours.order()
    assert [app for app, _ in ours.order()] == ["A"] * 15 + ["B"] * 5 + ["B"] * 5 + ["C"] * 10
    assert _at_most(core, s, 20) and _at_most(ours, s, 20)


def test_fair_serves_the_least_used_application_first_as_the_core_does() -> None:
    s = _queue_apps("fair")
    core, ours = both(s)
    assert core.order() == ours.order()
    # at 120 s A's fifteen end: C (using nothing) catches up with B (using five), then they alternate
    assert "".join(app for app, _ in ours.order()) == "A" * 15 + "B" * 5 + "C" * 5 + "BC" * 5
    assert _at_most(core, s, 20) and _at_most(ours, s, 20)


def _at_most(trace: Trace, s: Scenario, count: int) -> bool:
    return over_max(trace, s, [(0.0, s.end, "root.plan.r", bundles(count))]) == []
