"""The scenario file of `rayon simulate SCENARIO.yaml`: the cluster, the workload, the clock, the seed and defaults.

Top-level keys: `name`, `seed`, `start` (the wall-clock time of simulated time 0), `duration`, `checkpoint`,
`load`, `agent` (a baseline or a planning agent), `policy`, `cluster` (nodes, the plan's step and horizon,
failures, sharing policies), `workload` (exactly one of `synthetic`, `trace`, `uwfq`, `jobs`), and `scheduler` and
`follower`, handed as they are to the queue scheduler's and the plan follower's loaders. docs/workloads.md
documents every key with an example; `describe_keys` lists them.

Read through YAML's node graph (with the cluster file's reader), so that every error names
`FILE:LINE:COL`, says what was expected and suggests a fix for a mistyped key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from follower.scheduler.policies import APP_POLICIES
from follower.sim.baselines import BASELINES, sizing_params
from follower.sim.load import at_load
from follower.sim.workloads.alibaba import AlibabaParams, read_alibaba
from follower.sim.workloads.fields import choice, duration, flag, integer, number, resources, text
from follower.sim.workloads.google import GoogleParams, read_google
from follower.sim.workloads.job import BEST_EFFORT, KINDS, NONE, PRODUCTION, Job, Workload, node_names
from follower.sim.workloads.reader import BAD, Reader
from follower.sim.workloads.swf import SwfParams, read_swf
from follower.sim.workloads.synthetic import UWFQ_SCENARIOS, SyntheticParams, generate_synthetic
from planner.agents.registry import AGENTS, DEFAULT_AGENT
from rdl import units
from rdl.cluster import DEFAULT_STEP, Cluster, parse_cluster, positive_duration
from rdl.errors import did_you_mean
from rdl.nodes import NodeGroup, node_groups
from rdl.source import read_text

KEYS = ("name", "seed", "start", "duration", "checkpoint", "load", "agent", "policy", "cluster", "workload",
        "scheduler", "follower")
CLUSTER_KEYS = ("nodes", "step", "horizon", "failures", "policies")
WORKLOAD_KINDS = ("synthetic", "trace", "uwfq", "jobs")
TRACE_FORMATS: dict[str, tuple[type, Callable[..., Workload]]] = {
    "swf": (SwfParams, read_swf), "alibaba": (AlibabaParams, read_alibaba), "google": (GoogleParams, read_google),
}
POLICIES = tuple(APP_POLICIES)  # the queue scheduler's application policies, by name
DEFAULT_POLICY = "fair"
DEFAULT_START = datetime(2026, 11, 23, tzinfo=UTC)
DEFAULT_HORIZON = 7 * 86400
FROM_TRACE = "trace"
MAX_NODES = 100_000  # simulated nodes: each is an object the scheduler ranks (a production YARN cluster has ~10k)


def agent_names() -> tuple[str, ...]:
    """The baselines (`none`, `priority`, `capacity`, the `static` oracles), then every planning agent."""
    return (*BASELINES, *AGENTS)


@dataclass(frozen=True, slots=True)
class Failure:
    """One planned failure: `node` goes down `at` seconds after the start and returns `repair` seconds later."""

    node: str = field(default="", metadata=text())
    at: float = field(default=0.0, metadata=duration())
    repair: float = field(default=3600.0, metadata=duration())


@dataclass(frozen=True, slots=True)
class Failures:
    """Random failures (`rate` per node per day, each repaired after `repair` seconds) and planned ones."""

    rate: float = field(default=0.0, metadata=number(minimum=0.0))
    repair: float = field(default=3600.0, metadata=duration())
    events: tuple[Failure, ...] = ()


@dataclass(frozen=True)
class ClusterSpec:
    """The nodes (None: those the trace implies), the plan's step and horizon, failures, sharing policies."""

    nodes: tuple[NodeGroup, ...] | None
    step: int = DEFAULT_STEP
    horizon: int = DEFAULT_HORIZON
    failures: Failures = Failures()
    policies: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadSpec:
    """Which workload: `kind` (synthetic | trace | uwfq | jobs), its variant (trace format, UWFQ scenario), params."""

    kind: str
    variant: str | None
    params: Any  # the parameter dataclass; for `jobs`, the tuple of jobs


