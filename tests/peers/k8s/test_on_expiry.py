"""`rayon serve --on-expiry kill` on the real control plane (expiry.py plays it): when a reservation's window closes,
YuniKorn's quota preemption deletes its pods still running, the application's originator among them, while the
follower keeps the ended queue closed in the ConfigMap; under `move` (the default) they run on. The lag from the
window's end to each pod's deletion is printed, and bounded only by the follower's KEEP_ENDED: the kill must come
while the ended queue is in the document (docs/kubernetes.md gives the measured figures).

The probe (why the ended max is what it is) checks YuniKorn's own behaviour at the version build.sh pins, which only a
new pin can change (test_scripts.py checks the pins in the default suite): it runs when RAYON_K8S_PROBE=1 is set, so
the tier stays under its 10 minutes (docs/kubernetes.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from follower.follow.service import KEEP_ENDED
from tests.peers.k8s.controlplane import ControlPlane
from tests.peers.k8s.expiry import AFTER, GAMMA, Ending, play, probe

pytestmark = pytest.mark.cluster
PROBE = "RAYON_K8S_PROBE"  # set to 1: also probe YuniKorn's quota preemption itself (27 s measured)


def shown(ending: Ending) -> Ending:
    print(f"\n{ending.on_expiry}: window {ending.window}, submitted {ending.submitted}, running {ending.running}, "
          f"stopped {ending.stopped} (lag {ending.lag()}), still running {ending.still_running} at "
          f"{ending.watched_until}; queue {ending.queue}; events {ending.events}; YuniKorn: {ending.quota_preempted}")
    return ending


@pytest.fixture(scope="module")
def moved(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Ending:
    work: Path = tmp_path_factory.mktemp("expiry-move")
    return shown(play(control_plane, work, "move"))


@pytest.fixture(scope="module")
def killed(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory, moved: Ending) -> Ending:
    work: Path = tmp_path_factory.mktemp("expiry-kill")  # after `move`: its queue is gone from YuniKorn by then
    return shown(play(control_plane, work, "kill"))


def test_under_move_the_pods_run_on_past_the_window(moved: Ending) -> None:
    assert sorted(moved.running) == GAMMA.pod_names() and max(moved.running.values()) < moved.window[1]
    assert moved.stopped == {} and moved.still_running == GAMMA.pod_names()
    assert moved.watched_until >= moved.window[1] + AFTER
    # the queue leaves the document at the window's end, and nothing is kept closed
    assert [state for _, state in moved.queue][-1] == "absent" and "ended" not in dict(moved.queue).values()
    assert moved.quota_preempted == []


def test_under_kill_every_pod_still_running_is_deleted_after_the_window_closes(killed: Ending) -> None:
    assert sorted(killed.running) == GAMMA.pod_names() and max(killed.running.values()) < killed.window[1]
    assert sorted(killed.stopped) == GAMMA.pod_names() and killed.still_running == []  # the originator, -0, too
    lags = killed.lag().values()
    assert min(lags) >= -0.5  # not before the window's end: the queue admits them until then
    assert max(lags) < KEEP_ENDED  # while the follower keeps the ended queue closed in the document
    assert len(killed.quota_preempted) == len(GAMMA.pod_names())  # by YuniKorn's quota preemption, one line a pod


def test_under_kill_the_ended_queue_is_closed_in_the_configmap_at_the_window_end(killed: Ending) -> None:
    states = [state for _, state in killed.queue]
    assert states[0] == "absent" and states[1].startswith("open") and "ended" in states
    (closed,) = [t for t, state in killed.queue if state == "ended"]
    assert killed.window[1] - 0.5 <= closed <= min(killed.stopped.values()) + 0.5


@pytest.mark.skipif(os.environ.get(PROBE) != "1", reason=f"YuniKorn's own quota preemption at its pinned version, "
                    f"about 30 s: {PROBE}=1 probes it (docs/kubernetes.md)")
def test_why_the_mark_one_byte_leaves_a_pod_and_a_max_not_lowered_both(control_plane: ControlPlane) -> None:
    """What the ended max must be (follower/follow/yunikorn.py): YuniKorn frees only what a queue holds above its max,
    and starts only for a max lowered in every quantity (a name missing counts as 0)."""
    opened = {"memory": "16Gi", "vcore": 8}
    one_byte = probe(control_plane, opened, {"memory": 1, "vcore": 0, "pods": 0})
    unmarked = probe(control_plane, opened, {"memory": 0, "vcore": 0, "pods": 0, "rayon.io/expiry": 1})
    print(f"\nstill running: one byte {one_byte}, zero but not lowered {unmarked} (zero and lowered: none, above)")
    assert len(one_byte) == 1 and len(unmarked) == 2
