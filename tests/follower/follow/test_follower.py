"""The plan follower: queue targets per step from a plan, and their enforcement on a scheduler."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from follower.follow.follower import (
    MAX_POLICIES,
    Follower,
    FollowerError,
    PlanView,
    from_scheduler,
    queue_name,
    to_scheduler,
)
from follower.follow.replanner import store_replanner
from follower.follow.rounds import Round
from planner.admission import Planner
from planner.core.plan import Accepted, Allocation, Plan
from planner.store.facade import Store
from rdl.cluster import Cluster, load_cluster
from rdl.syntax.parser import parse_text
from rdl.tree import Resources
from tests.follower.fakes import CAPACITY, OVERLAPPING, START, FakeScheduler, GiB, bundles, minute, plan_of

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def guarantees(round: Round) -> dict[str, dict[str, float]]:
    """Each queue's guarantee by its last path part (the plan queue is `plan`)."""
    return {q.path.rsplit(".", 1)[1]: dict(q.guaranteed.items()) for q in round.queues}


def rest(count: float) -> dict[str, float]:
    return {name: CAPACITY[name] - value for name, value in bundles(count).items()}


# -- rounds ---------------------------------------------------------------------------------------------


def test_capacities_per_step_for_overlapping_reservations() -> None:
    rounds = {r.step: r for r in Follower().rounds(plan_of(*OVERLAPPING), START, minute(60))}
    assert len(rounds) == 60
    expected = {
        5: {"default": rest(0)},
        12: {"default": rest(0), "a": bundles(0)},
        15: {"default": rest(20), "a": bundles(20)},
        22: {"default": rest(50), "a": bundles(20), "b": bundles(30)},
        27: {"default": rest(40), "a": bundles(10), "b": bundles(30)},
        32: {"default": rest(60), "a": bundles(10), "b": bundles(50)},
        37: {"default": rest(50), "a": bundles(0), "b": bundles(50)},
        45: {"default": rest(50), "b": bundles(50)},
        55: {"default": rest(0), "b": bundles(0)},
    }
    for step, queues in expected.items():
        assert guarantees(rounds[step]) == {**queues, "plan": CAPACITY}, f"step {step}"
    assert [r.step for r in rounds.values() if r.ended] == [40]
    assert rounds[40].ended == ("a",)
    assert not any(r.overcommitted for r in rounds.values())


def test_reservation_queue_appears_at_window_start_with_zero_and_grows_with_its_allocation() -> None:
    follower = Follower()
    plan = plan_of(*OVERLAPPING)
    seen = [guarantees(follower.round(plan, minute(m))).get("a") for m in (9, 10, 14, 15, 24.5, 25, 39, 40)]
    assert seen == [None, bundles(0), bundles(0), bundles(20), bundles(20), bundles(10), bundles(0), None]
    queue = follower.round(plan, minute(10)).reservations[0]
    assert (queue.path, queue.kind, queue.reservation) == ("root.plan.a", "reservation", "a")


def test_queue_guarantees_add_up_to_the_plan_and_follow_each_allocation_on_the_examples() -> None:
    cluster = load_cluster(str(EXAMPLES / "cluster.yaml"))
    planner = Planner(cluster)
    texts = [p.read_text() for p in sorted(EXAMPLES.glob("*.rdl"))]
    decisions = [planner.submit(r, "gree", cluster.start) for t in texts for r in parse_text(t, "<example>")]
    plan = planner.plan
    assert sum(d.accepted for d in decisions) >= 4
    view = PlanView(plan)
    for round in Follower(round_steps=7).rounds(view, cluster.start, cluster.end):
        total = np.array([round.default.guaranteed[n] for n in plan.resources])
        for queue in round.reservations:
            held = plan.use_of(plan.accepted[queue.reservation or ""].allocations)[:, round.step]
            assert np.allclose([queue.guaranteed[n] for n in plan.resources], held)
            total += held
        assert np.allclose(total, plan.capacity[:, round.step]), round.time


