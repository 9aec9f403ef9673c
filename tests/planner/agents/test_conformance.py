"""Hand-made cases with known answers, run through every registered agent.

Every case that plans also passes the independent checker (`check_plan`), and most pin
the exact answer where only one placement is valid.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from planner.admission import Planner
from planner.core.check import check_plan
from rdl import units
from rdl.cluster import parse_cluster
from rdl.errors import RDLErrors
from rdl.validate import validate
from tests.planner.support import (
    Lease,
    Run,
    at,
    instant,
    make_cluster,
    one,
    parse,
    pinned,
    run_plan,
    step_of,
)


def bundles_per_step(leases: list[Lease], steps: int) -> list[int]:
    return [sum(x.bundles for x in leases if x.start <= t < x.end) for t in range(steps)]


# -- exact fits and one bundle too many ----------------------------------------------------


def test_gang_exactly_equal_to_capacity_is_accepted(agent: str) -> None:
    cluster = make_cluster({"memory": "16GiB", "vcores": 8}, steps=10)
    run = run_plan(cluster, f"""
        reservation mpi {{ window(s={at(2)}, e={at(5)},
            solve: atom(b={{memory: 2GiB, vcores: 1}}, g=8, h=8, l=3m, w=24m)) }}""", agent)
    assert run.violations == []
    assert run.accepted("mpi")
    assert run.leases("mpi") == [Lease("solve", 2, 5, 8)]
    (entry,) = run.decision("mpi")["allocations"]
    assert entry["resources"] == {"memory": 16384, "vcores": 8}
    assert (run.used[:, 2:5] == run.planner.plan.capacity[:, 2:5]).all()


def test_malleable_work_exactly_filling_its_window_is_accepted(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, f"reservation mr {{ window(s={at(3)}, e={at(6)}, m: atom(b={{vcores: 1}}, w=12m)) }}",
                   agent)
    assert run.violations == []
    assert run.accepted("mr")
    assert bundles_per_step(run.leases("mr"), 10) == [0, 0, 0, 4, 4, 4, 0, 0, 0, 0]


def test_one_bundle_too_many_beside_a_blocker_is_a_capacity_rejection(agent: str) -> None:
    cluster = make_cluster({"vcores": 8}, steps=10)
    run = run_plan(cluster, pinned("blocker", 0, 10, 1) + f"""
        reservation mpi {{ window(s={at(2)}, e={at(5)}, solve: atom(b={{vcores: 1}}, g=8, h=8, l=3m, w=24m)) }}""",
                   agent)
    assert run.violations == []
    assert run.accepted("blocker")
    decision = run.decision("mpi")
    assert not decision["accepted"]
    assert "allocations" not in decision or decision["allocations"] == []
    reason = decision["reason"]
    assert reason["code"] == "capacity"
    assert reason["atom"] == "solve"
    assert "8" in reason["message"] and "7" in reason["message"]  # needs 8, at most 7 free at once


def test_one_bundle_too_many_after_a_capacity_drop_is_a_capacity_rejection(agent: str) -> None:
    # Validation measures against the peak capacity (8), so this is not bad input: it does not fit *now*.
    cluster = make_cluster({"vcores": 8}, steps=10, changes=[(5, {"vcores": 7})])
    run = run_plan(cluster, f"""
        reservation late {{ window(s={at(5)}, e={at(10)}, solve: atom(b={{vcores: 1}}, g=8, h=8, l=2m, w=16m)) }}
        reservation early {{ window(s={at(0)}, e={at(5)}, solve: atom(b={{vcores: 1}}, g=8, h=8, l=2m, w=16m)) }}""",
                   agent)
    assert run.violations == []
    reason = run.decision("late")["reason"]
    assert reason["code"] == "capacity" and reason["atom"] == "solve"
    assert "8" in reason["message"] and "7" in reason["message"]
    assert run.accepted("early")
    (lease,) = run.leases("early")
    assert lease.bundles == 8 and lease.start >= 0 and lease.end <= 5


def test_gang_larger_than_the_cluster_is_invalid(agent: str) -> None:
    cluster = make_cluster({"vcores": 8}, steps=10)
    run = run_plan(cluster, "reservation mpi { solve: atom(b={vcores: 1}, g=9, h=9, l=2m, w=18m) }", agent)
    assert run.violations == []
    assert run.decision("mpi")["reason"]["code"] == "invalid"


# -- gangs that cannot overlap ---------------------------------------------------------------

GANG = "atom(b={vcores: 1}, g=5, h=5, l=3m, w=15m)"


def _two_gangs(window: int) -> str:
    return "".join(f"reservation {name} {{ window(s={at(0)}, e={at(window)}, {name}: {GANG}) }}\n"
                   for name in ("first", "second"))


def test_two_big_gangs_go_one_after_the_other(agent: str) -> None:
    cluster = make_cluster({"vcores": 8}, steps=12)
    run = run_plan(cluster, _two_gangs(6), agent)
    assert run.violations == []
    assert run.accepted("first") and run.accepted("second")
    (a,), (b,) = run.leases("first"), run.leases("second")
    assert {(a.start, a.end), (b.start, b.end)} == {(0, 3), (3, 6)}


def test_two_big_gangs_one_step_short_rejects_the_second(agent: str) -> None:
    cluster = make_cluster({"vcores": 8}, steps=12)
    run = run_plan(cluster, _two_gangs(5), agent)
    assert run.violations == []
    assert run.accepted("first")
    assert not run.accepted("second")
    assert run.decision("second")["reason"]["code"] == "capacity"
    assert run.decision("second")["reason"]["atom"] == "second"


def test_two_big_gangs_in_one_all_are_placed_one_after_the_other(agent: str) -> None:
    cluster = make_cluster({"vcores": 8}, steps=12)
    run = run_plan(cluster, f"""
        reservation fits {{ window(s={at(0)}, e={at(6)}, all(a: {GANG}, b: {GANG})) }}
        reservation short {{ window(s={at(6)}, e={at(11)}, all(a: {GANG}, b: {GANG})) }}""", agent)
    assert run.violations == []
    assert run.accepted("fits")
    assert sorted((x.start, x.end) for x in run.leases("fits")) == [(0, 3), (3, 6)]
    assert not run.accepted("short")
    assert run.decision("short")["reason"]["code"] == "capacity"


def test_parallelism_serialises_leases_of_one_atom(agent: str) -> None:
    # h=5 with g=5: the two leases of the atom may never overlap, though the cluster holds 10.
    cluster = make_cluster({"vcores": 10}, steps=12)
    run = run_plan(cluster, f"reservation r {{ window(s={at(2)}, e={at(8)}, "
                            f"x: atom(b={{vcores: 1}}, g=5, h=5, l=3m, w=30m)) }}", agent)
    assert run.violations == []
    assert sorted((x.start, x.end, x.bundles) for x in run.leases("r")) == [(2, 5, 5), (5, 8, 5)]


# -- order too tight -------------------------------------------------------------------------

ORDERED = "order(a: atom(b={vcores: 1}, g=4, h=4, l=3m, w=12m), b: atom(b={vcores: 1}, g=4, h=4, l=3m, w=12m))"


def test_order_exactly_as_long_as_its_window_is_placed_back_to_back(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, f"reservation r {{ window(s={at(1)}, e={at(7)}, {ORDERED}) }}", agent)
    assert run.violations == []
    assert sorted((x.atom, x.start, x.end) for x in run.leases("r")) == [("a", 1, 4), ("b", 4, 7)]


def test_order_one_step_too_long_for_its_window_is_bad_input(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    reservation = one(f"reservation r {{ window(s={at(1)}, e={at(6)}, {ORDERED}) }}")
    with pytest.raises(RDLErrors):
        validate([reservation], cluster)
    run = run_plan(cluster, [reservation], agent)
    assert run.violations == []
    assert run.decision("r")["reason"]["code"] == "invalid"
    assert not run.used.any()


def test_order_that_fits_an_empty_cluster_but_not_the_plan_is_a_capacity_rejection(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, pinned("blocker", 6, 1, 1) +
                   f"\nreservation r {{ window(s={at(1)}, e={at(7)}, {ORDERED}) }}", agent)
    assert run.violations == []
    assert run.accepted("blocker")
    assert run.decision("r")["reason"]["code"] == "capacity"


def test_order_gap_zero_forces_back_to_back(agent: str) -> None:
    # Capacity is free only at steps 0 and 5..9 for the first stage: with gap=0 the second stage
    # must start right where the first ends.
    cluster = make_cluster({"vcores": 2}, steps=10)
    run = run_plan(cluster, pinned("blocker", 1, 4, 2) + """
        reservation r { order(a: atom(b={vcores: 2}, g=1, l=1m, w=1m),
                              b: atom(b={vcores: 2}, g=1, l=2m, w=2m), gap=0s) }""", agent)
    assert run.violations == []
    assert run.accepted("r")
    (a,), (b,) = [x for x in run.leases("r") if x.atom == "a"], [x for x in run.leases("r") if x.atom == "b"]
    assert b.start == a.end
    assert not 1 <= a.start < 5 and not (b.start < 5 and b.end > 1)


@pytest.mark.parametrize("gap", [0, 10])
def test_order_whose_later_stage_must_step_back_past_the_budget(agent: str, gap: int) -> None:
    # `a` ends by 60, `b` starts from 60 and ends by 180: `b` must start by 60 + gap, a hundred steps before its
    # latest start. The greedy agents stepped `b` back one step (and one placement) at a time and ran out of
    # their budget of 64 first; GREE's `b` now goes straight to the latest start `a` can reach.
    cluster = make_cluster({"vcores": 1}, steps=200)
    run = run_plan(cluster, f"""
        reservation r {{ order(a: window(s={at(0)}, e={at(60)}, atom(b={{vcores: 1}}, l=30m, w=30m)),
                               b: window(s={at(60)}, e={at(180)}, atom(b={{vcores: 1}}, l=30m, w=30m)),
                               gap={gap}m) }}""", agent)
    assert run.violations == []
    assert run.accepted("r")
    (a,), (b,) = [x for x in run.leases("r") if x.atom == "a"], [x for x in run.leases("r") if x.atom == "b"]
    assert a.end <= b.start <= a.end + gap
    if agent == "gree":
        assert (a.start, b.start) == (30, 60 + gap)


def test_a_search_that_runs_out_of_budget_says_so_rather_than_that_nothing_fits(agent: str) -> None:
    # As above, with a `b` of two one-after-the-other leases: its candidates still step back one at a time. A
    # placement exists (a at 30..60, b at 60..80), so a rejection must not say that none does.
    cluster = make_cluster({"vcores": 1}, steps=200)
    run = run_plan(cluster, f"""
        reservation r {{ order(a: window(s={at(0)}, e={at(60)}, atom(b={{vcores: 1}}, l=30m, w=30m)),
                               b: window(s={at(60)}, e={at(180)}, atom(b={{vcores: 1}}, h=1, l=10m, w=20m)),
                               gap=10m) }}""", agent)
    assert run.violations == []
    if not run.accepted("r"):
        message = run.decision("r")["reason"]["message"]
        assert "the search tried 64 placements" in message and "satisfies" not in message, message


def test_order_gap_zero_that_fits_only_at_the_start_of_its_window(agent: str) -> None:
    # The blocker holds 140..210 of a 280-step window: only a at 0..70 then b at 70..140 fits. YARN's agents find
    # it (tests/peers/yarn); GREE-L once spent its whole budget on later candidates of `a` that end too early.
    cluster = make_cluster({"vcores": 1}, steps=280)
    run = run_plan(cluster, pinned("blocker", 140, 70, 1) + """
        reservation r { order(a: atom(b={vcores: 1}, l=70m, w=70m), b: atom(b={vcores: 1}, l=70m, w=70m), gap=0s) }""",
                   agent)
    assert run.violations == []
    assert sorted((x.atom, x.start, x.end) for x in run.leases("r")) == [("a", 0, 70), ("b", 70, 140)]


# -- any and all -----------------------------------------------------------------------------


def test_any_picks_the_alternative_that_fits(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, pinned("blocker", 0, 10, 2) + f"""
        reservation r {{ window(s={at(0)}, e={at(4)}, any(
            big: atom(b={{vcores: 1}}, g=4, h=4, l=2m, w=8m),
            small: atom(b={{vcores: 1}}, g=2, h=2, l=2m, w=4m))) }}""", agent)
    assert run.violations == []
    assert run.accepted("r")
    leases = run.leases("r")
    assert {x.atom for x in leases} == {"small"}
    assert sum(x.bundles for x in leases) == 2


def test_any_skips_an_alternative_that_could_never_fit(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, f"""
        reservation r {{ any(
            huge: atom(b={{vcores: 1}}, g=5, h=5, l=2m, w=10m),
            late: window(s={at(2)}, e={at(3)}, atom(b={{vcores: 1}}, l=2m, w=2m)),
            ok: atom(b={{vcores: 1}}, g=3, h=3, l=2m, w=6m)) }}""", agent)
    assert run.violations == []
    assert run.accepted("r")
    assert {x.atom for x in run.leases("r")} == {"ok"}


@pytest.mark.parametrize("blocked", [False, True])
def test_an_order_alternative_that_finds_no_room_leaves_the_next_alternative_its_budget(agent: str,
                                                                                        blocked: bool) -> None:
    """Its last stage stepped back through every start (one placement each, past the search's budget of 64) and left
    the alternative after it none: GREE-L rejected a request whose other alternative fits. Without the blocker the
    order can never fit its window (rdl.md: never chosen, not an error); with it, it could on an empty cluster."""
    cluster = make_cluster({"vcores": 4}, steps=400)
    first, second = (180, 60) if blocked else (180, 240)
    run = run_plan(cluster, (pinned("blocker", 0, 240, 4) if blocked else "") + f"""
        reservation r {{ window(s={at(0)}, e={at(360)}, any(
            seq: order(a: atom(b={{vcores: 1}}, l={first}m, w={first}m), b: atom(b={{vcores: 1}}, l={second}m,
                                                                            w={second}m)),
            short: atom(b={{vcores: 1}}, l=10m, w=10m))) }}""", agent)
    assert run.violations == []
    assert run.accepted("r")
    assert {x.atom for x in run.leases("r")} == {"short"}


def test_any_none_of_whose_alternatives_fits_now_is_a_capacity_rejection(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, pinned("blocker", 0, 10, 3) + f"""
        reservation r {{ window(s={at(0)}, e={at(4)}, any(
            a: atom(b={{vcores: 1}}, g=4, h=4, l=2m, w=8m),
            b: atom(b={{vcores: 2}}, l=2m, w=2m))) }}""", agent)
    assert run.violations == []
    assert run.decision("r")["reason"]["code"] == "capacity"


ALL_THREE = """
    reservation r {{ window(s={s}, e={e}, all(
        mem: atom(b={{memory: 4GiB}}, g=2, h=2, l=3m, w=6m),
        cpu: atom(b={{vcores: 1}}, h=4, l=1m, w=20m),
        atom(b={{vcores: 1, memory: 1GiB}}, g=2, l=2m, w=4m))) }}"""


def _assert_all_three(run: Run, lo: int, hi: int) -> None:
    assert run.violations == []
    assert run.accepted("r")
    leases = run.leases("r")
    count = {name: sum(x.bundles for x in leases if x.atom == name) for name in ("mem", "cpu", "0.0.2")}
    assert count == {"mem": 2, "cpu": 20, "0.0.2": 2}
    assert all(x.start >= lo and x.end <= hi for x in leases)


def test_all_places_every_child(agent: str) -> None:
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=10)
    _assert_all_three(run_plan(cluster, ALL_THREE.format(s=at(0), e=at(8)), agent), 0, 8)


def test_all_places_every_child_in_a_window_with_no_slack(agent: str) -> None:
    # 24 vcore-minutes in 6 steps, exactly what `cpu` (20) and the third atom (4) need; `mem` takes all the
    # memory for 3 steps, so the third atom must sit beside it: mem [0,3), third [3,5), cpu around them.
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=10)
    _assert_all_three(run_plan(cluster, ALL_THREE.format(s=at(0), e=at(6)), agent), 0, 6)


def test_all_with_no_slack_has_a_valid_placement() -> None:
    # The placement the test above expects exists: the checker accepts it.
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=10)
    leases = [("mem", 0, 3, 2, {"memory": 8192}), ("0.0.2", 3, 5, 2, {"memory": 2048, "vcores": 2})]
    leases += [("cpu", t, t + 1, 4, {"vcores": 4}) for t in (0, 1, 2, 5)]
    leases += [("cpu", t, t + 1, 2, {"vcores": 2}) for t in (3, 4)]
    record = {"reservation": "r", "accepted": True, "allocations": [
        {"atom": atom, "start": at(start), "end": at(end), "bundles": bundles, "resources": resources}
        for atom, start, end, bundles, resources in leases]}
    assert check_plan(cluster, parse(ALL_THREE.format(s=at(0), e=at(6))), [record]) == []


def test_all_that_cannot_place_one_child_is_rejected_whole(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    run = run_plan(cluster, pinned("blocker", 0, 3, 4) + f"""
        reservation r {{ all(
            fine: atom(b={{vcores: 1}}, l=1m, w=3m),
            stuck: window(s={at(0)}, e={at(3)}, atom(b={{vcores: 1}}, l=1m, w=1m))) }}""", agent)
    assert run.violations == []
    decision = run.decision("r")
    assert decision["reason"]["code"] == "capacity"
    assert decision["reason"]["atom"] == "stuck"
    assert run.used.sum() == 12  # only the blocker


# -- rounding to the step grid ----------------------------------------------------------------


def test_lease_count_uses_the_values_as_written_and_lengths_round_up(agent: str) -> None:
    # l=90s on one-minute steps: ceil(180 s / 90 s) = 2 leases, each held 2 steps; ceil(200/(2*90)) = 2 gangs of 2.
    cluster = make_cluster({"vcores": 4}, steps=20)
    run = run_plan(cluster, """
        reservation one { x: atom(b={vcores: 1}, l=90s, w=3m) }
        reservation two { y: atom(b={vcores: 1}, g=2, h=2, l=90s, w=200s) }
        reservation tiny { z: atom(b={vcores: 1}, w=45s) }""", agent)
    assert run.violations == []
    for name, leases, bundles in (("one", 2, 1), ("two", 2, 2), ("tiny", 1, 1)):
        found = run.leases(name)
        assert all(x.end - x.start == (1 if name == "tiny" else 2) for x in found)
        assert sum(x.bundles for x in found) == leases * bundles
        assert all(x.bundles % bundles == 0 for x in found)
    assert max(bundles_per_step(run.leases("two"), 20)) <= 2  # h=2


def test_windows_off_the_grid_are_rounded_inwards(agent: str) -> None:
    cluster = make_cluster({"vcores": 1}, steps=20)
    s, e = at(0).replace(":00Z", ":30Z"), at(5).replace(":00Z", ":30Z")  # [00:00:30, 00:05:30) → steps [1, 5)
    run = run_plan(cluster, f"reservation fill {{ window(s={s}, e={e}, x: atom(b={{vcores: 1}}, w=4m)) }}", agent)
    assert run.violations == []
    assert bundles_per_step(run.leases("fill"), 8) == [0, 1, 1, 1, 1, 0, 0, 0]
    one_more = one(f"reservation over {{ window(s={s}, e={e}, x: atom(b={{vcores: 1}}, w=5m)) }}")
    with pytest.raises(RDLErrors):
        validate([one_more], cluster)


@pytest.mark.parametrize(("blocked", "accepted"), [((4,), True), ((3, 4), False)])
def test_gap_is_floored_to_whole_steps(agent: str, blocked: tuple[int, ...], accepted: bool) -> None:
    # b is pinned to step 5; gap=90s lets a end at most 1 step (not 2) before it starts.
    cluster = make_cluster({"vcores": 1}, steps=10)
    blockers = "\n".join(pinned(f"block{t}", t, 1, 1) for t in blocked)
    run = run_plan(cluster, blockers + f"""
        reservation r {{ order(a: atom(b={{vcores: 1}}, w=1m),
                              b: window(s={at(5)}, e={at(6)}, atom(b={{vcores: 1}}, w=1m)), gap=90s) }}""", agent)
    assert run.violations == []
    assert run.accepted("r") is accepted
    if accepted:
        assert sorted((x.atom, x.start) for x in run.leases("r")) == [("a", 3), ("b", 5)]
    else:
        assert run.decision("r")["reason"]["code"] == "capacity"


def test_arrival_and_relative_deadline_count_from_submission(agent: str) -> None:
    cluster = make_cluster({"vcores": 2}, steps=30)
    run = run_plan(cluster, "reservation r arrival=+5m deadline=+3m { x: atom(b={vcores: 2}, g=1, w=3m) }", agent,
                   now=instant(2))
    assert run.violations == []
    assert sorted(x.start for x in run.leases("r")) == [7, 8, 9]  # window [2+5, 2+5+3)


OFF_GRID_DROP = """start: 2026-11-23T00:00:00Z
step: 1m
horizon: 10m
capacity: {vcores: 4}
changes:
  - {at: 2026-11-23T00:00:30Z, capacity: {vcores: 1}}
"""


def test_capacity_drop_off_the_grid_applies_from_the_step_it_falls_in(agent: str) -> None:
    # Rounding must never break what the user wrote (rdl.md, Discretisation): a drop inside step 0
    # leaves only 1 vcore for part of step 0, so step 0 cannot hold 4.
    cluster = parse_cluster(OFF_GRID_DROP)
    run = run_plan(cluster, f"reservation r {{ window(s={at(0)}, e={at(1)}, atom(b={{vcores: 1}}, g=4, h=4, w=4m)) }}",
                   agent)
    assert run.violations == []
    assert not run.accepted("r")


def test_checker_flags_use_above_a_capacity_drop_off_the_grid() -> None:
    cluster = parse_cluster(OFF_GRID_DROP)
    reservation = one(f"reservation r {{ window(s={at(0)}, e={at(1)}, atom(b={{vcores: 1}}, g=4, h=4, w=4m)) }}")
    record = {"reservation": "r", "accepted": True, "allocations": [
        {"atom": "0.0", "start": at(0), "end": at(1), "bundles": 4, "resources": {"vcores": 4}}]}
    assert check_plan(cluster, [reservation], [record]) != []


# -- recurring reservations ------------------------------------------------------------------

DAY = 24 * 60
DAILY = "reservation daily every=1d {{ window(s={s}, e={e}, job: atom(b={{vcores: 2}}, g=2, h=2, l=1h, w=2h)) }}"


def test_every_day_places_one_instance_per_day_in_its_window(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=3 * DAY)
    run = run_plan(cluster, DAILY.format(s=at(120), e=at(240)), agent)
    assert run.violations == []
    assert run.accepted("daily")
    leases = sorted(run.leases("daily"), key=lambda x: x.instance)
    assert [x.instance for x in leases] == [0, 1, 2]
    for lease in leases:
        day = lease.instance * DAY
        assert day + 120 <= lease.start and lease.end <= day + 240
        assert lease.end - lease.start == 60 and lease.bundles == 2


def test_every_day_with_one_day_blocked_is_rejected(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=3 * DAY,
                           changes=[(DAY + 100, {"vcores": 1}), (DAY + 300, {"vcores": 4})])
    run = run_plan(cluster, DAILY.format(s=at(120), e=at(240)), agent)
    assert run.violations == []
    reason = run.decision("daily")["reason"]
    assert reason["code"] == "capacity"
    assert reason.get("atom") == "job"
    assert not run.used.any()


EVERY_NO_DEADLINE = "reservation daily every=1d { job: atom(b={vcores: 4}, g=1, h=1, l=12h, w=12h) }"


def test_every_without_a_deadline_has_a_valid_placement() -> None:
    # Without a deadline, instance k may go anywhere in its period [k days, k+1 days): one 12 h lease a day fits.
    cluster = make_cluster({"vcores": 4}, steps=3 * DAY)
    record = {"reservation": "daily", "accepted": True, "allocations": [
        {"atom": "job", "start": at(k * DAY), "end": at(k * DAY + 720), "bundles": 1, "resources": {"vcores": 4},
         **({"instance": k} if k else {})} for k in range(3)]}
    assert check_plan(cluster, parse(EVERY_NO_DEADLINE), [record]) == []


def test_every_without_a_deadline_fits_an_empty_cluster(agent: str) -> None:
    # Each instance lives in its own period, [k days, k+1 days), so every day gets its lease.
    cluster = make_cluster({"vcores": 4}, steps=3 * DAY)
    run = run_plan(cluster, EVERY_NO_DEADLINE, agent)
    assert run.violations == []
    assert run.accepted("daily"), run.decision("daily")["reason"]


# -- the YARN example --------------------------------------------------------------------------


def test_yarn_order_no_gap_example(agent: str) -> None:
    cluster = make_cluster({"vcores": 100}, steps=20)
    run = run_plan(cluster, pinned("blocker", 11, 3, 90) + f"""
        reservation yarn {{ window(s={at(10)}, e={at(13)}, order(
            p: atom(b={{vcores: 1}}, g=20, h=20, l=1m, w=20m),
            q: atom(b={{vcores: 1}}, g=10, h=10, l=1m, w=10m), gap=0s)) }}""", agent)
    assert run.violations == []
    assert run.accepted("blocker")
    assert run.accepted("yarn")
    assert sorted((x.atom, x.start, x.end, x.bundles) for x in run.leases("yarn")) == [
        ("p", 10, 11, 20), ("q", 11, 12, 10)]


# -- windows against the clock ------------------------------------------------------------------


def test_window_in_the_past_is_a_window_rejection(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=60)
    now = instant(20)
    run = run_plan(cluster, f"""
        reservation past {{ window(s={at(0)}, e={at(10)}, atom(b={{vcores: 1}}, w=2m)) }}
        reservation ok {{ window(s={at(0)}, e={at(30)}, x: atom(b={{vcores: 1}}, w=2m)) }}""", agent, now=now)
    assert run.violations == []
    assert run.decision("past")["reason"]["code"] == "window"
    assert run.accepted("ok")
    assert all(x.start >= 20 and x.end <= 30 for x in run.leases("ok"))


def test_window_beyond_the_horizon_is_a_window_rejection(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=60)
    run = run_plan(cluster, f"reservation later {{ window(s={at(70)}, e={at(80)}, atom(b={{vcores: 1}}, w=2m)) }}",
                   agent)
    assert run.violations == []
    assert run.decision("later")["reason"]["code"] == "window"


# -- earliest deadline ---------------------------------------------------------------------------


DEADLINE_BODY = "x: atom(b={vcores: 1}, w=12m)"


def _deadline_request(name: str, deadline: str, header: bool) -> str:
    if header:
        return f"reservation {name} deadline={deadline} {{ {DEADLINE_BODY} }}"
    return f"reservation {name} {{ window(s={at(0)}, e={deadline}, {DEADLINE_BODY}) }}"


@pytest.mark.parametrize("header", [True, False], ids=["deadline", "window"])
def test_earliest_deadline_is_the_first_deadline_that_fits(agent: str, header: bool) -> None:
    cluster = make_cluster({"vcores": 4}, steps=40)
    run = run_plan(cluster, pinned("blocker", 0, 10, 4), agent)
    (record,) = run.submit(_deadline_request("r", "+12m" if header else at(12), header))
    assert not record["accepted"]
    reason = record["reason"]
    assert reason["code"] == "capacity" and reason["atom"] == "x"
    assert "earliest_deadline" in reason
    earliest = reason["earliest_deadline"]
    assert step_of(earliest) == 13  # 8 bundle-minutes free at steps 10-11, four more at step 12
    before = units.format_instant(units.parse_instant(earliest) - timedelta(minutes=1))
    (too_early,) = run.submit(_deadline_request("r_before", before, header))
    assert not too_early["accepted"] and too_early["reason"]["code"] == "capacity"
    (just_right,) = run.submit(_deadline_request("r_at", earliest, header))
    assert just_right["accepted"]
    assert run.violations == []


def test_earliest_deadline_after_a_lighter_load_is_earlier(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=40)
    run = run_plan(cluster, pinned("blocker", 0, 10, 2), agent)
    (record,) = run.submit("reservation r deadline=+5m { x: atom(b={vcores: 1}, g=4, h=4, l=2m, w=8m) }")
    assert record["reason"]["code"] == "capacity"
    assert step_of(record["reason"]["earliest_deadline"]) == 12
    assert run.violations == []


def test_a_series_earliest_deadline_is_searched_not_the_horizon_s_end(agent: str) -> None:
    # Every 20 minutes, a 2-minute lease in the first 2 minutes of the period; the whole cluster is held at 40-44,
    # where the third instance would run: with a deadline of +6m it fits after the blocker. A series was offered
    # the horizon's end, unsearched.
    cluster = make_cluster({"vcores": 4}, steps=60)
    run = run_plan(cluster, pinned("blocker", 40, 4, 4), agent)
    (record,) = run.submit("reservation s deadline=+2m every=20m { x: atom(b={vcores: 1}, l=2m, w=2m) }")
    assert not record["accepted"] and record["reason"]["code"] == "capacity"
    earliest = record["reason"]["earliest_deadline"]
    assert step_of(earliest) < 60
    offset = step_of(earliest)  # the series arrives at step 0: its deadline offset is the step
    (again,) = run.submit(f"reservation s_at deadline=+{offset}m every=20m {{ x: atom(b={{vcores: 1}}, l=2m, w=2m) }}")
    assert again["accepted"]
    assert run.violations == []


# -- what submissions do to the plan ---------------------------------------------------------------

MIXED = f"""
reservation a {{ window(s={at(0)}, e={at(10)}, x: atom(b={{memory: 1.5GiB, vcores: 1}}, h=3, l=2m, w=9m)) }}
reservation b {{ order(y: atom(b={{memory: 512MiB, vcores: 2}}, g=2, l=3m, w=12m),
                       z: atom(b={{memory: 3GiB}}, l=1m, w=5m)) }}
reservation c deadline=+15m {{ all(atom(b={{vcores: 1}}, w=7m), atom(b={{memory: 700MiB}}, g=3, h=3, w=3m)) }}
"""


def test_rejected_submission_leaves_used_byte_identical(agent: str) -> None:
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=20)
    run = run_plan(cluster, MIXED, agent)
    assert run.violations == []
    before = run.used.tobytes()
    accepted = dict(run.planner.plan.accepted)
    (record,) = run.submit(f"""reservation big {{ window(s={at(0)}, e={at(10)},
        atom(b={{memory: 1GiB, vcores: 1}}, g=4, h=4, l=10m, w=40m)) }}""")
    assert not record["accepted"] and record["reason"]["code"] == "capacity"
    assert run.used.tobytes() == before
    assert run.planner.plan.accepted == accepted
    assert run.violations == []


def test_remove_restores_used_exactly(agent: str) -> None:
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=20)
    run = run_plan(cluster, "", agent)
    snapshots = [run.used.tobytes()]
    for reservation in parse(MIXED):
        (record,) = run.submit([reservation])
        assert record["accepted"], record
        snapshots.append(run.used.tobytes())
    assert run.violations == []
    for name, snapshot in zip(["c", "b", "a"], reversed(snapshots[:-1]), strict=True):
        run.planner.plan.remove(name)
        assert run.used.tobytes() == snapshot
    assert not run.used.any()


def test_remove_in_another_order_restores_used_exactly(agent: str) -> None:
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=20)
    run = run_plan(cluster, MIXED, agent)
    assert run.violations == []
    empty = Planner(cluster).plan.used.tobytes()
    for name in ("b", "a", "c"):
        run.planner.plan.remove(name)
    assert run.used.tobytes() == empty


def test_dry_run_leaves_the_plan_unchanged(agent: str) -> None:
    cluster = make_cluster({"memory": "8GiB", "vcores": 4}, steps=20)
    run = run_plan(cluster, MIXED, agent)
    before, accepted = run.used.tobytes(), dict(run.planner.plan.accepted)
    (record,) = run.submit(f"reservation d {{ window(s={at(0)}, e={at(20)}, x: atom(b={{vcores: 1}}, w=10m)) }}",
                           dry_run=True)
    assert record["accepted"] and record["allocations"]
    assert run.used.tobytes() == before
    assert run.planner.plan.accepted == accepted
    assert run.violations == []
    # The dry-run answer is a valid plan too.
    extra = one(f"reservation d {{ window(s={at(0)}, e={at(20)}, x: atom(b={{vcores: 1}}, w=10m)) }}")
    assert check_plan(cluster, [*run.reservations, extra], [*run.decisions, record]) == []


def test_duplicate_name_is_invalid(agent: str) -> None:
    cluster = make_cluster({"vcores": 4}, steps=20)
    run = run_plan(cluster, "reservation a { x: atom(b={vcores: 1}, w=3m) }", agent)
    assert run.violations == []
    assert run.accepted("a")
    before = run.used.tobytes()
    decision = run.planner.submit(one("reservation a { y: atom(b={vcores: 2}, w=1m) }"), agent)
    assert not decision.accepted
    assert decision.reason is not None and decision.reason.code == "invalid"
    assert run.used.tobytes() == before
    assert list(run.planner.plan.accepted) == ["a"]
