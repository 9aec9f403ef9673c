"""The preemption planner's rules, and its agreement with the first, exhaustive planner on random clusters.

The fast planner (`follower.scheduler.preemption.plan`) indexes each round and prunes nodes that
cannot win; `preemption_reference.plan` searches every node for every ask. On any cluster both must
claim the same nodes and the same victims, in the same order.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from follower.scheduler import Resources, Scheduler, preemption
from follower.scheduler.queues import Queue

from . import preemption_reference
from .conftest import place_on

UNIT = {"memory": 1024.0, "vcores": 1.0}


def starved_leaves(scheduler: Scheduler) -> list[Queue]:
    """The leaves below their guarantee with something pending, as the scheduler would hand them over."""
    return [leaf for leaf in scheduler.tree.leaves() if leaf.pending > 0 and leaf.below_guarantee()]


def claims(planner: Any, scheduler: Scheduler) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    nodes = sorted(scheduler.nodes.by_name.values(), key=lambda node: node.name)
    queue_of = {queue.path: queue for queue in scheduler.tree.queues()}
    return [(claim.queue.path, claim.app.id, claim.ask.id, claim.node.name, tuple(v.id for v in claim.victims))
            for claim in planner.plan(starved_leaves(scheduler), nodes, queue_of)]


def two_nodes_with_victims(sizes: dict[str, list[tuple[float, float]]]) -> Scheduler:
    """Nodes `a` and `b` (8 GiB, 8 vcores) holding `greedy`'s containers of the given (vcores, time) per node;
    `root.plan.r1` (guaranteed 8) asks for one container of 3 vcores and 3 GiB."""
    scheduler = Scheduler({"queues": {"plan": {"parent": True}, "besteffort": {}},
                           "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]})
    for name in ("a", "b"):
        scheduler.add_node(name, {"memory": 8192.0, "vcores": 8.0}, 0.0)
    scheduler.submit("greedy", "u", 0.0, queue="besteffort")
    for node, containers in sizes.items():
        for index, (vcores, when) in enumerate(containers):
            place_on(scheduler, "greedy", node, when, {"memory": 1024.0 * vcores, "vcores": vcores}, f"{node}{index}")
    scheduler.ensure_queue("root.plan.r1", Resources({"memory": 8192.0, "vcores": 8.0}))
    scheduler.submit("prod", "u", 10.0, reservation="r1")
    scheduler.add_ask("prod", "work", {"memory": 3072.0, "vcores": 3.0}, 10.0)
    return scheduler


def victims(scheduler: Scheduler) -> list[tuple[str, tuple[str, ...]]]:
    return [(node, taken) for _, _, _, node, taken in claims(preemption, scheduler)]


def test_the_node_needing_fewest_victims_wins() -> None:
    # a: three young 1-vcore containers (three victims needed); b: one old 4-vcore container (one victim)
    scheduler = two_nodes_with_victims({"a": [(1, 5.0), (1, 6.0), (1, 7.0), (5, 1.0)], "b": [(4, 0.0), (4, 0.5)]})
    assert victims(scheduler) == [("b", ("greedy/c6",))]


def test_with_as_many_victims_the_node_with_the_younger_ones_wins() -> None:
    scheduler = two_nodes_with_victims({"a": [(4, 1.0), (4, 2.0)], "b": [(4, 3.0), (4, 4.0)]})
    assert victims(scheduler) == [("b", ("greedy/c4",))]


def test_with_victims_of_the_same_age_the_first_node_by_name_wins() -> None:
    scheduler = two_nodes_with_victims({"b": [(4, 1.0), (4, 2.0)], "a": [(4, 1.0), (4, 2.0)]})
    assert victims(scheduler) == [("a", ("greedy/c4",))]


def test_free_room_on_any_node_beats_every_victim() -> None:
    scheduler = two_nodes_with_victims({"a": [(4, 1.0), (4, 2.0)], "b": [(4, 3.0)]})
    assert victims(scheduler) == [("b", ())]


def random_cluster(rng: random.Random) -> Scheduler:
    """Nodes of several sizes, full of containers of several sizes and ages in queues with and without
    guarantees (parents too), and reservation leaves below their guarantee asking for several shapes."""
    guarantee = {"memory": 4096.0 * rng.randint(0, 3), "vcores": 4.0 * rng.randint(0, 3)}
    scheduler = Scheduler({
        "queues": {"plan": {"parent": True, "guaranteed": guarantee},
                   "besteffort": {"guaranteed": {"vcores": rng.choice([0, 4, 8])},
                                  "queues": {"etl": {"guaranteed": {"vcores": rng.choice([0, 2, 6])}}, "adhoc": {}}}},
        "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}]})
    for index in range(rng.randint(1, 12)):
        scheduler.add_node(f"n{index:02d}", {"memory": 1024.0 * rng.choice([4, 8, 12]), "vcores": rng.choice([4, 8])},
                           0.0)
    for name in ("r1", "r2", "r3"):
        scheduler.ensure_queue(f"root.plan.{name}", Resources({"memory": 1024.0 * rng.randint(0, 24),
                                                                "vcores": float(rng.randint(0, 24))}))
    leaves = ["root.besteffort.etl", "root.besteffort.adhoc", "root.plan.r1", "root.plan.r2", "root.plan.r3"]
    for index in range(rng.randint(1, 6)):
        app = f"app{index}"
        leaf = rng.choice(leaves)
        scheduler.submit(app, "u", 0.0, queue=None if "plan" in leaf else leaf,
                         reservation=leaf.rsplit(".", 1)[1] if "plan" in leaf else None)
        for container in range(rng.randint(0, 20)):
            size = {"memory": 1024.0 * rng.randint(1, 4), "vcores": float(rng.randint(1, 4))}
            fitting = [node for node in scheduler.nodes.by_name.values() if node.fits(Resources(size))]
            if fitting:
                place_on(scheduler, app, rng.choice(fitting).name, float(rng.randint(0, 5)), size, f"c{container}")
    for index, name in enumerate(("r1", "r2", "r3")):
        scheduler.submit(f"want{index}", "u", 9.0, reservation=name)
        for ask in range(rng.randint(0, 3)):
            scheduler.add_ask(f"want{index}", f"ask{ask}", {"memory": 1024.0 * rng.randint(1, 6),
                                                            "vcores": float(rng.randint(1, 6))},
                              9.0, count=rng.randint(1, 4), priority=rng.randint(0, 1))
    return scheduler


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_fast_planner_claims_exactly_what_the_exhaustive_one_does(rng: random.Random) -> None:
    scheduler = random_cluster(rng)
    assert claims(preemption, scheduler) == claims(preemption_reference, scheduler)
