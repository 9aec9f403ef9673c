"""`on_expiry: kill` in the YuniKorn documents (follower/follow/yunikorn.py): the ended queue kept closed with its
quota preemption delay, and every max YuniKorn must see lowered to it (yunikorn-core 1.9 `Queue.setPreemptionTime`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any as AnyType

import pytest
import yaml

from follower.follow import yunikorn
from follower.follow.follower import Follower, FollowerError
from tests.follower.fakes import minute, plan_of

# a: window [10, 40) minutes, 20 bundles over [15, 25); b: window [20, 60), 5 bundles over [20, 60)
PLAN = (("a", 10, 40, [(15, 25, 20)]), ("b", 20, 60, [(20, 60, 5)]))


def leaves(config: Mapping[str, AnyType]) -> dict[str, dict[str, AnyType]]:
    (root,) = config["partitions"][0]["queues"]
    (plan,) = [q for q in root["queues"] if q["name"] == "plan"]
    return {q["name"]: q for q in plan["queues"]}


def number(value: int | str) -> int:
    """A quantity as YuniKorn reads it (vcores in millicores when written `1500m`)."""
    return int(value[:-1]) if isinstance(value, str) else value


def lowered(old: Mapping[str, AnyType], new: Mapping[str, AnyType]) -> bool:
    """yunikorn-core's `resources.StrictlyGreaterThan(old, new)`, a name missing on one side read as 0: the test that
    starts quota preemption when a queue's max changes."""
    keys = set(old) | set(new)
    pairs = [(number(old.get(k, 0)), number(new.get(k, 0))) for k in keys]
    return all(o >= n for o, n in pairs) and any(o != n for o, n in pairs)


def test_under_move_an_ended_queue_leaves_the_document_and_nothing_is_marked() -> None:
    round = Follower().round(plan_of(*PLAN), minute(45))
    config = yunikorn.configuration(round)
    assert set(leaves(config)) == {"default", "b"}
    assert yunikorn.EXPIRY_MARK not in yaml.dump(config) and "quotapreemptionenabled" not in yaml.dump(config)


def test_under_kill_the_ended_queue_stays_closed_with_the_quota_preemption_delay() -> None:
    round = Follower().round(plan_of(*PLAN), minute(45))
    config = yunikorn.configuration(round, ended=("a",))
    a = leaves(config)["a"]
    assert a["resources"] == {"guaranteed": {"memory": 0, "vcore": 0},
                              "max": {"memory": 0, "vcore": 0, "pods": 0, "rayon.io/expiry": 1}}
    assert a["properties"] == {"application.sort.policy": "fifo", "quota.preemption.delay": "1s"}
    assert config["partitions"][0]["preemption"] == {"quotapreemptionenabled": True}
    assert leaves(config)["b"]["resources"]["max"]["rayon.io/expiry"] == 1  # the open one is marked, not closed
    assert "quota.preemption.delay" not in leaves(config)["b"]["properties"]


def test_the_ended_max_leaves_nothing_a_pod_asks_for() -> None:
    """The quota preemptor frees what a queue holds above its max: a max of one byte would leave one pod running."""
    round = Follower().round(plan_of(*PLAN), minute(45))
    maximum = leaves(yunikorn.configuration(round, ended=("a",)))["a"]["resources"]["max"]
    assert {k: v for k, v in maximum.items() if number(v) > 0} == {yunikorn.EXPIRY_MARK: 1}
    assert maximum["pods"] == 0  # and admits no new pod, even one that asks for nothing else


@pytest.mark.parametrize("max_policy", ["strict", "plan", "unlimited"])
def test_every_max_the_queue_had_in_its_window_is_lowered_to_the_ended_one(max_policy: str) -> None:
    """YuniKorn starts quota preemption only when a max is lowered (or is unchanged and the delay newly set): each max
    the queue can have had at the step before its window closed must be one the ended max is lower than."""
    follower = Follower(max_policy=max_policy)
    plan = plan_of(*PLAN)
    ended = leaves(yunikorn.configuration(follower.round(plan, minute(40)), ended=("a",)))["a"]["resources"]["max"]
    for at in (10, 12, 15, 24, 30, 39):  # before its lease (closed), in it, after it, its last step
        before = leaves(yunikorn.configuration(follower.round(plan, minute(at)), ended=()))["a"]["resources"]
        assert lowered(before["max"], ended) or before["max"] == {yunikorn.EXPIRY_MARK: 1}, (at, before)


def test_a_reservation_open_again_is_not_kept_as_ended() -> None:
    round = Follower().round(plan_of(*PLAN), minute(45))  # `b` is open: its queue is written as any open one
    kept = leaves(yunikorn.configuration(round, ended=("a", "b")))
    assert kept["b"]["resources"]["guaranteed"]["vcore"] == 5
    assert "quota.preemption.delay" not in kept["b"]["properties"]
    assert kept["a"]["properties"]["quota.preemption.delay"] == "1s" and list(kept) == ["default", "b", "a"]


def test_the_partition_keeps_its_own_preemption_settings() -> None:
    base = yunikorn.load_base("partitions:\n- name: default\n  preemption: {enabled: true}\n  queues: [{name: root}]\n",
                              "base.yaml")
    round = Follower().round(plan_of(*PLAN), minute(45))
    text = yunikorn.document(round, base, ended=("a",))
    assert yaml.safe_load(text)["partitions"][0]["preemption"] == {"enabled": True, "quotapreemptionenabled": True}
    assert base["partitions"][0]["preemption"] == {"enabled": True}  # the base is untouched


def test_a_base_whose_preemption_is_not_a_mapping_is_an_error_naming_it() -> None:
    base = yunikorn.load_base("partitions:\n- name: default\n  preemption: true\n  queues: [{name: root}]\n",
                              "base.yaml")
    round = Follower().round(plan_of(*PLAN), minute(45))
    with pytest.raises(FollowerError, match="partition `default` has a `preemption` that is not a mapping"):
        yunikorn.document(round, base, ended=("a",))
    assert yunikorn.document(round, base).count("preemption: true") == 1  # under move it is left as it is
