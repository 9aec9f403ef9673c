"""A reservation queue that holds nothing must hold nothing in YuniKorn too: yunikorn-core's own queue objects
(tests/peers/yunikorn/maxform) on the documents the follower writes, on the oldest and newest core release."""

from __future__ import annotations

import pytest

from follower.follow import yunikorn
from follower.follow.follower import Follower
from tests.follower.fakes import minute, plan_of
from tests.peers.yunikorn.maxform import leaves
from tests.peers.yunikorn.validator import NEWEST, OLDEST, PeerUnavailable

pytestmark = pytest.mark.peer
CLUSTER = {"memory": "429496729600", "vcore": "100", "pods": "110"}  # the plan's 400GiB and 100 vcores, 110 pods
ASKS = {"pod": {"memory": "1073741824", "vcore": "1", "pods": "1"},  # 1GiB, 1 vcore
        "cpu-only": {"vcore": "500m", "pods": "1"},
        "no-requests": {"pods": "1"}}  # a BestEffort pod: the shim asks only its pod count


@pytest.fixture(scope="module", params=(OLDEST, NEWEST))
def core(request: pytest.FixtureRequest) -> str:
    """A yunikorn-core release the peer builds against here (else the test is skipped, saying why)."""
    try:
        leaves(yunikorn.document(Follower().round(plan_of(), minute(0))), CLUSTER, {}, request.param)
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    return str(request.param)


def test_a_reservation_before_its_first_lease_admits_nothing(core: str) -> None:
    # `a`: window [10, 40) minutes, its lease of 20 bundles from 15. At 12 it is open and holds nothing.
    round = Follower().round(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(12))
    found = leaves(yunikorn.document(round), CLUSTER, ASKS, core)["root.plan.a"]
    assert found.core == f"v{core}"
    assert found.max == {"memory": 1, "vcore": 0, "pods": 0}  # kept, where an all-zero max is dropped (below)
    assert found.headroom == {"memory": 1, "vcore": 0, "pods": 0}
    assert found.fits == {"pod": False, "cpu-only": False, "no-requests": False}


def test_an_all_zero_max_would_admit_everything(core: str) -> None:
    """Why the closed form: the core drops a max with no quantity above zero, and the queue is bound by the cluster."""
    round = Follower().round(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(12))
    text = yunikorn.document(round).replace("max: {memory: 1, vcore: 0, pods: 0}", "max: {memory: 0, vcore: 0}")
    found = leaves(text, CLUSTER, ASKS, core)["root.plan.a"]
    assert found.max is None
    assert found.headroom == {"memory": 429496729600, "vcore": 100000, "pods": 110}  # the root's: the cluster
    assert found.fits == {"pod": True, "cpu-only": True, "no-requests": True}


def test_a_reservation_holding_its_lease_admits_that_and_no_more(core: str) -> None:
    round = Follower().round(plan_of(("a", 10, 40, [(15, 25, 20)])), minute(16))
    found = leaves(yunikorn.document(round), CLUSTER, {
        "its lease": {"memory": str(80 * 2**30), "vcore": "20", "pods": "1"},  # 20 bundles of 4GiB and 1 vcore
        "one more vcore": {"memory": "1073741824", "vcore": "21", "pods": "1"}}, core)["root.plan.a"]
    assert found.max == {"memory": 80 * 2**30, "vcore": 20000}  # vcores in millicores
    assert found.fits == {"its lease": True, "one more vcore": False}
