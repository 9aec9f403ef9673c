"""Random instances through every agent: whatever is accepted keeps its promises, rejections change nothing.

Hypothesis draws small clusters (1–2 resources, 20–120 one-minute steps, maybe capacity
changes) and a handful of reservations mixing atoms, windows (some off the minute grid),
order with gaps, all, any, gangs, h, l and every; they are submitted one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.admission import Planner
from planner.core.check import check_plan
from rdl import units
from rdl.cluster import Cluster
from rdl.tree import Absolute, Reservation, Window, atoms
from tests.planner.support import AGENT_NAMES, at, cluster_text, instant, make_cluster, parse, use_of

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Scenario:
    capacity: dict[str, str]
    steps: int
    changes: tuple[tuple[int, dict[str, str]], ...]
    text: str
    now: int = 0  # the plan's clock, in steps from the origin

    def clock(self) -> datetime:
        return instant(self.now)

    def cluster(self) -> Cluster:
        return make_cluster(self.capacity, self.steps, self.changes)

    def __repr__(self) -> str:  # what hypothesis prints for a failing example: files one can run
        return (f"--- cluster.yaml\n{cluster_text(self.capacity, self.steps, self.changes)}--- plan.rdl "
                f"(now={at(self.now)})\n{self.text}")


def _time(draw: st.DrawFn, lo: int, hi: int) -> tuple[str, int]:
    """An instant between steps lo and hi, sometimes 30 s off the grid; with its step."""
    step = draw(st.integers(lo, hi))
    iso = at(step)
    if draw(st.integers(0, 5)) == 0:
        iso = iso.replace(":00Z", ":30Z")
    return iso, step


class _Names:
    def __init__(self) -> None:
        self.count = 0

    def prefix(self, draw: st.DrawFn) -> str:
        if not draw(st.booleans()):
            return ""
        self.count += 1
        return f"n{self.count}: "


def _atom(draw: st.DrawFn, resources: tuple[str, ...], names: _Names) -> str:
    parts = []
    if resources == ("vcores",) or draw(st.integers(0, 4)) > 0:
        parts.append(f"vcores: {draw(st.integers(1, 3))}")
    if "memory" in resources and (not parts or draw(st.booleans())):
        parts.append(f"memory: {draw(st.sampled_from(['512MiB', '1GiB', '1.5GiB', '2GiB', '3GiB']))}")
    args = ["b={" + ", ".join(parts) + "}"]
    g = draw(st.integers(1, 3))
    if g > 1 or draw(st.booleans()):
        args.append(f"g={g}")
    if draw(st.booleans()):
        args.append(f"h={draw(st.integers(g, g + 4))}")
    if draw(st.booleans()):
        args.append(f"l={draw(st.sampled_from(['1m', '2m', '3m', '5m', '90s', '30s']))}")
    args.append(f"w={draw(st.sampled_from(['1m', '2m', '3m', '5m', '8m', '12m', '20m', '40m', '90s', '45s']))}")
    return names.prefix(draw) + "atom(" + ", ".join(args) + ")"


@st.composite
def expressions(draw: st.DrawFn, resources: tuple[str, ...], steps: int, names: _Names, depth: int) -> str:
    kind = draw(st.sampled_from(["atom", "atom", "order", "all", "any", "window"] if depth > 0 else ["atom"]))
    if kind == "atom":
        return _atom(draw, resources, names)
    if kind == "window":
        s, s_step = _time(draw, 0, steps - 1)
        e, _ = _time(draw, s_step + 1, steps + 5)
        child = draw(expressions(resources, steps, names, depth - 1))
        return f"{names.prefix(draw)}window(s={s}, e={e}, {child})"
    children = [draw(expressions(resources, steps, names, depth - 1)) for _ in range(draw(st.integers(1, 3)))]
    gap = ""
    if kind == "order" and draw(st.booleans()):
        gap = f", gap={draw(st.sampled_from(['0s', '1m', '2m', '5m', '90s']))}"
    return f"{names.prefix(draw)}{kind}({', '.join(children)}{gap})"


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    resources = draw(st.sampled_from([("vcores",), ("memory", "vcores")]))
    steps = draw(st.integers(20, 120))

    def capacity() -> dict[str, str]:
        values = {"vcores": str(draw(st.integers(2, 8)))}
        if "memory" in resources:
            values["memory"] = f"{draw(st.integers(2, 16))}GiB"
        return {name: values[name] for name in resources}

    base = capacity()
    changes = tuple(sorted(((draw(st.integers(1, steps - 1)), capacity())
                            for _ in range(draw(st.integers(0, 2)))), key=lambda c: c[0]))
    texts = []
    for index in range(draw(st.integers(1, 8))):
        header = ""
        if draw(st.integers(0, 3)) == 0:
            header += f" deadline=+{draw(st.integers(1, steps))}m"
        if draw(st.integers(0, 5)) == 0:
            header += f" every={steps // draw(st.integers(2, 4))}m"
        if draw(st.integers(0, 7)) == 0:
            header += f" arrival=+{draw(st.integers(1, steps // 2))}m"
        body = draw(expressions(resources, steps, _Names(), 2))
        texts.append(f"reservation r{index}{header} {{ {body} }}")
    now = draw(st.integers(0, steps // 3)) if draw(st.integers(0, 3)) == 0 else 0
    return Scenario(base, steps, changes, "\n".join(texts) + "\n", now)


def _plan_and_check(scenario: Scenario, agent: str) -> tuple[Planner, list[dict]]:
    cluster = scenario.cluster()
    reservations = parse(scenario.text)
    planner = Planner(cluster, now=scenario.clock())
    plan = planner.plan
    records = []
    for reservation in reservations:
        before, accepted = plan.used.copy(), dict(plan.accepted)
        record = planner.submit(reservation, agent).to_json(plan.clock)
        records.append(record)
        if record["accepted"]:
            assert record["allocations"], record
            assert set(plan.accepted) == {*accepted, reservation.name}
            # The plan's use grew by exactly what the decision record says it holds.
            assert np.array_equal(plan.used - before, use_of(cluster, [record])), record
        else:
            assert record["reason"]["code"] in ("capacity", "policy", "window", "invalid", "timeout"), record
            assert "allocations" not in record or not record["allocations"]
            assert plan.used.tobytes() == before.tobytes(), record
            assert plan.accepted == accepted
            if record["reason"]["code"] == "capacity" and "atom" in record["reason"]:
                assert record["reason"]["atom"] in {label for label, _ in atoms(reservation.expr)}, record
            if "earliest_deadline" in record["reason"]:
                _check_earliest_deadline(planner, reservation, record, agent)
        assert (plan.used <= plan.capacity + 1e-6).all()
    assert check_plan(cluster, reservations, records, submitted=scenario.clock(), now=scenario.clock()) == []
    return planner, records


def _check_earliest_deadline(planner: Planner, reservation: Reservation, record: dict, agent: str) -> None:
    """The request with the offered deadline fits the plan as it stands, and that deadline is a later one."""
    assert record["reason"]["code"] == "capacity", record
    earliest = units.parse_instant(record["reason"]["earliest_deadline"])
    arrival = reservation.arrival_at(planner.plan.now)
    if reservation.deadline is not None:
        assert earliest > reservation.deadline.resolve(arrival)
        moved = replace(reservation, deadline=Absolute(earliest))
    else:
        assert isinstance(reservation.body, Window), "earliest_deadline offered for a request without a deadline"
        assert earliest > reservation.body.end.resolve(arrival)
        moved = replace(reservation, body=replace(reservation.body, end=Absolute(earliest)))
    before = planner.plan.used.tobytes()
    assert planner.submit(moved, agent, dry_run=True).accepted, record
    assert planner.plan.used.tobytes() == before


@pytest.mark.parametrize("agent", AGENT_NAMES)
@FAST
@given(scenario=scenarios())
def test_random_plans_keep_their_promises(agent: str, scenario: Scenario) -> None:
    _plan_and_check(scenario, agent)


@pytest.mark.parametrize("agent", AGENT_NAMES)
@FAST
@given(scenario=scenarios(), data=st.data())
def test_removing_everything_in_any_order_empties_the_plan(agent: str, scenario: Scenario, data: st.DataObject) -> None:
    planner, _ = _plan_and_check(scenario, agent)
    plan = planner.plan
    zeros = np.zeros_like(plan.used).tobytes()
    for name in data.draw(st.permutations(sorted(plan.accepted))):
        plan.remove(name)
    assert plan.used.tobytes() == zeros


@pytest.mark.parametrize("agent", AGENT_NAMES)
@FAST
@given(scenario=scenarios())
def test_dry_run_changes_nothing(agent: str, scenario: Scenario) -> None:
    cluster = scenario.cluster()
    planner = Planner(cluster, now=scenario.clock())
    plan = planner.plan
    records = []
    reservations = parse(scenario.text)
    for reservation in reservations:
        before, accepted = plan.used.tobytes(), dict(plan.accepted)
        trial = planner.submit(reservation, agent, dry_run=True).to_json(plan.clock)
        assert plan.used.tobytes() == before and plan.accepted == accepted
        if trial["accepted"]:
            # What a dry run offers is itself a valid addition to the plan as it stands.
            assert check_plan(cluster, [*reservations[:len(records)], reservation], [*records, trial],
                              submitted=scenario.clock(), now=scenario.clock()) == []
        records.append(planner.submit(reservation, agent).to_json(plan.clock))
    assert check_plan(cluster, reservations, records, submitted=scenario.clock(), now=scenario.clock()) == []


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENT_NAMES)
@SLOW
@given(scenario=scenarios())
def test_random_plans_keep_their_promises_at_length(agent: str, scenario: Scenario) -> None:
    _plan_and_check(scenario, agent)
