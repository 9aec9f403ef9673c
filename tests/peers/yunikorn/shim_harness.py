"""One scenario, two schedulers: the real yunikorn-core (the Go shim in `shim/`) and ours (`follower.scheduler`).

A `Scenario` is neutral and in plan units (memory in MiB, `vcores`, times in scenario seconds): the nodes, the queues
outside the plan queue (a subset of our `scheduler:` mapping: `guaranteed`, `max`, `policy`, `queues`), the
follower's rounds at their change points, and the applications with their queue, submit time and tasks (one
container each, with a duration). `run_core` writes it as YuniKorn sees it (one `queues.yaml` per change point, made
by `follower.follow.yunikorn.document`, bytes and millicores) and plays it through the shim; `run_ours` plays it
through our scheduler with the same follower rounds applied by `Follower.apply`. Both answer the same `Trace`.

The core reads the wall clock: the shim runs the scenario in real time times `scale` (real seconds per scenario
second), and the documents carry the preemption delay scaled the same way (`preemption.delay` on every leaf); the
stateaware starting timeout, the preemption retry and the reservation delay, constants of the core, are scaled by
the shim.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from follower.follow import yunikorn
from follower.follow.follower import Follower
from follower.follow.rounds import Round
from follower.scheduler import Scheduler
from follower.scheduler.applications import AppState
from tests.peers.yunikorn.validator import go_build

SHIM_DIR = Path(__file__).resolve().parent / "shim"
# yunikorn-core release -> its module file and build tag: 1.4.0 is the oldest the proxy serves and still has stateaware,
# 1.9.0 the newest (since 1.6 an ask is an si.Allocation: core19.go)
MODULE_FILES = {"1.4.0": ("go.mod", None), "1.9.0": ("core-1.9.0.mod", "core19")}
CORE, NEWEST = "1.4.0", "1.9.0"
EPSILON = 1e-6


@dataclass(frozen=True)
class Task:
    """One container an application asks for at `time`, running `duration` scenario seconds once allocated."""

    key: str
    time: float
    resources: Mapping[str, float]
    duration: float
    priority: int = 0


@dataclass(frozen=True)
class App:
    """An application: its queue (a full path), when it is submitted, its tasks."""

    id: str
    queue: str
    submit: float
    tasks: tuple[Task, ...]
    user: str = "u"
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """What both schedulers are given; `rounds` are the follower's, each with its scenario time."""

    nodes: Mapping[str, Mapping[str, float]]
    queues: Mapping[str, Any]  # children of root outside the plan queue, as in our `scheduler:` mapping
    rounds: tuple[tuple[float, Round], ...]
    apps: tuple[App, ...]
    end: float
    sort_policy: str = "fifo"
    preemption_delay: float = 30.0
    starting_timeout: float = 300.0
    preempt_retry: float = 15.0  # the core's pause before an ask that failed to preempt tries again (ours: none)
    reservation_delay: float = 2.0  # how long an ask waits before the core reserves a node for it (ours: none)
    scale: float = 0.02


@dataclass
class Trace:
    """What a scheduler did: allocations, releases, preemptions and application states, in scenario time order."""

    allocations: list[tuple[float, str, str, str]] = field(default_factory=list)  # (t, app, task, container id)
    releases: list[tuple[float, str, str]] = field(default_factory=list)  # (t, app, container id): task ended
    preemptions: list[tuple[float, str, str]] = field(default_factory=list)  # (t, app, container id)
    states: list[tuple[float, str, str]] = field(default_factory=list)  # (t, app, state)
    core: str | None = None  # the yunikorn-core release that ran it (None: ours)

    def order(self) -> list[tuple[str, str]]:
        """(application, task) of every allocation, in the order made."""
        return [(app, task) for _, app, task, _ in self.allocations]

    def usage(self, scenario: Scenario) -> list[tuple[float, dict[str, dict[str, float]]]]:
        """Each queue's use after every change, in plan units: [(t, {queue: resources})]."""
        queue_of = {app.id: app.queue for app in scenario.apps}
        size = {(app.id, task.key): task.resources for app in scenario.apps for task in app.tasks}
        held: dict[str, tuple[str, Mapping[str, float]]] = {}
        changes = sorted([(t, 1, app, cid, task) for t, app, task, cid in self.allocations]
                         + [(t, 0, app, cid, "") for t, app, cid in self.releases + self.preemptions])
        used: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        out = []
        for t, kind, app, cid, task in changes:
            if kind == 1:
                held[cid] = (queue_of[app], size[(app, task)])
                sign = 1.0
            elif cid in held:
                sign = -1.0
            else:
                continue
            queue, resources = held[cid] if sign > 0 else held.pop(cid)
            for name, value in resources.items():
                used[queue][name] += sign * value
            out.append((t, {q: dict(r) for q, r in used.items()}))
        return out


