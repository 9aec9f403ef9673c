"""The local control plane itself: its fake nodes are the example cluster's, everything listens on loopback only,
YuniKorn schedules a pod into the queue its placement rules give, and KWOK plays the pod's life (runs it; ends it
after its declared run time). Stopping it leaving nothing behind is checked by the fixture (conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.peers.k8s.controlplane import NODE_CAPACITY, NODES, ControlPlane, listening, loopback, pod, wait

pytestmark = pytest.mark.cluster


def test_the_fake_nodes_are_the_example_clusters_and_ready(control_plane: ControlPlane) -> None:
    nodes = control_plane.client().list_node().items
    assert len(nodes) == NODES
    for node in nodes:
        assert {k: node.status.allocatable[k] for k in NODE_CAPACITY} == NODE_CAPACITY
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        assert not node.spec.taints  # nothing to lift them without a controller-manager: none are put on


def test_everything_listens_on_loopback_only(control_plane: ControlPlane) -> None:
    pids = control_plane.pids()
    assert sorted(pids) == sorted(["etcd", "kube-apiserver", "kwok", "yunikorn"])
    sockets = {name: listening(pid) for name, pid in pids.items()}
    assert (("127.0.0.1", control_plane.port)) in sockets["kube-apiserver"]
    assert all(loopback(address) for found in sockets.values() for address, _ in found), sockets


def test_a_pod_is_placed_by_yunikorn_and_played_by_kwok(control_plane: ControlPlane) -> None:
    api = control_plane.client()
    api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "smoke"}})
    api.create_namespaced_pod("smoke", pod("short", "smoke", "1", "1Gi", {"yunikorn.apache.org/app-id": "smoke-1"},
                                           {"pod-complete.stage.kwok.x-k8s.io/delay": "2s"}))
    api.create_namespaced_pod("smoke", pod("long", "smoke", "1", "1Gi", {"yunikorn.apache.org/app-id": "smoke-2"}))

    def phase(name: str) -> str:
        return str(api.read_namespaced_pod(name, "smoke").status.phase)

    wait(lambda: phase("short") == "Succeeded", 120, what="the short pod's end")
    wait(lambda: phase("long") == "Running", 120, what="the long pod's start")
    long: Any = api.read_namespaced_pod("long", "smoke")
    assert long.spec.node_name.startswith("kwok-node-")
    # the base's tag rule: a pod that names no queue goes to root.besteffort.<its namespace> (the core's log says
    # where it placed each application)
    placed = [line for line in (control_plane.dir / "yunikorn.log").read_text().splitlines()
              if "Added application to partition" in line and "smoke-2" in line]
    assert placed and '"placed queue": "root.besteffort.smoke"' in placed[0], placed
    events = api.list_namespaced_event("smoke", field_selector="involvedObject.name=long").items
    assert any(e.source.component == "yunikorn" or "yunikorn" in (e.reporting_component or "") for e in events), \
        [(e.reason, e.message) for e in events]
    # no controller-manager here: deleting the namespace would not delete its pods, so delete them (KWOK removes a
    # pod being deleted at once) and leave the nodes empty for the tests that follow
    for name in ("short", "long"):
        api.delete_namespaced_pod(name, "smoke", grace_period_seconds=0)
    wait(lambda: not api.list_namespaced_pod("smoke").items, 60, what="the smoke pods' removal")
