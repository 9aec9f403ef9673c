"""The earliest-deadline search compiles a one-off request once and moves its deadline by clipping the tasks
(deadline.Probes): the same instances as compiling the request with each deadline, on random plans and requests."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.admission import Planner
from planner.agents import deadline
from planner.agents.deadline import Probes, asap_finish, with_deadline
from planner.agents.greedy.agent import GreedyAgent
from planner.core.compile import AtomTask, Instance, Task, compile_reservation
from rdl import parse_cluster
from tests.planner.agents.test_properties import Scenario, parse, scenarios
from tests.planner.support import at, instant, make_cluster, pinned


def _same_task(a: Task, b: Task) -> bool:
    if isinstance(a, AtomTask) or isinstance(b, AtomTask):
        return (isinstance(a, AtomTask) and isinstance(b, AtomTask) and a.demand.tolist() == b.demand.tolist()
                and (a.label, a.atom, a.gang, a.parallelism, a.length, a.leases, a.lo, a.hi)
                == (b.label, b.atom, b.gang, b.parallelism, b.length, b.leases, b.lo, b.hi))
    return ((a.kind, a.label, a.lo, a.hi, a.gap, len(a.children)) == (b.kind, b.label, b.lo, b.hi, b.gap,
                                                                         len(b.children))
            and all(_same_task(x, y) for x, y in zip(a.children, b.children, strict=True)))


def _same(a: Instance, b: Instance) -> bool:
    return ((a.index, a.arrival, a.declared, a.expr) == (b.index, b.arrival, b.declared, b.expr)
            and _same_task(a.task, b.task))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), data=st.data())
def test_probes_compile_as_each_deadline_would(scenario: Scenario, data: st.DataObject) -> None:
    planner = Planner(scenario.cluster(), now=scenario.clock())
    plan, clock = planner.plan, planner.plan.clock
    for reservation in parse(scenario.text):
        probes = Probes(plan, reservation, plan.now)
        for step in data.draw(st.lists(st.integers(0, clock.steps), min_size=1, max_size=4)):
            moved = with_deadline(reservation, clock.at(step))
            found = probes.instances(step)
            if moved is None:
                assert found is None
                continue
            assert found is not None and found[0] == moved
            expected = compile_reservation(moved, plan.now, clock, plan.now_step, plan.resources)
            assert len(found[1]) == len(expected)
            assert all(_same(a, b) for a, b in zip(found[1], expected, strict=True))
        planner.submit(reservation, "gree")  # later requests meet a fuller plan and a later clock


@pytest.mark.parametrize("agent", ["gree", "gree-l"])
def test_an_any_is_offered_its_earliest_alternative_with_no_placement(
        agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search starts at the earliest finish of any alternative, not at that of the one a placement prefers
    (`wide` costs less, and would end at step 35). No placement of an `any` of atoms ends before that guess
    (deadline.ends_first), so once it fits it is the answer, and both agents surely place it there
    (deadline.sure_to_fit: GREE-L's flat search falls back on GREE's latest within its budget), so neither tries."""
    planner = Planner(make_cluster({"vcores": 8}, steps=60))
    assert planner.submit(parse(pinned("busy", 0, 30, 7))[0], agent).accepted  # one vcore free until step 30
    assert asap_finish(planner.plan, parse(WIDE_OR_NARROW)[0], planner.plan.now) == 20
    placements = counted(monkeypatch)
    decision = planner.submit(parse(WIDE_OR_NARROW)[0], agent)
    assert decision.reason is not None and decision.reason.code == "capacity"
    assert decision.reason.earliest_deadline == instant(20)  # `narrow` on the free vcore, [0, 20)
    assert placements == []


def test_an_all_is_offered_its_guess_after_trying_a_step_earlier(monkeypatch: pytest.MonkeyPatch) -> None:
    """An `all`'s children crowd each other, so a placement may end before the guess: the search tries a step
    earlier too (two placements) before it offers the guess."""
    planner = Planner(make_cluster({"vcores": 8}, steps=60))
    assert planner.submit(parse(pinned("busy", 0, 30, 7))[0], "gree").accepted
    request = parse(BOTH)[0]
    assert asap_finish(planner.plan, request, planner.plan.now) == 30  # both on the free vcore, one after the other
    placements = counted(monkeypatch)
    decision = planner.submit(request, "gree")
    assert decision.reason is not None and decision.reason.earliest_deadline == instant(30)
    assert placements == [30, 29]