# ---- the real core ----------------------------------------------------------------------------------------------


def build(version: str = CORE) -> Path:
    """The shim built against yunikorn-core `version` (once per change of its sources)."""
    module, tag = MODULE_FILES[version]
    sources = tuple(path.name for path in sorted(SHIM_DIR.glob("*.go")))
    return go_build(SHIM_DIR, "shim", version, sources, tag, module)


def core_scenario(scenario: Scenario) -> dict[str, Any]:
    """The scenario as the shim reads it: YuniKorn's resource names and units, one document per change point."""
    base = _base(scenario)
    return {
        "scale": scenario.scale, "starting_timeout": scenario.starting_timeout,
        "preempt_retry": scenario.preempt_retry, "reservation_delay": scenario.reservation_delay, "end": scenario.end,
        "nodes": [{"id": name, "resources": _core_resources(resources)} for name, resources in scenario.nodes.items()],
        "configs": [{"time": t, "yaml": _with_delay(yunikorn.document(round, base, sort_policy=scenario.sort_policy),
                                                    scenario)} for t, round in scenario.rounds],
        "applications": [{"id": app.id, "queue": app.queue, "user": app.user, "submit": app.submit,
                          "tags": dict(app.tags),
                          "asks": [{"key": task.key, "time": task.time, "resources": _core_resources(task.resources),
                                    "duration": task.duration, "priority": task.priority} for task in app.tasks]}
                         for app in scenario.apps],
    }


def run_core(scenario: Scenario, version: str = CORE) -> Trace:
    """The scenario played through the real yunikorn-core."""
    binary = build(version)
    done = subprocess.run([str(binary)], input=json.dumps(core_scenario(scenario)), capture_output=True, text=True,
                          timeout=scenario.end * scenario.scale + 120)
    if done.returncode != 0:
        raise RuntimeError(f"the YuniKorn shim failed: {done.stderr.strip()[-1200:]}")
    trace = Trace()
    for record in map(json.loads, done.stdout.splitlines()):
        event, t = record["event"], record["t"]
        if event == "config" and not record["ok"]:
            raise RuntimeError(f"YuniKorn refused the document of {record['at']}s: {record['error']}")
        if event == "allocation":
            trace.allocations.append((t, record["app"], record["ask"], record["id"]))
        elif event == "release":
            trace.releases.append((t, record["app"], record["id"]))
        elif event == "preemption":
            trace.preemptions.append((t, record["app"], record["id"]))
        elif event == "state":
            trace.states.append((t, record["app"], record["state"]))
        elif event == "config" and "core" in record:
            trace.core = record["core"]
    return trace


def _core_resources(resources: Mapping[str, float]) -> dict[str, int]:
    """Plan units as the scheduler interface carries them: memory in bytes, vcore in millicores, counts as is."""
    out = {}
    for name, value in resources.items():
        if name == "memory":
            out[name] = round(value * 1024 * 1024)
        elif name == "vcores":
            out["vcore"] = round(value * 1000)
        else:
            out[name] = round(value)
    return out


def _base(scenario: Scenario) -> dict[str, Any]:
    """The cluster's own `queues.yaml`: the queues outside the plan, preemption on."""
    queues = [_core_queue(name, spec) for name, spec in scenario.queues.items()]
    return {"partitions": [{"name": "default", "preemption": {"enabled": True},
                            "queues": [{"name": "root", "submitacl": "*", "queues": queues}]}]}


def _with_delay(document: str, scenario: Scenario) -> str:
    """The document with the scaled preemption delay on every leaf: 1.4 reads `preemption.delay` on leaves only, and
    a leaf created by a later document did not take it from its parents here."""
    delay = f"{max(scenario.preemption_delay * scenario.scale, 0.001):.3f}s"
    config = yaml.safe_load(document)

    def walk(queue: dict[str, Any]) -> None:
        children = queue.get("queues") or []
        if not children and queue["name"] != "root":
            queue.setdefault("properties", {})["preemption.delay"] = delay
        for child in children:
            walk(child)

    for partition in config["partitions"]:
        for queue in partition["queues"]:
            walk(queue)
    return str(yaml.safe_dump(config, sort_keys=False))