@dataclass(frozen=True)
class Section:
    """A section for another loader: its plain data, and its YAML node and file so errors can name positions."""

    data: Mapping[str, Any]
    node: yaml.Node | None = field(default=None, compare=False, repr=False)
    file: str = "<scenario>"


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario file: everything `rayon simulate` needs except the jobs themselves (`load_workload`)."""

    name: str
    file: str
    seed: int
    start: datetime
    duration: float | None
    agent: str
    policy: str
    cluster: ClusterSpec
    workload: WorkloadSpec
    scheduler: Section = Section({})
    follower: Section = Section({})
    checkpoint: float | None = None  # seconds between a job's saved states; None: nothing is saved
    load: float = 1.0  # arrivals this many times as fast as the workload gives them (follower.sim.load)

    def load_workload(self) -> Workload:
        """The jobs (generated or imported) with the scenario's seed, at its load; importers may raise TraceError or
        ValueError."""
        return at_load(self._jobs(), self.load)

    def _jobs(self) -> Workload:
        spec = self.workload
        if spec.kind == "jobs":
            return Workload.of(self.name, spec.params)
        if spec.kind == "synthetic":
            return generate_synthetic(spec.params, self.seed, self.name)
        table: Mapping[str, tuple[type, Callable[..., Workload]]] = UWFQ_SCENARIOS if spec.kind == "uwfq" \
            else TRACE_FORMATS
        return table[spec.variant or ""][1](spec.params, self.seed, self.name)

    def sizing_workload(self) -> Workload:
        """Another window of the same workload, on which the `capacity` baseline sizes its production queue."""
        params, seed = sizing_params(self.workload.params, self.seed)
        return replace(self, workload=replace(self.workload, params=params), seed=seed).load_workload()

    def node_groups(self, workload: Workload) -> tuple[NodeGroup, ...]:
        """The scenario's nodes, or those the workload's trace implies (`nodes: trace`)."""
        if self.cluster.nodes is not None:
            return self.cluster.nodes
        if not workload.nodes:
            raise ValueError(f"{self.file}: `nodes: trace`, but workload `{workload.name}` implies no nodes")
        return workload.nodes

    def cluster_yaml(self, workload: Workload) -> str:
        """The planner's cluster file for this scenario (`Store.init`, `Planner(parse_cluster(...))`)."""
        lines = [f"# The plan's cluster for scenario `{self.name}`.", f"start: {units.format_instant(self.start)}",
                 f"step: {units.format_duration(self.cluster.step)}",
                 f"horizon: {units.format_duration(self.cluster.horizon)}", "nodes:"]
        for group in self.node_groups(workload):
            size = ", ".join(f"{name}: {units.format_quantity(name, value)}" for name, value in group.size.items())
            lines.append(f"  - {{name: {json.dumps(group.name)}, count: {group.count}, {size}}}")
        if self.cluster.policies:
            lines.append(yaml.safe_dump({"policies": dict(self.cluster.policies)}, sort_keys=False).rstrip())
        return "\n".join(lines) + "\n"

    def plan_cluster(self, workload: Workload) -> Cluster:
        """The planner's cluster, parsed from `cluster_yaml`."""
        return parse_cluster(self.cluster_yaml(workload), f"{self.file}#cluster")

    def with_options(self, agent: str | None = None, policy: str | None = None, seed: int | None = None,
                     policies: tuple[str, ...] = POLICIES, load: float | None = None) -> Scenario:
        """The same scenario with command-line overrides; an unknown name raises ValueError with a "did you mean"."""
        for name, options, what in ((agent, agent_names(), "agent"), (policy, policies, "policy")):
            if name is not None and name not in options:
                raise ValueError(f"unknown {what} `{name}`: " + _choice_message(name, options))
        if load is not None and not (math.isfinite(load) and load > 0):
            raise ValueError(f"a load factor must be a positive number, got {load}")
        return replace(self, agent=agent or self.agent, policy=policy or self.policy,
                       seed=self.seed if seed is None else seed, load=self.load if load is None else load)


def _choice_message(name: str, options: tuple[str, ...]) -> str:
    hint = did_you_mean(name, options)
    return f"choose one of {', '.join(options)}" + (f" ({hint})" if hint else "")