BOTH = ("reservation r deadline=+25m { all(a: atom(b={vcores: 1}, l=20m, w=20m), "
        "b: atom(b={vcores: 1}, l=10m, w=10m)) }")


WIDE_OR_NARROW = ("reservation r deadline=+5m { any(wide: atom(b={vcores: 1}, g=4, h=4, l=5m, w=20m), "
                  "narrow: atom(b={vcores: 1}, g=1, h=1, l=20m, w=20m)) }")


def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The steps the earliest-deadline search places the request at, from now on (one per placement)."""
    placements: list[int] = []
    fits = Probes.fits

    def counting(self: Probes, prober: GreedyAgent, step: int) -> bool:
        placements.append(step)
        return fits(self, prober, step)

    monkeypatch.setattr(Probes, "fits", counting)
    return placements


def _search_after_a_failed_guess(step: str, monkeypatch: pytest.MonkeyPatch) -> tuple[datetime, list[datetime]]:
    """On a plan of `step` steps whose vcores are all held for 90 minutes, the earliest deadline offered a
    10-minute request due in 10 minutes when the guess is one step past its deadline, and the times it tried."""
    cluster = parse_cluster(f"start: {at(0)}\nstep: {step}\nhorizon: 6h\ncapacity: {{vcores: 4}}\n", "c.yaml")
    planner = Planner(cluster)
    assert planner.submit(parse(pinned("busy", 0, 90, 4))[0], "gree").accepted
    with monkeypatch.context() as patch:
        placements = counted(patch)
        patch.setattr(deadline, "asap_finish", lambda plan, *_: 600 // plan.clock.step + 1)
        patch.setattr(deadline, "sure_to_fit", lambda *_: False)  # a forced guess is no earliest end: try it
        decision = planner.submit(parse("reservation r deadline=+10m { atom(b={vcores: 1}, l=10m, w=10m) }")[0],
                                  "gree")
    assert decision.reason is not None and decision.reason.earliest_deadline is not None
    return decision.reason.earliest_deadline, [cluster.start + timedelta(seconds=s * cluster.step) for s in placements]


def test_past_a_guess_that_fails_the_search_moves_in_minutes_at_second_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A guess that does not fit (here forced) makes the search gallop and bisect; on a plan of one-second steps it
    jumps and stops in minutes, so it makes as many placements as on the same plan at one-minute steps, at the same
    times to within a minute, instead of galloping second by second."""
    minutes, at_minutes = _search_after_a_failed_guess("1m", monkeypatch)
    seconds, at_seconds = _search_after_a_failed_guess("1s", monkeypatch)
    assert len(at_seconds) == len(at_minutes) == deadline.MAX_PROBES
    assert all(abs(a - b) < timedelta(minutes=1) for a, b in zip(at_seconds, at_minutes, strict=True))
    assert instant(100) <= seconds and instant(100) <= minutes and abs(seconds - minutes) < timedelta(minutes=1)


def test_an_order_with_a_gap_whose_pass_finds_nothing_is_searched_from_its_end_without_the_gap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the pass with the gaps finds nothing (here forced), the search places the request by the horizon's end,
    then starts where it would end at the earliest without its gaps (deadline.gapless_end), not at its own deadline.
    The one vcore is held for 20 minutes and at steps 22 and 24: without the gap `a` takes [20, 22) and `b` [23, 24),
    so no deadline before 24 fits; with it `b` must start where `a` ends, first at [25, 27) and [27, 28). Galloping
    from 23 finds 28 in five placements; from the request's own deadline (step 3) it took nine."""
    planner = Planner(make_cluster({"vcores": 1}, steps=60))
    for name, start, length in (("busy", 0, 20), ("blip", 22, 1), ("blop", 24, 1)):
        assert planner.submit(parse(pinned(name, start, length, 1))[0], "gree").accepted
    request = parse("reservation r deadline=+3m { order(a: atom(b={vcores: 1}, l=2m, w=2m), "
                    "b: atom(b={vcores: 1}, l=1m, w=1m), gap=0m) }")[0]
    probes = Probes(planner.plan, request, planner.plan.now)
    assert deadline.gapless_end(planner.plan, probes.relaxed) == 24
    assert asap_finish(planner.plan, request, planner.plan.now) == 28  # the pass with the gap, had it been let run
    placements = counted(monkeypatch)
    monkeypatch.setattr(deadline, "asap_finish", lambda *_: None)
    decision = planner.submit(request, "gree")
    assert decision.reason is not None and decision.reason.earliest_deadline == instant(28)
    assert placements == [60, 24, 26, 30, 28, 27]
