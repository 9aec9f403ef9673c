"""`placement=early`: the greedy agents place such a reservation as early as it fits, keep every promise the late
placement keeps, and leave every other reservation as it was (docs/rdl.md, Placement)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.admission import Planner
from planner.core.check import check_plan
from rdl import parse_cluster
from rdl.syntax.parser import parse_text
from tests.planner.agents.test_properties import FAST, Scenario, _plan_and_check, scenarios

GREEDY = ["gree", "gree-l"]
START = datetime(2026, 11, 23, tzinfo=UTC)
CLUSTER = parse_cluster("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 2d\ncapacity: {vcores: 64, gpu: 16}\n")
TRAIN = ("reservation train_llm user=dana deadline=+1d {placement} "
         "{{ atom(b={{gpu: 1, vcores: 4}}, g=8, h=8, l=6h, w=48h) }}")


def placed(text: str, agent: str, planner: Planner | None = None) -> tuple[int, int]:
    """(first start, last end) in steps of the one reservation in `text`, checked."""
    planner = planner or Planner(CLUSTER, START)
    (reservation,) = parse_text(text)
    decision = planner.submit(reservation, agent)
    assert decision.accepted, decision.reason
    assert check_plan(CLUSTER, [reservation], [decision.to_json(planner.plan.clock)], submitted=START) == [] \
        or len(planner.plan.accepted) > 1
    return min(a.start for a in decision.allocations), max(a.end for a in decision.allocations)


@pytest.mark.parametrize("agent", GREEDY)
def test_a_gang_asking_for_early_starts_at_its_arrival_and_late_ends_at_its_deadline(agent: str) -> None:
    assert placed(TRAIN.format(placement="placement=early"), agent) == (0, 360)
    assert placed(TRAIN.format(placement=""), agent) == (1440 - 360, 1440)  # the default is unchanged
    assert placed(TRAIN.format(placement="placement=late"), agent) == (1440 - 360, 1440)


@pytest.mark.parametrize("agent", GREEDY)
def test_early_goes_round_what_is_already_planned(agent: str) -> None:
    planner = Planner(CLUSTER, START)
    placed("reservation busy { window(e=+2h, atom(b={gpu: 1}, g=16, h=16, l=2h, w=32h)) }", agent, planner)
    assert placed(TRAIN.format(placement="placement=early"), agent, planner) == (120, 480)


def test_an_order_placed_early_keeps_its_stages_in_order_and_its_gap() -> None:
    planner = Planner(CLUSTER, START)
    text = ("reservation pipeline deadline=+10h placement=early { order(a: atom(b={vcores: 8}, g=2, h=2, l=1h, w=2h), "
            "b: atom(b={vcores: 8}, g=4, h=4, l=30m, w=2h), gap=15m) }")
    (reservation,) = parse_text(text)
    decision = planner.submit(reservation, "gree")
    assert decision.accepted
    spans = {a.atom: (a.start, a.end) for a in decision.allocations}
    assert spans == {"a": (0, 60), "b": (60, 90)}
    assert check_plan(CLUSTER, [reservation], [decision.to_json(planner.plan.clock)], submitted=START) == []


def test_a_rejection_placed_early_names_the_piece_and_its_window() -> None:
    planner = Planner(CLUSTER, START)
    (reservation,) = parse_text("reservation big deadline=+2h placement=early "
                                "{ huge: atom(b={gpu: 1}, g=16, h=16, l=1h, w=16h) }")
    planner.submit(parse_text("reservation busy { window(e=+90m, atom(b={gpu: 1}, l=90m, w=90m)) }")[0], "gree")
    decision = planner.submit(reservation, "gree")
    assert not decision.accepted and decision.reason is not None and decision.reason.code == "capacity"
    assert "huge" in decision.reason.message or decision.reason.atom == "huge"


def early(scenario: Scenario, data: st.DataObject) -> Scenario:
    """The scenario with some of its reservations asking for early placement."""
    def mark(found: re.Match[str]) -> str:
        return found.group(0) + (" placement=early" if data.draw(st.booleans()) else "")
    return Scenario(scenario.capacity, scenario.steps, scenario.changes,
                    re.sub(r"reservation r\d+", mark, scenario.text), scenario.now)


@pytest.mark.parametrize("agent", GREEDY)
@FAST
@given(scenario=scenarios(), data=st.data())
def test_random_plans_with_early_reservations_keep_their_promises(agent: str, scenario: Scenario,
                                                                  data: st.DataObject) -> None:
    _plan_and_check(early(scenario, data), agent)


@pytest.mark.parametrize("agent", GREEDY)
@FAST
@given(scenario=scenarios(), gang=st.integers(1, 4), length=st.integers(1, 20), deadline=st.integers(1, 120))
def test_one_lease_placed_early_starts_no_later_than_late_and_fits_whenever_late_fits(
        agent: str, scenario: Scenario, gang: int, length: int, deadline: int) -> None:
    """One lease (a gang held once) fits wherever the free capacity allows it: early finds the earliest such place,
    late the latest, on the same plan."""
    planner, _ = _plan_and_check(scenario, agent)
    text = (f"reservation probe deadline=+{deadline}m {{placement}} "
            f"{{{{ atom(b={{{{vcores: 1}}}}, g={gang}, h={gang}, l={length}m, w={gang * length}m) }}}}")
    results = {}
    for placement in ("placement=early", ""):
        (reservation,) = parse_text(text.format(placement=placement))
        decision = planner.submit(reservation, agent, dry_run=True)
        results[placement] = min(a.start for a in decision.allocations) if decision.accepted else None
    assert (results["placement=early"] is None) == (results[""] is None)
    if results[""] is not None:
        assert results["placement=early"] is not None and results["placement=early"] <= results[""]
