"""A reservation's pods outliving its window on the local control plane, under `rayon serve --on-expiry kill` or
`move`: the ConfigMap's queue over time, and when each pod ran and stopped, from the API server.

`gamma` holds two bundles (4 vcores, 8 GiB) over its whole window, [10 s, 30 s) of the plan (two steps: the plan
starts at the step boundary before now, so the window opens 0-10 s after the store is made); its two pods (one
application: the first is its originator) are submitted as soon as its queue is in the ConfigMap and would run ten
minutes. Nothing else runs: the pods start at once, and what stops them is the follower's `on_expiry` alone.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.peers.k8s.controlplane import ControlPlane, wait
from tests.peers.k8s.scenario import (
    STEP,
    Reservation,
    clear,
    namespace,
    plan,
    planned,
    serving,
    submit,
)

NAMESPACE = "expiry-{}"  # one per on_expiry (its events apart): the other scenarios' namespaces are left alone
QUOTA_KILL = "Preempting victim for quota change preemption"  # yunikorn-core's log line, one per pod it preempts
GAMMA = Reservation("gamma", """reservation gamma user=carol value=10 {
  window(s=+10s, e=+30s,
    atom(b={memory: 8GiB, vcores: 4}, h=2, l=20s, w=40s)
  )
}""", pods=2, cpu=4, memory=8, run_for=600)
AFTER = 10  # seconds watched past the window's end under `move` (kill: until both pods stopped): five times the
# kill's measured lag (about 2 s, docs/kubernetes.md), as the probe's watch
BASE = Path(__file__).with_name("queues-base.yaml")


@dataclass
class Ending:
    """What one play saw; times in seconds from the plan's start."""

    on_expiry: str
    window: tuple[float, float]
    submitted: float | None = None
    running: dict[str, float] = field(default_factory=dict)  # pod -> first seen running
    stopped: dict[str, float] = field(default_factory=dict)  # pod -> when its deletion was asked (the API server's),
    # else the first sample it was gone in
    still_running: list[str] = field(default_factory=list)  # at the end of the watch
    watched_until: float = 0.0
    queue: list[tuple[float, str]] = field(default_factory=list)  # gamma in the ConfigMap: (t, state) at each change
    events: dict[str, list[list[str]]] = field(default_factory=dict)  # pod -> [reason, message]
    quota_preempted: list[str] = field(default_factory=list)  # YuniKorn's log: QUOTA_KILL lines for gamma's queue

    def lag(self) -> dict[str, float]:
        """Per pod, from the window's end to its stop."""
        return {pod: t - self.window[1] for pod, t in sorted(self.stopped.items())}


def queue_state(api: Any, name: str) -> str:
    """`gamma`'s leaf in YuniKorn's ConfigMap now: `absent`, `ended` (kept closed, with the quota preemption delay),
    or `open` with the vcores its max admits."""
    data = api.read_namespaced_config_map("yunikorn-configs", "yunikorn").data or {}
    for partition in yaml.safe_load(data.get("queues.yaml", "") or "{}").get("partitions", []):
        for root in partition.get("queues", []):
            for parent in root.get("queues", []):
                for leaf in parent.get("queues", []) if parent.get("name") == "plan" else []:
                    if leaf.get("name") == name:
                        if "quota.preemption.delay" in (leaf.get("properties") or {}):
                            return "ended"
                        return f"open, max {leaf.get('resources', {}).get('max')}"
    return "absent"


def play(plane: ControlPlane, work: Path, on_expiry: str, limit: float = 120.0) -> Ending:
    """The scenario with `rayon serve --on-expiry ON_EXPIRY`; `limit`: a safety net in seconds past the window's end
    (kill: a pod never stopped fails the test instead of hanging it)."""
    api = plane.client()
    space = NAMESPACE.format(on_expiry)
    clear(api, (space,))
    namespace(api, space)
    scheduler_log = plane.dir / "yunikorn.log"
    logged = scheduler_log.stat().st_size
    start = plan(work, [GAMMA], len(api.list_node().items))
    steps = planned(work, start, [GAMMA])["gamma"]
    ending = Ending(on_expiry, (min(steps) * STEP, (max(steps) + 1) * STEP))
    with serving(plane, work, "--on-expiry", on_expiry):
        _watch(api, ending, start, space, ending.window[1] + (AFTER if on_expiry == "move" else limit))
    for pod in GAMMA.pod_names():
        events = api.list_namespaced_event(space, field_selector=f"involvedObject.name={pod}").items
        ending.events[pod] = [[e.reason or "", e.message or ""] for e in events]
    with scheduler_log.open(errors="replace") as lines:
        lines.seek(logged)
        ending.quota_preempted = [line.strip() for line in lines if QUOTA_KILL in line and "root.plan.gamma" in line]
    clear(api, (space,))
    _restore_base(api)
    (work / "ending.json").write_text(json.dumps(dataclasses.asdict(ending), indent=1))
    return ending