def test_a_view_built_on_an_earlier_one_reuses_only_unchanged_reservations_and_gives_the_same_rounds() -> None:
    cluster = load_cluster(str(EXAMPLES / "cluster.yaml"))
    planner = Planner(cluster)
    reservations = [r for p in sorted(EXAMPLES.glob("*.rdl")) for r in parse_text(p.read_text(), "<example>")]
    for reservation in reservations:
        planner.submit(reservation, "gree", cluster.start)
    *_, moved, added = sorted(planner.plan.accepted)
    late = planner.plan.accepted[added]
    planner.plan.remove(added)
    earlier = PlanView(planner.plan)
    planner.plan.add(late)  # accepted after the earlier view: worked out
    held = planner.plan.accepted[moved]
    planner.plan.remove(moved)  # the same reservation, holding other leases: worked out again
    planner.plan.add(Accepted(held.reservation, held.submitted, [replace(a, bundles=a.bundles - 1)
                                                                  for a in held.allocations if a.bundles > 1]))
    reused, fresh = PlanView(planner.plan, earlier), PlanView(planner.plan)
    before = {w.name: w for w in earlier.reservations}
    after = {w.name: w for w in reused.reservations}
    kept = {name for name in after if name in before and after[name] is before[name]}
    assert kept == set(before) - {moved} and added in after and moved in after
    follower = Follower(round_steps=7)
    assert list(follower.rounds(reused, cluster.start, cluster.end)) == list(
        follower.rounds(fresh, cluster.start, cluster.end))


def test_back_to_back_instances_of_a_recurring_reservation_keep_one_queue() -> None:
    text = ("reservation hourly arrival=2026-11-23T00:00:00Z deadline=+1h every=1h "
            "{ atom(b={memory: 4GiB, vcores: 1}, w=1h) }")
    plan = Plan(Cluster(START, Resources.of(CAPACITY), step=60, horizon=7200))
    allocations = [Allocation("0", 50, 60, 6, Resources.of(bundles(1)), 0),
                   Allocation("0", 110, 120, 6, Resources.of(bundles(1)), 1)]
    plan.add(Accepted(parse_text(text, "<test>")[0], START, allocations))
    rounds = Follower().rounds(plan, START, minute(120))
    assert all([q.reservation for q in r.reservations] == ["hourly"] for r in rounds)
    assert not any(r.ended for r in rounds)


def test_rounds_every_few_steps_report_what_ended_between_them() -> None:
    rounds = Follower(round_steps=7).rounds(plan_of(*OVERLAPPING), minute(3), minute(60))
    assert [r.step for r in rounds] == [3, 10, 17, 24, 31, 38, 45, 52, 59]
    assert {r.step: r.ended for r in rounds if r.ended} == {45: ("a",)}
    assert rounds[1].time == minute(10)


def test_a_time_before_the_plan_is_an_error() -> None:
    with pytest.raises(FollowerError, match="outside the plan's horizon"):
        Follower().round(plan_of(), minute(-1))


def test_past_the_horizon_nothing_is_reserved_and_open_queues_are_retired() -> None:
    fake, follower, plan = scheduler(), Follower(), plan_of(*OVERLAPPING)
    follower.follow(plan, minute(30), fake)
    fake.submit("app-1", "root.plan.b")
    late = follower.round(plan, minute(500))
    assert late.reservations == () and late.scale == 1.0
    assert late.default.guaranteed == late.plan.guaranteed == late.plan_capacity
    follower.apply(late, fake)
    assert fake.applications == {"app-1": "root.plan.default"}
    assert [path for path in fake.queues if path.startswith("root.plan.") and path != "root.plan.default"] == []


def test_lost_capacity_that_still_fits_shrinks_only_the_default_queue() -> None:
    real = {"memory": 60 * 4 * GiB, "vcores": 70.0}
    round = Follower().round(plan_of(*OVERLAPPING), minute(22), real)
    assert not round.overcommitted and round.scale == 1.0
    assert guarantees(round) == {"default": {"memory": 10 * 4 * GiB, "vcores": 20.0}, "a": bundles(20),
                                 "b": bundles(30), "plan": {"memory": 60 * 4 * GiB, "vcores": 70.0}}