def _choice(text: str, options: tuple[str, ...]) -> str:
    if text not in options:
        raise ValueError(f"unknown `{text}`: " + _choice_message(text, options))
    return text


def _checkpoint(text: str) -> float | None:
    """`none`, or how often jobs save their work (a positive duration)."""
    return None if text == "none" else positive_duration(text)


def load_factor(text: str) -> float:
    """A load factor: a positive number (arrivals that many times as fast); ValueError otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"expected a positive number such as `1.5`, got `{text}`")
    return value


def _seed(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"expected a whole number of 0 or more, got `{text}`")
    return int(text)


def load_scenario(path: str | Path, policies: tuple[str, ...] = POLICIES, trace: str | Path | None = None) -> Scenario:
    """Read and check a scenario file; raises RDLErrors naming every problem with `FILE:LINE:COL`.

    `trace` replaces the workload's trace `file` (another copy, or a larger file of the same format)."""
    path = Path(path)
    return parse_scenario(read_text(path), str(path), path.parent, policies, trace)


def parse_scenario(text: str, file: str = "<scenario>", folder: Path | None = None,
                   policies: tuple[str, ...] = POLICIES, trace: str | Path | None = None) -> Scenario:
    """Parse a scenario's text; trace files are found relative to `folder` (default: the current one), or `trace`."""
    reader = Reader(file, folder or Path.cwd())
    reader.trace = None if trace is None else Path(trace)
    root = reader.compose(text, "the scenario file", "`cluster` and `workload`")
    entries = reader.mapping(root, "the scenario") if root is not None else {}
    for name, (key, _) in entries.items():
        if name not in KEYS:
            reader.unknown(key, name, KEYS, "the scenario")
    if root is not None:
        reader.required(entries, ("cluster", "workload"), root, "a scenario")

    def get(key: str, parse: Callable[[str], object], default: object) -> Any:
        return reader.scalar(entries[key][1], parse, f"`{key}`") if key in entries else default

    start = reader.time(entries["start"][1], None, "`start`") if "start" in entries else DEFAULT_START
    values: dict[str, Any] = {
        "seed": get("seed", _seed, 0),
        "duration": get("duration", positive_duration, None),
        "checkpoint": get("checkpoint", _checkpoint, None),
        "load": get("load", load_factor, 1.0),
        "agent": get("agent", lambda t: _choice(t, agent_names()), DEFAULT_AGENT),
        "policy": get("policy", lambda t: _choice(t, policies), DEFAULT_POLICY),
        "name": get("name", str, Path(file).name.split(".")[0]),
    }
    cluster = _cluster(reader, entries["cluster"][1]) if "cluster" in entries else None
    step = cluster.step if cluster is not None else DEFAULT_STEP
    workload = _workload(reader, entries["workload"][1], step) if "workload" in entries else None
    sections: dict[str, Any] = {key: _section(reader, entries, key) for key in ("scheduler", "follower")}
    _cross_check(reader, entries, cluster, workload)
    reader.sink.raise_if_any({file: text})
    assert cluster is not None and workload is not None and isinstance(start, datetime)
    return Scenario(file=file, start=start, cluster=cluster, workload=workload, **values, **sections)


def _section(reader: Reader, entries: dict[str, tuple[yaml.Node, yaml.Node]], key: str) -> Section:
    if key not in entries:
        return Section({}, None, reader.file)
    return Section(reader.plain(entries[key][1], f"`{key}`"), entries[key][1], reader.file)


