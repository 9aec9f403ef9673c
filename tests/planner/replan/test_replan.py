"""Offline re-planning: accepted reservations stay accepted, rejected ones are admitted where they fit."""

from __future__ import annotations

from planner.admission import Planner
from planner.core.check import check_plan
from planner.core.decision import allocation_json
from planner.replan.optimise import replan
from rdl import parse_text
from tests.planner.support import at, make_cluster

# A fits early or late; B only late. GREE one by one puts A late and has to reject B.
BATCH = f"""
reservation a {{ window(s={at(0)}, e={at(10)}, atom(b={{vcores: 1}}, g=4, h=4, l=3m, w=12m)) }}
reservation b {{ window(s={at(6)}, e={at(10)}, atom(b={{vcores: 1}}, g=4, h=4, l=3m, w=12m)) }}
"""


def records(planner: Planner, reservations: list) -> list[dict]:  # type: ignore[type-arg]
    accepted = planner.plan.accepted
    return [{"reservation": r.name, "accepted": r.name in accepted,
             "allocations": [allocation_json(a, planner.plan.clock) for a in accepted[r.name].allocations]
             if r.name in accepted else []} for r in reservations]


def test_replan_admits_what_one_by_one_greedy_rejected_and_keeps_the_accepted() -> None:
    cluster = make_cluster({"vcores": 4}, steps=10)
    reservations = parse_text(BATCH)
    planner = Planner(cluster)
    decisions = [planner.submit(r, "gree") for r in reservations]
    assert [d.accepted for d in decisions] == [True, False]
    report = replan(planner.plan, [(reservations[1], cluster.start)], time_limit=10)
    assert report.admitted == ["b"] and "a" in report.moved
    assert set(planner.plan.accepted) == {"a", "b"}
    assert check_plan(cluster, reservations, records(planner, reservations)) == []


def test_replan_with_nothing_to_gain_keeps_every_reservation_valid() -> None:
    cluster = make_cluster({"vcores": 8}, steps=20)
    reservations = parse_text(f"""
reservation x {{ window(s={at(0)}, e={at(20)}, atom(b={{vcores: 2}}, h=4, w=20m)) }}
reservation y {{ window(s={at(5)}, e={at(15)},
  order(atom(b={{vcores: 1}}, h=8, w=16m), atom(b={{vcores: 2}}, g=2, w=4m))) }}
""")
    planner = Planner(cluster)
    assert all(planner.submit(r, "gree-l").accepted for r in reservations)
    before = planner.plan.used.sum()
    report = replan(planner.plan, time_limit=10)
    assert report.status in ("optimal", "feasible", "timeout")
    assert set(planner.plan.accepted) == {"x", "y"}
    assert planner.plan.used.sum() == before  # the same work, perhaps elsewhere
    assert check_plan(cluster, reservations, records(planner, reservations)) == []