def test_over_commit_scales_every_reservation_by_one_factor_keeping_their_shape() -> None:
    real = {"memory": 40 * 4 * GiB, "vcores": 100.0}  # memory lost: the 50 reserved bundles no longer fit
    round = Follower().round(plan_of(*OVERLAPPING), minute(22), real)
    assert round.overcommitted and round.scale == pytest.approx(0.8)
    assert guarantees(round)["a"] == pytest.approx(bundles(16))
    assert guarantees(round)["b"] == pytest.approx(bundles(24))
    assert dict(round.reservations[0].planned.items()) == bundles(20)
    assert guarantees(round)["default"] == pytest.approx({"memory": 0.0, "vcores": 60.0})


@settings(max_examples=60, deadline=None)
@given(leases=st.lists(st.tuples(st.integers(0, 100), st.integers(1, 20), st.integers(1, 40)), max_size=6),
       real=st.tuples(st.integers(0, 120), st.integers(0, 120)), step=st.integers(0, 119))
def test_guarantees_never_exceed_what_the_cluster_has(leases: list[tuple[int, int, int]],
                                                      real: tuple[int, int], step: int) -> None:
    plan = plan_of(*((f"r{i}", s, s + n, [(s, s + n, b)]) for i, (s, n, b) in enumerate(leases)))
    capacity = {"memory": real[0] * 4 * GiB, "vcores": float(real[1])}
    round = Follower().round(plan, minute(step), capacity)
    usable = {n: min(CAPACITY[n], capacity[n]) for n in CAPACITY}
    for name in CAPACITY:
        total = round.default.guaranteed[name] + sum(q.guaranteed[name] for q in round.reservations)
        assert total == pytest.approx(usable[name], abs=1e-6)
        for queue in round.reservations:
            assert queue.guaranteed[name] == pytest.approx(queue.planned[name] * round.scale)
    assert round.overcommitted == any(round.reserved[n] > usable[n] for n in CAPACITY)


def test_max_policies() -> None:
    plan = plan_of(*OVERLAPPING)
    strict = Follower(max_policy="strict").round(plan, minute(22))
    assert all(q.maximum == q.guaranteed for q in (strict.default, *strict.reservations))
    lending = Follower(max_policy="plan").round(plan, minute(22))
    assert all(dict((q.maximum or {}).items()) == CAPACITY for q in (lending.default, *lending.reservations))
    assert all(q.maximum is None for q in Follower(max_policy="unlimited").round(plan, minute(22)).queues)
    assert strict.plan.maximum is None and set(MAX_POLICIES) == {"strict", "plan", "unlimited"}


@pytest.mark.parametrize(("settings_", "message"), [
    ({"max_policy": "stric"}, "unknown max policy `stric`.*did you mean `strict`"),
    ({"plan_queue": "plan"}, "not a queue path below root"),
    ({"plan_queue": "root..plan"}, "not a queue path below root"),
    ({"default_queue": "a.b"}, "one queue name"),
    ({"on_expiry": "kil"}, "unknown expiry action `kil`.*did you mean `kill`"),
    ({"round_steps": 0}, "at least one plan step"),
])
def test_bad_settings_are_errors(settings_: dict[str, object], message: str) -> None:
    with pytest.raises(FollowerError, match=message):
        Follower(**settings_)  # type: ignore[arg-type]


def test_a_reservation_named_like_the_default_queue_is_an_error_until_renamed() -> None:
    plan = plan_of(("default", 0, 30, [(0, 10, 5)]))
    with pytest.raises(FollowerError, match="reservation `default` would have the plan's default queue"):
        Follower().round(plan, minute(5))
    assert [q.path for q in Follower(default_queue="unreserved").round(plan, minute(5)).queues] == [
        "root.plan", "root.plan.unreserved", "root.plan.default"]


def test_dotted_reservation_names_get_one_queue_name() -> None:
    plan = plan_of(("team.etl-1", 0, 30, [(0, 10, 5)]))
    assert queue_name("team.etl-1") == "team_dot_etl-1"
    assert Follower().round(plan, minute(5)).reservations[0].path == "root.plan.team_dot_etl-1"