def _cluster(reader: Reader, node: yaml.Node) -> ClusterSpec | None:
    entries = reader.mapping(node, "`cluster`")
    for name, (key, _) in entries.items():
        if name not in CLUSTER_KEYS:
            reader.unknown(key, name, CLUSTER_KEYS, "`cluster`")
    nodes: tuple[NodeGroup, ...] | None = ()
    if reader.required(entries, ("nodes",), node, "`cluster`"):
        value = entries["nodes"][1]
        from_trace = isinstance(value, yaml.ScalarNode) and value.value == FROM_TRACE
        nodes = None if from_trace else node_groups(reader, value)
        if nodes and sum(group.count for group in nodes) > MAX_NODES:
            reader.sink.add(reader.span(value), f"the cluster has {sum(g.count for g in nodes):,} nodes; at most "
                            f"{MAX_NODES:,} are simulated", hint="simulate a smaller cluster with the same shape")
            nodes = None
        reader.nodes = nodes or ()  # container sizes in the workload are checked against them
    step = reader.scalar(entries["step"][1], _whole_seconds, "`step`") if "step" in entries else DEFAULT_STEP
    horizon = reader.scalar(entries["horizon"][1], _whole_seconds, "`horizon`") if "horizon" in entries \
        else DEFAULT_HORIZON
    failures = _failures(reader, entries["failures"][1], nodes) if "failures" in entries else Failures()
    policies = reader.plain(entries["policies"][1], "`policies`") if "policies" in entries else {}
    if not isinstance(step, int) or not isinstance(horizon, int) or failures is BAD:
        return None
    if horizon < step:
        reader.sink.add(reader.span(entries["horizon"][1]), "`horizon` must be at least one step")
    return ClusterSpec(nodes, step, horizon, failures, policies)


def _whole_seconds(text: str) -> int:
    seconds = units.parse_duration(text)
    if seconds <= 0 or seconds != int(seconds):
        raise ValueError(f"expected a positive whole number of seconds, got `{text}`")
    return int(seconds)


def _failures(reader: Reader, node: yaml.Node, nodes: tuple[NodeGroup, ...] | None) -> Any:
    failures = reader.params(node, Failures, "`failures`", skip=("events",))
    entries = reader.mapping(node, "`failures`")
    if "events" not in entries or failures is BAD:
        return failures
    value = entries["events"][1]
    if not isinstance(value, yaml.SequenceNode):
        reader.sink.add(reader.span(value), "`events` must be a list of `{node, at, repair}`")
        return BAD
    known = sorted(name for name, _ in node_names(nodes or ()))
    events: list[Any] = []
    for item in value.value:
        event: Any = BAD
        if reader.required(reader.mapping(item, "a failure"), ("node", "at"), item, "a failure"):
            event = reader.params(item, Failure, "a failure")
        if event is not BAD and nodes and event.node not in known:
            reader.sink.add(reader.span(reader.mapping(item, "a failure")["node"][1]),
                            f"a failure of node `{event.node}`, which the cluster does not have",
                            expected=f"a node name such as `{known[0]}`", hint=did_you_mean(event.node, known))
            event = BAD
        events.append(event)
    return BAD if BAD in events else replace(failures, events=tuple(events))


def _workload(reader: Reader, node: yaml.Node, step: int) -> WorkloadSpec | None:
    entries = reader.mapping(node, "`workload`")
    for name, (key, _) in entries.items():
        if name not in WORKLOAD_KINDS:
            reader.unknown(key, name, WORKLOAD_KINDS, "`workload`")
    kinds = [name for name in entries if name in WORKLOAD_KINDS]
    if len(kinds) != 1:
        reader.sink.add(reader.span(node), "`workload` takes exactly one of " + ", ".join(WORKLOAD_KINDS)
                        + (f", got {', '.join(kinds)}" if kinds else ""))
        return None
    kind, value = kinds[0], entries[kinds[0]][1]
    if reader.trace is not None and kind != "trace":
        reader.sink.add(reader.span(entries[kind][0]), f"a trace file was given, but `workload.{kind}` reads none")
        return None
    variant: str | None = None
    params: Any = BAD
    if kind == "synthetic":
        params = reader.params(value, SyntheticParams, "`workload.synthetic`")
    elif kind == "jobs":
        params = _jobs(reader, value)
    elif kind == "trace":
        variant, params = _variant(reader, value, kind, "format", TRACE_FORMATS)
    else:
        variant, params = _variant(reader, value, kind, "scenario", UWFQ_SCENARIOS)
    if params is BAD:
        return None
    slack = getattr(params, "slack", None)
    if slack is not None and slack.floor is None:  # two plan steps: the window still holds the lease once rounded
        params = replace(params, slack=replace(slack, floor=2.0 * step))
    return WorkloadSpec(kind, variant, params)


