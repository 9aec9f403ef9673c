"""One plan played through the product's own paths on the local control plane, and what the API server recorded.

`play` fills the cluster with best-effort pods (one application, namespace `batch`: the base's tag rule puts them in
`root.besteffort.batch`), makes a plan whose clock is the wall clock (`rayon init`, `rayon submit`), and runs
`rayon serve --follow-to yunikorn-configmap` on it. As soon as the ConfigMap holds a reservation's queue, the
reservation's pods are submitted, labelled for it as docs/yunikorn.md says; KWOK ends each after its run time.
Every half second it samples the pods; at the end it reads their records and events. Times are wall seconds from
the plan's start. The plan's own figures come from `rayon follow --json` (what the follower writes, per step).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tests.peers.k8s.controlplane import ControlPlane, pod, wait

RAYON = [str(Path(sys.executable).parent / "rayon")]  # the installed command, as a user runs it
BATCH, JOBS = "batch", "jobs"  # best effort's namespace, the reservations' pods' namespace
APP_LABEL, QUEUE_LABEL = "yunikorn.apache.org/app-id", "yunikorn.apache.org/queue"
RUN_FOR = "pod-complete.stage.kwok.x-k8s.io/delay"  # KWOK ends a pod that long after it started (kwok.yaml)
STEP = 10  # seconds: the plan's step, and so the follower's round
HELD = re.compile(r"does not fit in queue '([^']+)'")


@dataclass(frozen=True)
class Reservation:
    """A reservation and the pods that use it: `pods` of `cpu` vcores and `memory` GiB, each running `run_for` s;
    `gang`: the pods are one YuniKorn task group of `pods` members (docs/yunikorn.md, step 4)."""

    name: str
    rdl: str
    pods: int
    cpu: int
    memory: int
    run_for: int
    gang: bool = False

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.pods)]


@dataclass
class Outcome:
    """What happened: the plan's allocation per step, pod samples, the pods' records, events, ConfigMap changes."""

    start: datetime
    planned: dict[str, dict[int, int]]  # reservation -> step -> bundles the plan allocates it
    # (t0, t1, reservation -> pods running): the API server's answer of some moment between t0 and t1
    samples: list[tuple[float, float, dict[str, int]]] = field(default_factory=list)
    best_effort: list[tuple[float, int]] = field(default_factory=list)  # (t, best-effort pods running)
    queue_seen: dict[str, tuple[float, float | None]] = field(default_factory=dict)  # in the ConfigMap: from, until
    submitted: dict[str, float] = field(default_factory=dict)  # reservation -> t its pods were created
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod -> its record (reservation, times, queue)
    placeholders: dict[str, dict[str, Any]] = field(default_factory=dict)  # a gang's placeholder pods, as seen
    pending_reasons: dict[str, list[str]] = field(default_factory=dict)  # pod -> reasons seen, each once
    gone: list[str] = field(default_factory=list)  # best-effort pods no longer there (only YuniKorn deletes them)
    preempted_by: list[str] = field(default_factory=list)  # the queues YuniKorn's preemption events name
    best_effort_count: int = 0

    def lease_start(self, name: str) -> float | None:
        steps = [s for s, n in self.planned[name].items() if n > 0]
        return min(steps) * STEP if steps else None

    def bundles_at(self, name: str, t: float) -> int:
        return self.planned[name].get(int(t // STEP), 0)


def rayon(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([*RAYON, *args], cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"rayon {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def fill(api: Any, pods: int, cpu: int, memory: int, limit: float) -> None:
    """`pods` best-effort pods of one application in namespace `batch`, all running before this returns."""
    api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BATCH}})
    for i in range(pods):
        api.create_namespaced_pod(BATCH, pod(f"fill-{i}", BATCH, str(cpu), f"{memory}Gi", {APP_LABEL: "batch-fill"}))
    wait(lambda: _phases(api, BATCH).count("Running") == pods, limit, what=f"{pods} best-effort pods running")


def clear(api: Any, namespaces: tuple[str, ...] = (BATCH, JOBS)) -> None:
    """Delete every pod in `namespaces` (those that exist) and wait until they are gone: no controller-manager here, so
    deleting a namespace would not delete its pods, and the nodes must be empty for the next scenario."""
    there = {item.metadata.name for item in api.list_namespace().items}
    for namespace in namespaces:
        if namespace in there:
            for item in api.list_namespaced_pod(namespace).items:
                api.delete_namespaced_pod(item.metadata.name, namespace, grace_period_seconds=0)
    wait(lambda: not any(api.list_namespaced_pod(n).items for n in namespaces if n in there), 120,
         what=f"the pods of {', '.join(namespaces)} gone")


def namespace(api: Any, name: str) -> None:
    """Make namespace `name` unless it is there (an earlier scenario of the session made it)."""
    if name not in {item.metadata.name for item in api.list_namespace().items}:
        api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _phases(api: Any, namespace: str) -> list[str]:
    return [p.status.phase for p in api.list_namespaced_pod(namespace).items]


def plan(work: Path, reservations: list[Reservation], nodes: int) -> datetime:
    """A store in `work` whose plan starts at the last step boundary of now, on `nodes` of the example cluster's
    node, holding the reservations (each submitted at the plan's start: their windows are relative to it)."""
    now = int(time.time())
    start = datetime.fromtimestamp(now - now % STEP, UTC)
    (work / "cluster.yaml").write_text(
        f"start: {start.strftime('%Y-%m-%dT%H:%M:%SZ')}\nstep: {STEP}s\nhorizon: 30m\n"
        f"nodes:\n  - {{name: kwok-node, count: {nodes}, memory: 64GiB, vcores: 32}}\n")
    rayon("init", "--state", "plan.db", "--cluster", "cluster.yaml", cwd=work)
    (work / "plan.rdl").write_text("\n".join(r.rdl for r in reservations))
    decided = rayon("submit", "--state", "plan.db", "plan.rdl", cwd=work)
    if f"{len(reservations)} of {len(reservations)} accepted" not in decided:
        raise RuntimeError(f"the plan did not accept every reservation:\n{decided}")
    return start


def planned(work: Path, start: datetime, reservations: list[Reservation]) -> dict[str, dict[int, int]]:
    """Per reservation, per step: the bundles the follower gives its queue (its guaranteed vcores over the pod's)."""
    rounds = json.loads(rayon("follow", "--state", "plan.db", "--format", "json", "--from",
                              start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--to", "+30m", cwd=work))["rounds"]
    cpu = {r.name: r.cpu for r in reservations}
    out: dict[str, dict[int, int]] = {r.name: {} for r in reservations}
    for round in rounds:
        for queue in round["queues"]:
            name = queue["reservation"]
            if name in out:
                out[name][round["step"]] = int(queue["guaranteed"]["vcores"] // cpu[name])
    return out


def queues_in(api: Any) -> dict[str, float]:
    """The reservation queues under root.plan in YuniKorn's ConfigMap now, each with the vcores its max admits."""
    data = api.read_namespaced_config_map("yunikorn-configs", "yunikorn").data or {}
    found: dict[str, float] = {}

    def walk(queues: list[dict[str, Any]], path: str) -> None:
        for queue in queues or []:
            full = f"{path}.{queue['name']}" if path else queue["name"]
            if full.startswith("root.plan.") and full != "root.plan.default":
                vcores = str((queue.get("resources") or {}).get("max", {}).get("vcore", 0))
                found[full.rsplit(".", 1)[1]] = int(vcores[:-1]) / 1000 if vcores.endswith("m") else float(vcores)
            walk(queue.get("queues", []), full)

    for partition in yaml.safe_load(data.get("queues.yaml", "") or "{}").get("partitions", []):
        walk(partition.get("queues", []), "")
    return found


def play(plane: ControlPlane, work: Path, reservations: list[Reservation], best_effort: tuple[int, int, int],
         limit: float) -> Outcome:
    """Run it all; `best_effort`: (pods, vcores, GiB) to fill the cluster with; `limit`: a safety net in seconds
    after the last lease ends (a stuck control plane fails the run instead of hanging it)."""
    api = plane.client()
    count, cpu, memory = best_effort
    fill(api, count, cpu, memory, 300)
    api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": JOBS}})
    start = plan(work, reservations, len(api.list_node().items))
    outcome = Outcome(start, planned(work, start, reservations), best_effort_count=count)
    last = max((max(s) + 1) * STEP for s in outcome.planned.values() if s)
    with serving(plane, work):
        _watch(api, outcome, reservations, start, last + limit)
    _records(api, outcome, reservations, start)
    (work / "outcome.json").write_text(json.dumps(dataclasses.asdict(outcome), default=str, indent=1))
    return outcome


@contextmanager
def serving(plane: ControlPlane, work: Path, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    """`rayon serve --follow-to yunikorn-configmap OPTIONS` on WORK's plan.db, on the wall clock, as the follower's
    user (the Role's rights, no more), logging to WORK/serve.log; stopped with SIGTERM (killed after 30 s) on exit."""
    grant_follower(plane)
    rayon("token", "ops", "--tokens", "tokens.yaml", cwd=work)
    env = {**os.environ, "KUBECONFIG": str(plane.dir / "follower.kubeconfig")}
    with (work / "serve.log").open("w") as log:
        serve = subprocess.Popen([*RAYON, "serve", "--state", "plan.db", "--tokens", "tokens.yaml", "--port", "0",
                                  "--clock", "wall", "--follow-to", "yunikorn-configmap", *options],
                                 cwd=work, env=env, stdout=log, stderr=log)
        try:
            yield serve
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()


def grant_follower(plane: ControlPlane) -> None:
    """The Role and RoleBinding docs/follower.md gives, bound to the user of follower.kubeconfig (cluster.sh)."""
    import kubernetes

    text = (Path(__file__).resolve().parents[3] / "docs" / "follower.md").read_text()
    block = next(b for b in re.findall(r"```text\n(.*?)```", text, re.S) if "kind: RoleBinding" in b)
    role, binding = yaml.safe_load_all(block)
    binding["subjects"] = [{"kind": "User", "name": "rayon-follower", "apiGroup": "rbac.authorization.k8s.io"}]
    rbac = kubernetes.client.RbacAuthorizationV1Api(plane.client().api_client)
    try:
        rbac.create_namespaced_role(role["metadata"]["namespace"], role)
        rbac.create_namespaced_role_binding(binding["metadata"]["namespace"], binding)
    except kubernetes.client.ApiException as error:
        if error.status != 409:  # granted already, by an earlier scenario of the session
            raise


def _since(start: datetime) -> float:
    return time.time() - start.timestamp()


def _watch(api: Any, outcome: Outcome, reservations: list[Reservation], start: datetime, until: float) -> None:
    names = {r.name: r for r in reservations}
    mine = {pod for r in reservations for pod in r.pod_names()}
    while True:
        t = _since(start)
        seen = queues_in(api)
        for name in names:
            first, gone = outcome.queue_seen.get(name, (None, None))
            if name in seen and first is None:
                outcome.queue_seen[name] = (t, None)
            # a gang when its queue's max admits the whole gang (YuniKorn rejects a gang application whose task
            # groups exceed its queue's max when it is submitted: docs/yunikorn.md, step 4); other pods at once
            wanted = names[name].pods * names[name].cpu if names[name].gang else 0
            if name in seen and name not in outcome.submitted and seen[name] >= wanted:
                submit(api, names[name])
                outcome.submitted[name] = _since(start)
            elif name not in seen and first is not None and gone is None:
                outcome.queue_seen[name] = (first, t)
        listed = api.list_namespaced_pod(JOBS).items
        jobs = [p for p in listed if p.metadata.name in mine]
        for item in listed:
            if item.metadata.name not in mine:  # YuniKorn's placeholders for a gang
                seen_before = outcome.placeholders.setdefault(item.metadata.name, {"node": None})
                seen_before["app"] = item.metadata.labels.get(APP_LABEL)
                seen_before["node"] = item.spec.node_name or seen_before["node"]
        running: dict[str, int] = defaultdict(int)
        for item in jobs:
            owner = item.metadata.labels.get(QUEUE_LABEL)
            if item.status.phase == "Running":
                running[owner] += 1
            for condition in item.status.conditions or []:
                if condition.type == "PodScheduled" and condition.status == "False":
                    reasons = outcome.pending_reasons.setdefault(item.metadata.name, [])
                    reason = f"{condition.reason}: {condition.message}"
                    if reason not in reasons:
                        reasons.append(reason)
        outcome.samples.append((t, _since(start), dict(running)))
        outcome.best_effort.append((t, _phases(api, BATCH).count("Running")))
        done = all(outcome.submitted.get(n) is not None for n in names) and jobs and all(
            p.status.phase in ("Succeeded", "Failed") for p in jobs) and len(jobs) == sum(r.pods for r in reservations)
        if done or t > until:
            return
        time.sleep(0.5)


def submit(api: Any, reservation: Reservation, namespace: str = JOBS) -> None:
    """The reservation's pods in `namespace`, labelled for its queue (docs/yunikorn.md, step 3), one application."""
    annotations = {RUN_FOR: f"{reservation.run_for}s"}
    if reservation.gang:
        group = {"name": "gang", "minMember": reservation.pods,
                 "minResource": {"cpu": str(reservation.cpu), "memory": f"{reservation.memory}Gi"}}
        annotations |= {"yunikorn.apache.org/task-group-name": "gang",
                        "yunikorn.apache.org/task-groups": json.dumps([group]),
                        "yunikorn.apache.org/schedulingPolicyParameters":
                            "placeholderTimeoutInSeconds=600 gangSchedulingStyle=Hard"}
    for name in reservation.pod_names():
        api.create_namespaced_pod(namespace, pod(name, namespace, str(reservation.cpu), f"{reservation.memory}Gi",
                                                 {APP_LABEL: f"{reservation.name}-job", QUEUE_LABEL: reservation.name},
                                                 annotations))


def _records(api: Any, outcome: Outcome, reservations: list[Reservation], start: datetime) -> None:
    """Each reservation pod's record (when it ran, where, the queue YuniKorn named), and the preemptions."""
    origin = start.timestamp()
    mine = {pod for r in reservations for pod in r.pod_names()}
    for item in api.list_namespaced_pod(JOBS).items:
        name = item.metadata.name
        if name not in mine:
            continue
        began = item.status.start_time.timestamp() - origin if item.status.start_time else None
        ended = None
        for status in item.status.container_statuses or []:
            if status.state.terminated is not None and status.state.terminated.finished_at is not None:
                ended = status.state.terminated.finished_at.timestamp() - origin
        events = api.list_namespaced_event(JOBS, field_selector=f"involvedObject.name={name}").items
        queues = {m.group(1) for e in events for m in [HELD.search(e.message or "")] if m}
        outcome.pods[name] = {"reservation": item.metadata.labels.get(QUEUE_LABEL), "phase": item.status.phase,
                              "node": item.spec.node_name, "started": began, "ended": ended,
                              "queues_named": sorted(queues), "events": [(e.reason, e.message) for e in events]}
    # YuniKorn deletes a victim at once; its "Preempted by ..." event is published only while the shim still
    # knows the pod, so some victims have none: a best-effort pod gone is one preempted
    there = {p.metadata.name for p in api.list_namespaced_pod(BATCH).items}
    outcome.gone = sorted(f"fill-{i}" for i in range(outcome.best_effort_count) if f"fill-{i}" not in there)
    for event in api.list_namespaced_event(BATCH).items:
        if (event.message or "").startswith("Preempted by"):
            outcome.preempted_by.append(event.message.rsplit(" in ", 1)[1])
