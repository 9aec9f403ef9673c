"""The YuniKorn queue configuration: golden documents, and YuniKorn's documented rules on every document."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any as AnyType

import pytest
import yaml

from follower.follow import yunikorn
from follower.follow.follower import Follower, FollowerError
from follower.follow.rounds import Round
from planner.admission import Planner
from rdl.cluster import load_cluster
from rdl.syntax.parser import parse_text
from tests.follower.fakes import GiB, minute, plan_of

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# One reservation, `team.b`, window [20, 30) minutes, 2 bundles over [20, 25): rounds every 5 minutes from 20 to 35.
GOLDEN = """\
# rayon follow: root.plan from 2026-11-23T00:20:00Z until 2026-11-23T00:25:00Z
partitions:
- name: default
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: plan
      parent: true
      resources:
        guaranteed: {memory: 429496729600, vcore: 100}
      queues:
      - name: default
        resources:
          guaranteed: {memory: 420906795008, vcore: 98}
          max: {memory: 420906795008, vcore: 98}
        properties:
          application.sort.policy: fifo
      - name: team_dot_b
        resources:
          guaranteed: {memory: 8589934592, vcore: 2}
          max: {memory: 8589934592, vcore: 2}
        properties:
          application.sort.policy: fifo
---
# rayon follow: root.plan from 2026-11-23T00:25:00Z until 2026-11-23T00:30:00Z
partitions:
- name: default
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: plan
      parent: true
      resources:
        guaranteed: {memory: 429496729600, vcore: 100}
      queues:
      - name: default
        resources:
          guaranteed: {memory: 429496729600, vcore: 100}
          max: {memory: 429496729600, vcore: 100}
        properties:
          application.sort.policy: fifo
      - name: team_dot_b
        resources:
          guaranteed: {memory: 0, vcore: 0}
          max: {memory: 1, vcore: 0, pods: 0}
        properties:
          application.sort.policy: fifo
---
# rayon follow: root.plan from 2026-11-23T00:30:00Z until 2026-11-23T00:35:00Z
partitions:
- name: default
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: plan
      parent: true
      resources:
        guaranteed: {memory: 429496729600, vcore: 100}
      queues:
      - name: default
        resources:
          guaranteed: {memory: 429496729600, vcore: 100}
          max: {memory: 429496729600, vcore: 100}
        properties:
          application.sort.policy: fifo
"""

BASE = """\
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: besteffort
            resources:
              guaranteed: {vcore: 10}
              max: {memory: 400Gi, vcore: 100}
          - name: plan
            queues:
              - name: stale
"""

# With BASE, the `fair` sort policy and vcores named `cpu`: the best-effort queue and the partition's node sorting
# are kept, the old plan queue (with its stale leaf) replaced.
GOLDEN_WITH_BASE = """\
# rayon follow: root.plan from 2026-11-23T00:20:00Z until 2026-11-23T00:25:00Z
partitions:
- name: default
  nodesortpolicy:
    type: binpacking
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: besteffort
      resources:
        guaranteed: {vcore: 10}
        max: {memory: 400Gi, vcore: 100}
    - name: plan
      parent: true
      resources:
        guaranteed: {memory: 429496729600, cpu: 100}
      queues:
      - name: default
        resources:
          guaranteed: {memory: 420906795008, cpu: 98}
          max: {memory: 420906795008, cpu: 98}
        properties:
          application.sort.policy: fair
      - name: team_dot_b
        resources:
          guaranteed: {memory: 8589934592, cpu: 2}
          max: {memory: 8589934592, cpu: 2}
        properties:
          application.sort.policy: fair
