"""GREE-S (planner/agents/sized.py): it refuses, with a `policy` reason, a reservation needing more than a tenth of
the cluster over its window, and decides every other one exactly as GREE-L would on the same plan."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.admission import Planner
from planner.agents.registry import AGENTS, get_agent
from planner.agents.sized import DEFAULT_SHARE, SizedAgent, window_share
from planner.core.check import check_plan
from planner.core.compile import AtomTask, GroupTask, Task, compile_reservation
from rdl import parse_cluster
from rdl.syntax.parser import parse_text
from tests.planner.agents.test_properties import FAST, Scenario, _plan_and_check, scenarios
from tests.planner.support import parse

START = datetime(2026, 11, 23, tzinfo=UTC)
ATOM = parse_text("reservation r { atom(b={vcores: 1}, w=1m) }")[0].body
CLUSTER = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {vcores: 64}\n")


def decide(text: str, agent: str, planner: Planner | None = None) -> dict:
    planner = planner or Planner(CLUSTER, START)
    (reservation,) = parse_text(text)
    return planner.submit(reservation, agent).to_json(planner.plan.clock)


def test_it_is_opt_in_by_name_and_not_among_the_listed_agents() -> None:
    assert isinstance(get_agent("gree-s"), SizedAgent) and get_agent("gree-s").name == "gree-s"
    assert "gree-s" not in AGENTS.names


def test_a_reservation_needing_more_than_a_tenth_of_its_window_is_refused_even_on_an_empty_plan() -> None:
    text = "reservation wide deadline=+1h { atom(b={vcores: 8}, l=30m, w=1h) }"  # 8 of 64 vcore-hours: 12.5%
    assert decide(text, "gree-l")["accepted"]
    record = decide(text, "gree-s")
    assert not record["accepted"]
    assert record["reason"]["code"] == "policy" and "earliest_deadline" not in record["reason"]
    assert "12.5% of the cluster's vcores" in record["reason"]["message"]
    assert "up to 10%" in record["reason"]["message"]


def test_a_later_deadline_lowers_the_share_below_the_limit() -> None:
    assert decide("reservation wide deadline=+2h { atom(b={vcores: 8}, l=30m, w=1h) }", "gree-s")["accepted"]


def test_under_the_limit_it_places_as_gree_l() -> None:
    text = "reservation narrow deadline=+1h { atom(b={vcores: 8}, l=15m, w=45m) }"  # 6 of 64: 9.4%
    mine, theirs = decide(text, "gree-s"), decide(text, "gree-l")
    assert mine["accepted"] and mine["allocations"] == theirs["allocations"]


def test_any_counts_its_lightest_alternative_and_order_the_sum_of_its_stages() -> None:
    light = "reservation light deadline=+1h { any(atom(b={vcores: 16}, l=1h, w=1h), atom(b={vcores: 1}, w=1h)) }"
    assert decide(light, "gree-s")["accepted"]
    heavy = ("reservation heavy deadline=+1h { order(atom(b={vcores: 4}, l=30m, w=30m), "
             "atom(b={vcores: 4}, l=30m, w=1h)) }")  # 2 + 4 of 64 vcore-hours, 9.4%, but in one window of 1h
    (reservation,) = parse_text(heavy)
    planner = Planner(CLUSTER, START)
    (instance,) = compile_reservation(reservation, START, planner.plan.clock, 0, planner.plan.resources)
    assert window_share(instance.task, planner.plan) == (pytest.approx(6 / 64), 0)


def test_a_window_the_horizon_cuts_too_short_is_a_window_rejection_as_under_gree_l() -> None:
    """Found by hypothesis in CI: 1 of 2 vcores over the 1.5 minutes left inside the horizon is over the tenth, but
    the horizon, not the share, is why it cannot be placed."""
    cluster = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 85m\ncapacity: {vcores: 2}\n")
    text = ("reservation r0 { window(s=2026-11-23T01:23:30Z, e=2026-11-23T01:26:30Z, "
            "atom(b={vcores: 1}, w=3m)) }")
    mine, theirs = decide(text, "gree-s", Planner(cluster, START)), decide(text, "gree-l", Planner(cluster, START))
    assert not mine["accepted"] and mine["reason"]["code"] == theirs["reason"]["code"] == "window"


def test_a_capacity_drop_inside_the_window_raises_the_share() -> None:
    cluster = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1d\ncapacity: {vcores: 64}\n"
                            "changes:\n  - {at: 2026-11-23T00:30:00Z, capacity: {vcores: 16}}\n")
    planner = Planner(cluster, START)
    (reservation,) = parse_text("reservation r deadline=+1h { atom(b={vcores: 1}, w=4h) }")
    (instance,) = compile_reservation(reservation, START, planner.plan.clock, 0, planner.plan.resources)
    assert window_share(instance.task, planner.plan) == (pytest.approx(4 / 40), 0)  # 64 / 2 + 16 / 2 vcore-hours


@FAST
@given(scenario=scenarios())
def test_on_random_plans_it_refuses_exactly_the_wide_ones_and_places_the_rest_as_gree_l(scenario: Scenario) -> None:
    cluster = scenario.cluster()
    reservations = parse(scenario.text)
    planner = Planner(cluster, now=scenario.clock())
    plan = planner.plan
    records = []
    for reservation in reservations:
        instances = compile_reservation(reservation, scenario.clock(), plan.clock, plan.now_step, plan.resources)
        wide = any(window_share(i.task, plan)[0] > DEFAULT_SHARE for i in instances)
        flat = planner.submit(reservation, "gree-l", dry_run=True, explain=False).to_json(plan.clock)
        before = plan.used.tobytes()
        record = planner.submit(reservation, "gree-s").to_json(plan.clock)
        records.append(record)
        if wide and (flat["accepted"] or flat["reason"]["code"] not in ("window", "invalid")):
            assert not record["accepted"] and record["reason"]["code"] == "policy", record
            assert plan.used.tobytes() == before
        else:
            assert record["accepted"] == flat["accepted"], (record, flat)
            assert record.get("allocations") == flat.get("allocations")
            if not record["accepted"]:
                assert record["reason"]["code"] == flat["reason"]["code"]
    assert check_plan(cluster, reservations, records, submitted=scenario.clock(), now=scenario.clock()) == []


@FAST
@given(scenario=scenarios())
def test_random_plans_keep_their_promises(scenario: Scenario) -> None:
    """What every listed agent's plans promise (test_properties.py): the checker finds nothing, the plan's use grows
    by exactly what each record holds, rejections change nothing, an offered earliest deadline fits."""
    _plan_and_check(scenario, "gree-s")


def _numpy_share(task: Task, held: np.ndarray) -> tuple[float, int]:
    """window_share as first written, in numpy: the oracle for the float version."""
    def need(node: Task) -> np.ndarray:
        if isinstance(node, AtomTask):
            return node.demand * float(node.leases * node.gang * node.length)
        needs = [need(child) for child in node.children]
        if node.kind != "any":
            return np.sum(needs, axis=0)
        return min(needs, key=lambda each: float(shares(each).max()))

    def shares(amount: np.ndarray) -> np.ndarray:
        out = np.where(amount > 0, np.inf, 0.0)
        np.divide(amount, held, out=out, where=held > 0)
        return out

    found = shares(need(task))
    row = int(np.argmax(found))
    return float(found[row]), row


_AMOUNT = st.one_of(st.just(0.0), st.floats(1e-3, 1e4), st.integers(1, 512).map(float))
_HELD = st.one_of(st.just(0.0), st.floats(1e-3, 1e4))


@st.composite
def _tasks(draw: st.DrawFn, resources: int, depth: int = 2) -> Task:
    if depth == 0 or draw(st.booleans()):
        demand = np.array(draw(st.lists(_AMOUNT, min_size=resources, max_size=resources)))
        return AtomTask("a", ATOM, demand, draw(st.integers(1, 64)), None, draw(st.integers(1, 90)),
                        draw(st.integers(1, 9)), 0, 60)
    children = tuple(draw(_tasks(resources, depth - 1)) for _ in range(draw(st.integers(1, 12))))
    return GroupTask(draw(st.sampled_from(["all", "order", "any"])), "g", children, 0, 60)


@given(data=st.data(), resources=st.integers(1, 3))
def test_the_share_is_numpys_to_the_last_bit(data: st.DataObject, resources: int) -> None:
    """window_share works in Python floats but sums a group's children with numpy: the same share and resource as
    numpy's on any tree, a resource the window holds none of included (numpy's pairwise sum, the one case where the
    order of additions shows, is held by the test below)."""
    task = data.draw(_tasks(resources))
    capacity = data.draw(st.lists(_HELD, min_size=resources, max_size=resources))
    names = ", ".join(f"r{index}: 64" for index in range(resources))
    cluster = parse_cluster(f"start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1h\ncapacity: {{{names}}}\n")
    plan = Planner(cluster, START).plan
    plan.capacity[:] = np.array(capacity)[:, None]
    held = plan.capacity[:, :60].sum(axis=1)
    assert window_share(task, plan) == _numpy_share(task, held)


def test_a_group_of_eight_or_more_on_one_resource_sums_as_numpy() -> None:
    """Where numpy's order of additions differs from one after another (one resource, eight children or more: it
    sums pairwise), random amounts show it in about a third of the groups (fails on summing in Python, tried)."""
    rng = random.Random(7)
    cluster = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 1h\ncapacity: {vcores: 64}\n")
    plan = Planner(cluster, START).plan
    held = plan.capacity[:, :60].sum(axis=1)
    for _ in range(300):
        children = tuple(AtomTask("a", ATOM, np.array([rng.uniform(1e-3, 1e4)]), rng.randint(1, 64), None,
                                  rng.randint(1, 90), rng.randint(1, 9), 0, 60) for _ in range(rng.randint(8, 12)))
        task = GroupTask(rng.choice(["all", "order"]), "g", children, 0, 60)
        assert window_share(task, plan) == _numpy_share(task, held)