# -- enforcing rounds on a scheduler ---------------------------------------------------------------------


def scheduler(capacity: dict[str, float] = CAPACITY) -> FakeScheduler:
    return FakeScheduler(to_scheduler(capacity))


def test_apply_creates_and_sets_the_plan_queues() -> None:
    fake = scheduler()
    _, actions = Follower().follow(plan_of(*OVERLAPPING), minute(22), fake)
    assert fake.queue_paths("root.plan") == ["root.plan.a", "root.plan.b", "root.plan.default"]
    assert fake.guaranteed("root.plan.a") == to_scheduler(bundles(20))
    assert fake.maximum("root.plan.b") == to_scheduler(bundles(30))
    assert fake.guaranteed("root.plan") == to_scheduler(CAPACITY)
    assert [(a.kind, a.queue) for a in actions] == [("set", "root.plan"), ("create", "root.plan.default"),
                                                    ("create", "root.plan.a"), ("create", "root.plan.b")]
    assert str(actions[2]) == ("create root.plan.a: guaranteed {memory: 80GiB, vcores: 20}, "
                               "max {memory: 80GiB, vcores: 20}")


def test_expiry_moves_the_applications_to_the_default_queue() -> None:
    fake, follower, plan = scheduler(), Follower(), plan_of(*OVERLAPPING)
    follower.follow(plan, minute(30), fake)
    fake.submit("app-1", "root.plan.a")
    fake.submit("app-2", "root.plan.a")
    fake.submit("app-3", "root.plan.b")
    _, actions = follower.follow(plan, minute(40), fake)
    assert fake.applications == {"app-1": "root.plan.default", "app-2": "root.plan.default", "app-3": "root.plan.b"}
    assert "root.plan.a" not in fake.queues
    retired = [(a.kind, a.application) for a in actions if a.queue == "root.plan.a"]
    assert retired == [("move", "app-1"), ("move", "app-2"), ("remove", None)]
    assert "reservation `a` ended by 2026-11-23T00:40:00Z" in actions[-1].detail


def test_expiry_kills_the_applications_when_configured() -> None:
    fake, follower, plan = scheduler(), Follower(on_expiry="kill"), plan_of(*OVERLAPPING)
    follower.follow(plan, minute(30), fake)
    fake.submit("app-1", "root.plan.a")
    follower.follow(plan, minute(40), fake)
    assert fake.applications == {} and "root.plan.a" not in fake.queues
    assert "reservation `a` ended" in fake.killed["app-1"]


def test_a_second_apply_of_the_same_round_changes_nothing() -> None:
    fake, follower, plan = scheduler(), Follower(), plan_of(*OVERLAPPING)
    follower.follow(plan, minute(22), fake)
    fake.submit("app-1", "root.plan.a")
    before = fake.state()
    _, actions = follower.follow(plan, minute(22), fake)
    assert fake.state() == before
    assert {a.kind for a in actions} == {"set"}


def test_missed_rounds_are_caught_up_by_the_next_one() -> None:
    fake, follower, plan = scheduler(), Follower(), plan_of(*OVERLAPPING)
    follower.follow(plan, minute(12), fake)
    fake.submit("app-1", "root.plan.a")
    round, actions = follower.follow(plan, minute(55), fake)  # a's end (40) and b's last lease (50) were missed
    assert round.ended == ()  # nothing ended in the last step; the diff against the queues retires a anyway
    assert fake.queue_paths("root.plan") == ["root.plan.b", "root.plan.default"]
    assert fake.applications == {"app-1": "root.plan.default"}
    assert fake.guaranteed("root.plan.b") == to_scheduler(bundles(0))
    assert "no reservation `a` is active in the plan" in next(a.detail for a in actions if a.kind == "remove")