def _watch(api: Any, ending: Ending, start: datetime, space: str, until: float) -> None:
    names = set(GAMMA.pod_names())
    while True:
        t = time.time() - start.timestamp()
        state = queue_state(api, GAMMA.name)
        if not ending.queue or ending.queue[-1][1] != state:
            ending.queue.append((round(t, 1), state))
        if state.startswith("open") and ending.submitted is None:
            submit(api, GAMMA, space)
            ending.submitted = round(time.time() - start.timestamp(), 1)
        pods = {p.metadata.name: p for p in api.list_namespaced_pod(space).items if p.metadata.name in names}
        seen = round(time.time() - start.timestamp(), 1)
        for name in names:
            item = pods.get(name)
            if item is not None and item.status.phase == "Running" and item.metadata.deletion_timestamp is None:
                ending.running.setdefault(name, seen)
            elif name in ending.running and name not in ending.stopped:
                deleted = item.metadata.deletion_timestamp if item is not None else None
                # A graceful deletion's timestamp is when its grace period ends (asked + 30 s by default), not when
                # it was asked: read raw, a pod seen while terminating stopped 30 s after one already gone.
                grace = (item.metadata.deletion_grace_period_seconds or 0) if deleted else 0
                ending.stopped[name] = round(deleted.timestamp() - grace - start.timestamp(), 1) if deleted else seen
        ending.still_running = sorted(n for n in ending.running if n not in ending.stopped)
        ending.watched_until = seen
        if seen > until or (ending.on_expiry == "kill" and ending.running and not ending.still_running):
            return
        time.sleep(0.5)


def _restore_base(api: Any) -> None:
    """YuniKorn's ConfigMap back to the base cluster.sh writes: the partition's quota preemption off again, and the
    plan's queues gone (emptied above, so YuniKorn removes them)."""
    api.patch_namespaced_config_map("yunikorn-configs", "yunikorn", {"data": {"queues.yaml": BASE.read_text()}})



def probe(plane: ControlPlane, before: dict[str, Any], after: dict[str, Any], watch: float = 10.0) -> list[str]:
    """YuniKorn's quota preemption alone, without the follower: a queue `root.plan.probe` with max `before` runs
    gamma's two pods (one application); its max becomes `after` with `quota.preemption.delay: 1s` (the partition's
    quota preemption on). The pods still running `watch` seconds later (five times the lag test_on_expiry measures)."""
    api = plane.client()
    space = NAMESPACE.format("probe")
    clear(api, (space,))
    namespace(api, space)
    probed = dataclasses.replace(GAMMA, name="probe")
    try:
        _write_probe(api, before, {})
        wait(lambda: queue_state(api, "probe") != "absent", 30, what="the probe queue in the ConfigMap")
        time.sleep(2)  # YuniKorn reloads its queues within a second of the change (docs/yunikorn.md)
        submit(api, probed, space)
        wait(lambda: _running(api, space) == probed.pod_names(), 60, what="the probe's pods running")
        _write_probe(api, after, {"quota.preemption.delay": "1s"})
        time.sleep(watch)
        return _running(api, space)
    finally:
        clear(api, (space,))
        _restore_base(api)


def _write_probe(api: Any, maximum: dict[str, Any], properties: dict[str, str]) -> None:
    document = yaml.safe_load(BASE.read_text())
    (partition,) = document["partitions"]
    partition["preemption"]["quotapreemptionenabled"] = True
    (plan_queue,) = [q for q in partition["queues"][0]["queues"] if q["name"] == "plan"]
    plan_queue["queues"] = [{"name": "probe", "resources": {"max": maximum}, "properties": properties}]
    api.patch_namespaced_config_map("yunikorn-configs", "yunikorn", {"data": {"queues.yaml": yaml.safe_dump(document)}})


def _running(api: Any, space: str) -> list[str]:
    return sorted(p.metadata.name for p in api.list_namespaced_pod(space).items
                  if p.status.phase == "Running" and p.metadata.deletion_timestamp is None)
