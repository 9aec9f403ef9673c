"""A gang that never fits runs not at all: YuniKorn holds room for its task group with placeholder pods, and when
the group's placeholder timeout passes (`gangSchedulingStyle=Hard`) it gives the room back and fails the real pods,
none of which has run (docs/kubernetes.md, "A gang that never fits"). The gang: five members of a whole node each,
on four nodes; its own namespace, so its own best-effort queue (the base's tag rule)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.peers.k8s.controlplane import ControlPlane, pod, wait
from tests.peers.k8s.scenario import APP_LABEL, clear, namespace

pytestmark = pytest.mark.cluster

NAMESPACE, APP = "gang", "too-wide"
MEMBERS, TIMEOUT = 5, 15  # members of 32 vcores each, four nodes of 32; seconds of placeholder timeout


@pytest.fixture(scope="module")
def seen(control_plane: ControlPlane) -> dict[str, Any]:
    """Submit the gang, then sample its pods until YuniKorn has failed it: phases seen per real pod, placeholders
    seen, the real pods' final records and events."""
    api = control_plane.client()
    clear(api)
    namespace(api, NAMESPACE)
    group = {"name": "wide", "minMember": MEMBERS, "minResource": {"cpu": "32", "memory": "60Gi"}}
    annotations = {"yunikorn.apache.org/task-group-name": "wide",
                   "yunikorn.apache.org/task-groups": json.dumps([group]),
                   "yunikorn.apache.org/schedulingPolicyParameters":
                       f"placeholderTimeoutInSeconds={TIMEOUT} gangSchedulingStyle=Hard"}
    members = [f"member-{i}" for i in range(MEMBERS)]
    begun = time.monotonic()
    for name in members:
        api.create_namespaced_pod(NAMESPACE, pod(name, NAMESPACE, "32", "60Gi", {APP_LABEL: APP}, annotations))
    phases: dict[str, set[str]] = {name: set() for name in members}
    placeholders: dict[str, set[str]] = {}

    def failed() -> bool:
        for item in api.list_namespaced_pod(NAMESPACE).items:
            found = phases.get(item.metadata.name)
            if found is None:
                placeholders.setdefault(item.metadata.name, set()).add(str(item.status.phase))
            else:
                found.add(str(item.status.phase))
        return all("Failed" in found for found in phases.values())

    wait(failed, 300, what="YuniKorn failing the gang")
    took = time.monotonic() - begun
    wait(lambda: not [p for p in api.list_namespaced_pod(NAMESPACE).items if p.metadata.name not in phases], 120,
         what="the placeholders' removal")
    records = {name: api.read_namespaced_pod(name, NAMESPACE) for name in members}
    events = {name: [(e.reason, e.message) for e in
                     api.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}").items]
              for name in members}
    print(f"\ngang failed {took:.0f} s after submission; placeholders {placeholders}; "
          f"{members[0]}: {records[members[0]].status.reason}: {records[members[0]].status.message}; "
          f"events {events[members[0]]}")
    clear(api, (NAMESPACE,))
    return {"phases": phases, "placeholders": placeholders, "records": records, "events": events, "took": took}


def test_no_member_of_a_gang_that_never_fits_runs(seen: dict[str, Any]) -> None:
    assert all("Running" not in found and "Succeeded" not in found for found in seen["phases"].values()), seen["phases"]
    assert all(record.status.start_time is None and record.spec.node_name is None
               for record in seen["records"].values())


def test_yunikorn_held_room_with_placeholders_then_gave_it_back(seen: dict[str, Any]) -> None:
    held = seen["placeholders"]
    assert len(held) == MEMBERS  # one placeholder per member, as for a gang that fits (test_follow)
    assert sum("Running" in phases for phases in held.values()) == 4  # four nodes: four of the five could be placed
    assert seen["took"] >= TIMEOUT  # not before the group's timeout


def test_the_user_sees_the_real_pods_failed_with_yunikorns_reason(seen: dict[str, Any]) -> None:
    for name, record in seen["records"].items():
        assert record.status.phase == "Failed"
        assert record.status.reason == "ResourceReservationTimeout", (name, record.status)
        assert "timed out due to insufficient resources" in record.status.message
        assert any(reason == "ApplicationFailed" for reason, _ in seen["events"][name]), seen["events"][name]