def test_a_restarted_follower_converges_to_the_same_queues() -> None:
    plan = plan_of(*OVERLAPPING)
    steady = scheduler()
    for m in range(0, 46):
        Follower().follow(plan, minute(m), steady)
    restarted = scheduler()
    Follower().follow(plan, minute(22), restarted)
    restarted.ensure_queue("root.plan.stale", to_scheduler(bundles(5)))  # left over from another plan
    restarted.submit("app-1", "root.plan.stale")
    steady.submit("app-1", "root.plan.default")
    Follower().follow(plan, minute(45), restarted)
    assert restarted.state() == steady.state()


def test_over_commit_scales_the_queues_and_asks_for_replanning_every_round_until_repaired() -> None:
    asked: list[Round] = []
    fake = scheduler({"memory": 40 * 4 * GiB, "vcores": 100.0})
    follower = Follower(replan=asked.append)
    round, actions = follower.follow(plan_of(*OVERLAPPING), minute(22), fake)
    assert asked == [round] and round.overcommitted
    assert fake.guaranteed("root.plan.a") == to_scheduler(bundles(16))
    assert fake.guaranteed("root.plan.b") == to_scheduler(bundles(24))
    assert [a.kind for a in actions[-2:]] == ["scale", "replan"]
    assert "scaled by 0.8" in actions[-2].detail
    follower.follow(plan_of(*OVERLAPPING), minute(23), fake)
    assert len(asked) == 2
    fake.nodes = to_scheduler(CAPACITY)
    follower.follow(plan_of(*OVERLAPPING), minute(24), fake)
    assert len(asked) == 2


def test_over_commit_replans_the_stored_plan_so_that_the_next_round_fits(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("start: 2026-11-23T00:00:00Z\nstep: 1m\nhorizon: 2h\ncapacity: {memory: 400GiB, vcores: 100}\n")
    with Store.open(tmp_path / "plan.db") as store:
        store.init(cluster.read_text(), str(cluster))
        for text in ("reservation big priority=1 deadline=+1h { atom(b={memory: 4GiB, vcores: 1}, g=60, h=60, "
                     "l=30m, w=30h) }",
                     "reservation small priority=5 deadline=+1h { atom(b={memory: 4GiB, vcores: 1}, g=30, h=30, "
                     "l=30m, w=15h) }"):
            assert store.submit(parse_text(text, "<test>")[0]).accepted
        plan = store.load_plan()
        busy = next(s for s in range(plan.clock.steps) if plan.used[1, s] == 90)
        store.advance(plan.clock.at(busy))
        fake = scheduler({"memory": 400 * GiB, "vcores": 50.0})
        follower = Follower(replan=store_replanner(store))
        round, _ = follower.follow(plan, plan.clock.at(busy), fake)
        assert round.overcommitted
        repaired = store.load_plan()
        assert [r.name for r in store.list(state="dropped")] == ["big"]
        after, actions = follower.follow(repaired, plan.clock.at(busy), fake)
        assert not after.overcommitted and {a.kind for a in actions} <= {"set", "remove"}
        assert [q.reservation for q in after.reservations] == ["small"]


def test_units_cross_to_the_scheduler_and_back() -> None:
    vector = Resources.of(bundles(3))
    assert from_scheduler(to_scheduler(vector), ("memory", "vcores", "gpu")) == Resources.of({**bundles(3), "gpu": 0})


def test_the_queue_scheduler_follows_the_plan_and_keeps_a_moved_application() -> None:
    from follower.scheduler.scheduler import Scheduler

    real, follower, plan = Scheduler(), Follower(), plan_of(*OVERLAPPING)
    real.add_node("n1", to_scheduler(CAPACITY), 0.0)
    follower.follow(plan, minute(22), real)
    assert real.queue_paths("root.plan") == ["root.plan.a", "root.plan.b", "root.plan.default"]
    real.submit("app-1", "alice", 22 * 60.0, reservation="a")
    _, actions = follower.follow(plan, minute(40), real)
    assert [(a.kind, a.application) for a in actions if a.queue == "root.plan.a"] == [("move", "app-1"),
                                                                                     ("remove", None)]
    assert real.applications_in("root.plan.default") == ["app-1"]
