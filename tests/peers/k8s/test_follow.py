"""The plan drives the real control plane: `rayon serve --follow-to yunikorn-configmap` keeps YuniKorn's ConfigMap,
and a reservation's pods, labelled for its queue, run inside `root.plan.<name>` when and as much as the plan says,
best effort giving way (scenario.py plays it; these tests read what the API server recorded).

The lag between a lease's start and its pods running is measured and printed, not bounded: it is the follower's
round (one plan step), YuniKorn's configuration reload and its preemption delay (benchmarks/k8s_lag.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.k8s.controlplane import ControlPlane
from tests.peers.k8s.scenario import STEP, Outcome, Reservation, play

pytestmark = pytest.mark.cluster

# 4 bundles of 4 vcores and 8 GiB for two minutes (two one-minute leases each), its window opening 30 s after
# submission; eight pods of a minute each: twice what the queue admits at once
ALPHA = Reservation("alpha", """reservation alpha user=alice value=10 {
  window(s=+30s, e=+4m,
    atom(b={memory: 8GiB, vcores: 4}, h=4, l=1m, w=8m)
  )
}""", pods=8, cpu=4, memory=8, run_for=60)
FILL = (32, 4, 8)  # best effort: 32 pods of 4 vcores and 8 GiB, the four nodes' 128 vcores and 256 GiB


@pytest.fixture(scope="module")
def outcome(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    work: Path = tmp_path_factory.mktemp("follow")
    played = play(control_plane, work, [ALPHA], FILL, limit=240)
    lease = played.lease_start("alpha")
    started = sorted(p["started"] for p in played.pods.values() if p["started"] is not None)
    print(f"\nlease start {lease} s; ConfigMap {played.queue_seen.get('alpha')}; pods started {started}; "
          f"preempted {len(played.preempted)}")
    return played


def test_the_plan_allocates_what_the_scenario_assumes(outcome: Outcome) -> None:
    steps = outcome.planned["alpha"]
    assert max(steps.values()) == 4 and sum(steps.values()) * STEP == 8 * 60  # 8 bundle-minutes, 4 at a time


def test_the_follower_opens_the_queue_at_the_lease_and_closes_it_after(outcome: Outcome) -> None:
    lease = outcome.lease_start("alpha")
    assert lease is not None
    first, gone = outcome.queue_seen["alpha"]
    assert lease <= first  # not before the plan says (the round is written at the lease's step)
    last = max(s for s, n in outcome.planned["alpha"].items() if n > 0)
    assert gone is not None and gone >= (last + 1) * STEP


def test_the_reservations_pods_run_in_its_queue_and_all_finish(outcome: Outcome) -> None:
    alpha = {n: p for n, p in outcome.pods.items() if p["reservation"] == "alpha"}
    assert len(alpha) == ALPHA.pods
    assert all(p["phase"] == "Succeeded" and p["node"].startswith("kwok-node-") for p in alpha.values()), alpha
    named = {q for p in alpha.values() for q in p["queues_named"]}
    assert named == {"root.plan.alpha"}, [p["events"] for p in alpha.values()]


def test_nothing_runs_before_the_lease_nor_beyond_the_allocation(outcome: Outcome) -> None:
    lease = outcome.lease_start("alpha")
    assert lease is not None
    started = [p["started"] for p in outcome.pods.values() if p["started"] is not None]
    assert min(started) >= lease - 1  # startTime is whole seconds
    peak = max(outcome.planned["alpha"].values())
    assert max(sample.get("alpha", 0) for _, sample in outcome.samples) == peak  # used, and never more


def test_pods_beyond_the_allocation_wait_with_yunikorns_reason(outcome: Outcome) -> None:
    held = {name: reasons for name, reasons in outcome.pending_reasons.items() if name.startswith("alpha-")}
    assert len(held) >= ALPHA.pods - max(outcome.planned["alpha"].values())
    assert all(any(r.startswith(("SchedulingSkipped", "Unschedulable")) for r in reasons) for reasons in held.values())


def test_best_effort_gives_way_to_the_reservation(outcome: Outcome) -> None:
    assert outcome.preempted and outcome.preempted_by == {"root.plan.alpha"}
    assert min(n for _, n in outcome.best_effort) <= outcome.best_effort_count - max(outcome.planned["alpha"].values())