"""


def small_rounds() -> list[Round]:
    plan = plan_of(("team.b", 20, 30, [(20, 25, 2)]))
    return Follower(round_steps=5).rounds(plan, minute(20), minute(35))


def test_golden_documents_one_per_change_point() -> None:
    assert yunikorn.render(small_rounds(), minute(35)) == GOLDEN


def test_golden_document_in_a_base_configuration() -> None:
    base = yunikorn.load_base(BASE, "base.yaml")
    text = yunikorn.render(small_rounds()[:1], minute(25), base, sort_policy="fair", names={"vcores": "cpu"})
    assert text == GOLDEN_WITH_BASE
    assert base["partitions"][0]["queues"][0]["queues"][1]["queues"] == [{"name": "stale"}]  # the base is untouched


def test_a_plan_queue_deeper_in_the_tree_gets_its_parents() -> None:
    plan = plan_of(("a", 0, 30, [(0, 10, 5)]))
    round = Follower(plan_queue="root.prod.plan").round(plan, minute(5))
    root = yunikorn.configuration(round)["partitions"][0]["queues"][0]
    prod = root["queues"][0]
    assert (prod["name"], prod["parent"], prod["queues"][0]["name"]) == ("prod", True, "plan")
    assert [q["name"] for q in prod["queues"][0]["queues"]] == ["default", "a"]
    validate(yunikorn.configuration(round))


def test_the_stream_parses_back_into_one_configuration_per_change_point() -> None:
    rounds = small_rounds()
    documents = list(yaml.safe_load_all(yunikorn.render(rounds, minute(35))))
    points = yunikorn.change_points(rounds)
    assert [length for _, length in points] == [1, 1, 1]
    assert documents == [yunikorn.configuration(r) for r, _ in points]


def test_equal_rounds_make_one_change_point() -> None:
    rounds = Follower().rounds(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(0), minute(45))
    assert [(r.step, n) for r, n in yunikorn.change_points(rounds)] == [(0, 10), (10, 5), (15, 10), (25, 15),
                                                                        (40, 5)]


def test_quantities_in_yunikorn_names_and_units_rounded_down() -> None:
    assert yunikorn.quantities({"memory": 1536.0, "vcores": 3.0}) == {"memory": 1536 * 1024 * 1024, "vcore": 3}
    assert yunikorn.quantities({"memory": 0.5, "vcores": 2.4567}) == {"memory": 512 * 1024, "vcore": "2456m"}
    assert yunikorn.quantities({"gpu": 1.9}, {"gpu": "nvidia.com/gpu"}) == {"nvidia.com/gpu": 1}
    assert yunikorn.quantities({"vcores": 2.9999999999}) == {"vcore": 3}


@pytest.mark.parametrize("max_policy", ["strict", "plan", "unlimited"])
def test_every_document_keeps_yunikorn_rules_on_the_examples_even_over_committed(max_policy: str) -> None:
    cluster = load_cluster(EXAMPLES / "cluster.yaml")
    planner = Planner(cluster)
    for path in sorted(EXAMPLES.glob("*.rdl")):
        for reservation in parse_text(path.read_text(), str(path)):
            planner.submit(reservation, "gree-l", cluster.start)
    follower = Follower(max_policy=max_policy, round_steps=30)
    lost = {"memory": 333 * GiB, "vcores": 2048.0}  # less memory than mpi_solver holds: fractional vcores
    for capacity in (None, lost):
        rounds = follower.rounds(planner.plan, cluster.start, minute(3 * 24 * 60), capacity)
        for round, _ in yunikorn.change_points(rounds):
            validate(yunikorn.configuration(round, sort_policy="fair"))
    assert any(r.overcommitted for r in rounds)
    assert re.search(r"vcore: \d+m\}", yunikorn.render(rounds, minute(3 * 24 * 60)))


def test_a_zero_max_is_written_in_the_closed_form_yunikorn_keeps() -> None:
    round = Follower().round(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(12))
    leaf = yunikorn.plan_queue_config(round)["queues"][1]
    assert leaf["name"] == "a"  # at its window's start, before its first lease: nothing, and YuniKorn must know it
    assert leaf["resources"] == {"guaranteed": {"memory": 0, "vcore": 0}, "max": {"memory": 1, "vcore": 0, "pods": 0}}
    unlimited = Follower(max_policy="unlimited").round(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(12))
    assert "max" not in yunikorn.plan_queue_config(unlimited)["queues"][1]["resources"]  # no max is asked for


def test_names_yunikorn_refuses_are_errors_naming_the_reservation() -> None:
    long = "r" * 65
    round = Follower().round(plan_of((long, 0, 30, [(0, 10, 5)])), minute(5))
    with pytest.raises(FollowerError, match=f"reservation `{long}`'s queue .* YuniKorn refuses"):
        yunikorn.configuration(round)


def test_bad_bases_and_settings_are_errors() -> None:
    round = Follower().round(plan_of(), minute(5))
    with pytest.raises(FollowerError, match=r"base\.yaml: not valid YAML"):
        yunikorn.load_base("partitions: [", "base.yaml")
    with pytest.raises(FollowerError, match="needs a `partitions` list"):
        yunikorn.load_base("queues: []", "base.yaml")
    with pytest.raises(FollowerError, match="no partition `gpu`"):
        yunikorn.configuration(round, yunikorn.load_base(BASE, "base.yaml"), partition="gpu")
    with pytest.raises(FollowerError, match="no application sort policy `drf`"):
        yunikorn.configuration(round, sort_policy="drf")


# -- YuniKorn's documented rules (user_guide/queue_config.md; configvalidator.go checkQueueResource) ------------

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def amount(value: int | str) -> float:
    """A YuniKorn quantity: an integer, or millicores written `1500m`."""
    if isinstance(value, str):
        assert value.endswith("m") and value[:-1].isdigit(), value
        return int(value[:-1]) / 1000
    assert isinstance(value, int) and value >= 0, value
    return value


def vector(resources: Mapping[str, AnyType] | None) -> dict[str, float] | None:
    return None if resources is None else {k: amount(v) for k, v in resources.items()}


def fits(small: Mapping[str, float], big: Mapping[str, float] | None) -> bool:
    """YuniKorn's FitInMaxUndef: only the resources `big` names limit."""
    return big is None or all(small.get(k, 0) <= v + 1e-9 for k, v in big.items())


