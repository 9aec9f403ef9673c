"""Node sorting: `fair` tries the least used node first, `binpacking` the most used; ties by name."""

from __future__ import annotations

from follower.scheduler import Scheduler

from .conftest import app, cluster, place_on, served


def config(policy: str, weights: dict[str, float] | None = None) -> dict[str, object]:
    node_policy: dict[str, object] = {"type": policy}
    if weights is not None:
        node_policy["weights"] = weights
    return {"queues": {"a": {}}, "node_policy": node_policy,
            "placement": [{"rule": "specified"}, {"rule": "reject"}]}


def loaded(policy: str, weights: dict[str, float] | None = None) -> Scheduler:
    """Three nodes used 0%, 50% and 25% (of memory and of vcores alike)."""
    scheduler = cluster(config(policy, weights), nodes=3, size={"memory": 4096.0, "vcores": 4.0})
    scheduler.submit("filler", "u", 0.0, queue="a")
    for index, node in enumerate(("n1", "n1", "n2")):
        place_on(scheduler, "filler", node, 0.0, ask=f"fill{index}")
    return scheduler


def node_order(scheduler: Scheduler) -> list[str]:
    return [node.name for node in scheduler.nodes.ordered()]


def test_fair_node_sorting_tries_the_least_used_node_first() -> None:
    scheduler = loaded("fair")
    assert node_order(scheduler) == ["n0", "n2", "n1"]
    app(scheduler, "new", 1.0)
    assert [a.node for a in scheduler.schedule(1.0)] == ["n0"]


def test_binpacking_node_sorting_tries_the_most_used_node_first() -> None:
    scheduler = loaded("binpacking")
    assert node_order(scheduler) == ["n1", "n2", "n0"]
    app(scheduler, "new", 1.0)
    assert [a.node for a in scheduler.schedule(1.0)] == ["n1"]


def test_equally_used_nodes_are_tried_in_name_order_both_ways() -> None:
    for policy in ("fair", "binpacking"):
        scheduler = cluster(config(policy), nodes=3)
        assert node_order(scheduler) == ["n0", "n1", "n2"]


def test_node_use_is_a_weighted_average_of_used_fractions() -> None:
    scheduler = Scheduler(config("fair", {"memory": 1.0, "vcores": 4.0}))
    scheduler.add_node("cpu-busy", {"memory": 1000.0, "vcores": 10.0}, 0.0)
    scheduler.add_node("mem-busy", {"memory": 1000.0, "vcores": 10.0}, 0.0)
    for name, size in (("c", {"memory": 100.0, "vcores": 5.0}), ("m", {"memory": 900.0, "vcores": 1.0})):
        app(scheduler, name, 0.0, size=size)
        scheduler.schedule(0.0)
    by_app = {c.app_id: c.node for c in scheduler.containers.values()}
    assert by_app["c"] != by_app["m"]
    # cpu-heavy node: (1*0.1 + 4*0.5)/5 = 0.42; memory-heavy node: (1*0.9 + 4*0.1)/5 = 0.26
    assert node_order(scheduler)[0] == by_app["m"]


def test_first_fit_skips_nodes_without_room_for_the_ask() -> None:
    scheduler = cluster(config("binpacking"), nodes=2, size={"memory": 2048.0, "vcores": 2.0})
    app(scheduler, "small", 0.0)
    assert served(scheduler, 0.0) == ["small"]
    app(scheduler, "big", 1.0, size={"memory": 2048.0, "vcores": 2.0})
    assert [a.node for a in scheduler.schedule(1.0)] == ["n1"]  # n0 is fuller but cannot hold it