def _core_queue(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    queue: dict[str, Any] = {"name": name}
    resources = {key: yunikorn.quantities(spec[ours]) for ours, key in (("guaranteed", "guaranteed"), ("max", "max"))
                 if ours in spec}
    if resources:
        queue["resources"] = resources
    if "policy" in spec:
        queue["properties"] = {yunikorn.SORT_POLICY: spec["policy"]}
    if "queues" in spec:
        queue["parent"] = True
        queue["queues"] = [_core_queue(child, sub) for child, sub in spec["queues"].items()]
    return queue


# ---- ours -------------------------------------------------------------------------------------------------------


def our_config(scenario: Scenario, plan_queue: str = "root.plan") -> dict[str, Any]:
    """Our `scheduler:` mapping for the scenario: its queues, the plan queue's leaves on its sort policy."""
    return {"queues": {**scenario.queues,
                       plan_queue.split(".")[1]: {"parent": True, "child_template": {"policy": scenario.sort_policy}}},
            "plan_queue": plan_queue, "preemption": {"enabled": True, "delay": scenario.preemption_delay},
            "stateaware": {"starting_timeout": scenario.starting_timeout}}


def run_ours(scenario: Scenario, follower: Follower | None = None) -> Trace:
    """The scenario played through our scheduler, the follower applying each round at its time."""
    follower = follower or Follower()
    scheduler = Scheduler(our_config(scenario, follower.plan_queue))
    for name, resources in scenario.nodes.items():
        scheduler.add_node(name, resources, 0.0)
    trace = Trace()
    pending: list[tuple[float, int, int, Any]] = []  # (time, kind, seq, payload), kinds as the shim orders them
    for t, round in scenario.rounds:
        pending.append((t, 0, len(pending), round))
    for app in scenario.apps:
        pending.append((app.submit, 1, len(pending), app))
        pending.extend((task.time, 2, len(pending), (app.id, task)) for task in app.tasks)
    duration = {(app.id, task.key): task.duration for app in scenario.apps for task in app.tasks}
    states: dict[str, AppState] = {}
    now = 0.0
    while now <= scenario.end:
        pending.sort(key=lambda e: e[:3])
        while pending and pending[0][0] <= now + EPSILON:
            _, kind, _, payload = pending.pop(0)
            _apply(scheduler, follower, kind, payload, now, trace)
        _note_states(scheduler, states, now, trace)
        for p in scheduler.preempt(now):
            trace.preemptions.append((now, p.app_id, p.container_id))
        for a in scheduler.schedule(now):
            trace.allocations.append((now, a.app_id, a.ask_id, a.container_id))
            pending.append((now + duration[(a.app_id, a.ask_id)], 3, len(pending), a))
        _note_states(scheduler, states, now, trace)
        times = [e[0] for e in pending]
        if (due := scheduler.next_event_time()) is not None:
            times.append(due)
        if not times:
            break
        now = max(min(times), now + EPSILON)
    return trace


def _apply(scheduler: Scheduler, follower: Follower, kind: int, payload: Any, now: float, trace: Trace) -> None:
    scheduler.advance(now)
    if kind == 0:
        follower.apply(payload, scheduler)
    elif kind == 1:
        scheduler.submit(payload.id, payload.user, now, queue=payload.queue, tags=payload.tags)
    elif kind == 2:
        app_id, task = payload
        scheduler.add_ask(app_id, task.key, task.resources, now, priority=task.priority)
    elif payload.container_id in scheduler.containers:  # a task ends (unless preempted before)
        scheduler.release(payload.container_id, now)
        trace.releases.append((now, payload.app_id, payload.container_id))


def _note_states(scheduler: Scheduler, states: dict[str, AppState], now: float, trace: Trace) -> None:
    for app_id, app in scheduler.apps.items():
        if states.get(app_id) is not app.state:
            states[app_id] = app.state
            trace.states.append((now, app_id, app.state.value))


def guaranteed_reached(trace: Trace, scenario: Scenario, queue: str, guaranteed: Mapping[str, float],
                       since: float) -> float | None:
    """When, after `since`, `queue` first held at least `guaranteed` of every resource (None: never)."""
    for t, used in trace.usage(scenario):
        if t >= since - EPSILON and all(used.get(queue, {}).get(k, 0.0) >= v - EPSILON for k, v in guaranteed.items()):
            return t
    return None


def over_max(trace: Trace, scenario: Scenario, maxima: Sequence[tuple[float, float, str, Mapping[str, float]]]
             ) -> list[tuple[float, str, dict[str, float]]]:
    """Every moment a queue held more than its max: maxima are (from, until, queue, max)."""
    out = []
    for t, used in trace.usage(scenario):
        for lo, hi, queue, limit in maxima:
            held = used.get(queue, {})
            if lo - EPSILON <= t < hi and any(held.get(k, 0.0) > v + EPSILON for k, v in limit.items()):
                out.append((t, queue, dict(held)))
    return out