def _variant(reader: Reader, node: yaml.Node, kind: str, key: str,
             table: Mapping[str, tuple[type, Callable[..., Workload]]]) -> tuple[str | None, Any]:
    """A trace's `format` or a UWFQ `scenario`, then the parameters of that variant."""
    what = f"`workload.{kind}`"
    entries = reader.mapping(node, what)
    if not reader.required(entries, (key,), node, what):
        return None, BAD
    variant = reader.scalar(entries[key][1], reader.parser(choice(*table)) or str, f"`{key}`")
    if not isinstance(variant, str):
        return None, BAD
    cls = table[variant][0]
    if kind == "trace" and reader.trace is not None:  # the trace given on the command line replaces `file`
        params = reader.params(node, cls, f"{what} ({variant})", skip=(key, "file"))
        return variant, params if params is BAD else replace(params, file=str(reader.trace.resolve()))
    if kind == "trace" and not reader.required(entries, ("file",), node, what):
        return variant, BAD
    return variant, reader.params(node, cls, f"{what} ({variant})", skip=(key,))


JOB_FIELDS: dict[str, dict[str, Any]] = {
    "id": text(), "user": text(), "submit": duration(), "kind": choice(*KINDS), "driver": resources(),
    "executors": integer(minimum=0), "executor": resources(), "runtime": duration(), "declared": duration(),
    "deadline": duration(), "queue": text(), "gang": flag(),
}


def _jobs(reader: Reader, node: yaml.Node) -> Any:
    """An explicit list of jobs (for small scenarios whose every event time is known)."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        reader.sink.add(reader.span(node), "`jobs` must be a list of jobs `{id, submit, runtime, ...}`")
        return BAD
    jobs, seen = [], set()
    for item in node.value:
        job = _job(reader, item)
        if job is not BAD and job.id in seen:
            reader.sink.add(reader.span(item), f"job id `{job.id}` is used twice")
            job = BAD
        if job is not BAD:
            seen.add(job.id)
        jobs.append(job)
    return BAD if BAD in jobs else tuple(jobs)


def _job(reader: Reader, node: yaml.Node) -> Any:
    entries = reader.mapping(node, "a job")
    values: dict[str, Any] = {}
    for name, (key, value) in entries.items():
        if name not in JOB_FIELDS:
            reader.unknown(key, name, list(JOB_FIELDS), "a job")
            values[name] = BAD
        else:
            values[name] = reader.value(value, JOB_FIELDS[name], f"`{name}` of a job")
    if not reader.required(entries, ("id", "submit", "runtime"), node, "a job") or BAD in values.values():
        return BAD
    kind = values.setdefault("kind", BEST_EFFORT)
    values.setdefault("user", "user")
    values.setdefault("queue", "production" if kind == PRODUCTION else "default")
    values.setdefault("declared", values["runtime"])
    values.setdefault("driver", NONE)
    values.setdefault("executor", NONE)
    values.setdefault("executors", 0)
    return reader.build(node, Job, values, "")


def _cross_check(reader: Reader, entries: dict[str, Any], cluster: ClusterSpec | None,
                 workload: WorkloadSpec | None) -> None:
    """What one section says about another: `nodes: trace` needs a trace that implies nodes."""
    if cluster is None or cluster.nodes is not None or workload is None:
        return
    implies = workload.variant == "swf" or (workload.variant == "alibaba" and workload.params.nodes_file)
    if workload.kind != "trace" or not implies:
        node = reader.mapping(entries["cluster"][1], "`cluster`")["nodes"][1]
        reader.sink.add(reader.span(node), "`nodes: trace` needs a trace that implies nodes (swf, or alibaba with "
                        "`nodes_file`)", hint="list the nodes: `nodes: [{name: worker, count: 8, vcores: 4, ...}]`")


def describe_keys() -> dict[str, tuple[str, ...]]:
    """Every key a scenario section accepts (for documentation and tests)."""
    table: dict[str, tuple[str, ...]] = {"scenario": KEYS, "cluster": CLUSTER_KEYS, "workload": WORKLOAD_KINDS,
                                         "failures": ("rate", "repair", "events"),
                                         "failure event": tuple(f.name for f in fields(Failure)),
                                         "job": tuple(JOB_FIELDS)}
    table["synthetic"] = tuple(f.name for f in fields(SyntheticParams))
    for name, (cls, _) in {**TRACE_FORMATS, **UWFQ_SCENARIOS}.items():
        table[name] = tuple(f.name for f in fields(cls))
    return table