def validate(document: Mapping[str, AnyType]) -> None:
    """Assert the rules YuniKorn checks on a queue configuration."""
    assert isinstance(document["partitions"], list)
    for partition in document["partitions"]:
        (root,) = partition["queues"]
        assert root["name"] == "root" and "resources" not in root
        for child in root.get("queues", []):
            check_queue(child, None)


def check_queue(queue: Mapping[str, AnyType], parent_max: dict[str, float] | None) -> dict[str, float]:
    assert NAME.match(queue["name"]), queue["name"]
    resources = queue.get("resources", {})
    assert set(resources) <= {"guaranteed", "max"}
    guaranteed = vector(resources.get("guaranteed")) or {}
    maximum = vector(resources.get("max"))
    assert maximum is None or any(v > 0 for v in maximum.values()), "an all-zero max is ignored by YuniKorn"
    assert fits(guaranteed, maximum), f"{queue['name']}: guaranteed above its max"
    assert maximum is None or fits(maximum, parent_max), f"{queue['name']}: max above its parent's"
    children = queue.get("queues", [])
    if not children:
        assert not queue.get("parent") or queue["name"] == "plan"
        assert queue["properties"]["application.sort.policy"] in ("fifo", "fair")
    total: dict[str, float] = {}
    for child in children:
        for name, value in check_queue(child, maximum or parent_max).items():
            total[name] = total.get(name, 0) + value
    if guaranteed:
        assert fits(total, guaranteed), f"children of {queue['name']} are guaranteed more than it: {total}"
    assert fits(total, maximum)
    return guaranteed or total


def test_the_validator_catches_what_yunikorn_refuses() -> None:
    good = yunikorn.configuration(Follower().round(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(5)))
    validate(good)
    unlimited = Follower(max_policy="unlimited").round(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(5))
    too_much = yunikorn.configuration(unlimited)
    too_much["partitions"][0]["queues"][0]["queues"][0]["queues"][1]["resources"]["guaranteed"]["vcore"] = 6
    with pytest.raises(AssertionError, match="children of plan are guaranteed more than it"):
        validate(too_much)
    above_max = yunikorn.configuration(Follower().round(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(5)))
    above_max["partitions"][0]["queues"][0]["queues"][0]["queues"][1]["resources"]["guaranteed"]["vcore"] = "5001m"
    with pytest.raises(AssertionError, match="a: guaranteed above its max"):
        validate(above_max)


def test_stateaware_is_written_for_the_releases_that_have_it_and_fifo_after() -> None:
    assert yunikorn.sort_policy_for("fair", "1.9") == ("fair", None)
    assert yunikorn.sort_policy_for("stateaware", "1.4") == ("stateaware", None)
    policy, warning = yunikorn.sort_policy_for("stateaware", "1.5.2")
    assert policy == "stateaware" and warning is not None and "deprecated" in warning
    policy, warning = yunikorn.sort_policy_for("stateaware", "1.6")
    assert policy == "fifo" and warning is not None and "alias of fifo" in warning
    with pytest.raises(FollowerError, match=r"`2\.0` is not a YuniKorn release"):
        yunikorn.sort_policy_for("fifo", "2.0")
    with pytest.raises(FollowerError, match="no application sort policy `drf`"):
        yunikorn.sort_policy_for("drf")
    round = Follower().round(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(5))
    leaf = yunikorn.plan_queue_config(round, "stateaware")["queues"][1]
    assert leaf["properties"] == {"application.sort.policy": "stateaware"}
