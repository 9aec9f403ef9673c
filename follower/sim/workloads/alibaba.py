"""Import the Alibaba GPU cluster trace (cluster-trace-gpu-v2023, "openb"): pods as jobs, nodes as the cluster.

A pod is one container (a driver, no executors) of `cpu_milli / 1000` vcores, `memory_mib`
MiB and `num_gpu × gpu_milli / 1000` GPUs. It is submitted at `creation_time` and runs from
`scheduled_time` to `deletion_time` (seconds); a pod never scheduled has no run time and is
skipped. The trace has no estimates (declared = actual, unless `estimate_sigma` draws a user's error) and no
users (the user is the QoS class). LS (latency-sensitive) and Guaranteed pods are production, BE and Burstable ones
best effort; both lists are parameters.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

from follower.sim.workloads.deadlines import Slack, job_random
from follower.sim.workloads.fields import duration, flag, nested, number, path, text, words
from follower.sim.workloads.job import BEST_EFFORT, NONE, PRODUCTION, Job, Workload
from follower.sim.workloads.report import ImportReport
from follower.sim.workloads.tracefile import Slice, csv_rows
from follower.sim.workloads.tracefile import number as parse_number
from rdl.nodes import NodeGroup
from rdl.tree import Resources

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "pod_phase", "creation_time",
               "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
MILLI = 1000.0


@dataclass(frozen=True, slots=True)
class AlibabaParams:
    """The pod and node files, the slice, which QoS classes are production, and the deadline recipe."""

    file: str = field(default="", metadata=path())
    nodes_file: str = field(default="", metadata=path())  # empty: no nodes from the trace
    slice: Slice = field(default=Slice(), metadata=nested(Slice))
    production_qos: tuple[str, ...] = field(default=("LS", "Guaranteed"), metadata=words())
    best_effort_qos: tuple[str, ...] = field(default=("BE", "Burstable"), metadata=words())
    slack: Slack = field(default=Slack(), metadata=nested(Slack))
    production_queue: str = field(default="production", metadata=text())
    best_effort_queue: str = field(default="default", metadata=text())
    strict: bool = field(default=False, metadata=flag())
    arrivals_within: float = field(default=math.inf, metadata=duration())  # the slice's arrivals, compressed into it
    node_share: float = field(default=1.0, metadata=number(minimum=0.0, maximum=1.0, strict=True))
    # A declared run time off by a log-normal factor exp(N(0, sigma)), as a user's estimate would be (0: exact).
    estimate_sigma: float = field(default=0.0, metadata=number(minimum=0.0))


def read_alibaba(params: AlibabaParams, seed: int, name: str = "alibaba") -> Workload:
    """The pods inside the slice as jobs, and the node file's nodes grouped by shape."""
    nodes = read_alibaba_nodes(params.nodes_file) if params.nodes_file else ()
    nodes = tuple(replace(group, count=max(1, round(group.count * params.node_share))) for group in nodes)
    report = ImportReport(params.file, strict=params.strict)
    rows = list(csv_rows(params.file, POD_COLUMNS, report))
    scale = _arrival_scale(rows, params)
    jobs = []
    for line, row in rows:
        job = _pod(row, line, params, nodes, seed, report, scale)
        if job is not None:
            jobs.append(job)
    report.kept = len(jobs)
    return Workload.of(name, jobs, nodes, report)


def _arrival_scale(rows: list[tuple[int, dict[str, str]]], params: AlibabaParams) -> float:
    """The factor on submission times that puts the slice's arrivals within `arrivals_within` (1: as they came)."""
    if math.isinf(params.arrivals_within):
        return 1.0
    span = params.slice.length
    if math.isinf(span):
        shifted = []
        for _, row in rows:
            try:
                shifted.append(params.slice.shift(parse_number(row["creation_time"], "creation_time")))
            except ValueError:
                continue  # reported when the pod is read
        span = max((s for s in shifted if s is not None), default=0.0) + 1.0
    return params.arrivals_within / span


def _resources(row: dict[str, str]) -> Resources:
    gpu = parse_number(row["num_gpu"], "num_gpu") * parse_number(row["gpu_milli"], "gpu_milli") / MILLI
    values = {"vcores": parse_number(row["cpu_milli"], "cpu_milli") / MILLI,
              "memory": parse_number(row["memory_mib"], "memory_mib"), "gpu": gpu}
    return Resources.of({k: v for k, v in values.items() if v > 0})


def _pod(row: dict[str, str], line: int, params: AlibabaParams, nodes: tuple[NodeGroup, ...], seed: int,
         report: ImportReport, scale: float = 1.0) -> Job | None:
    """One pod as a job; None (and a reported reason) when outside the slice, malformed or unusable."""
    try:
        created = parse_number(row["creation_time"], "creation_time")
        size = _resources(row)
        ran = (parse_number(row["deletion_time"], "deletion_time")
               - parse_number(row["scheduled_time"], "scheduled_time") if row["scheduled_time"] else None)
    except ValueError as exc:
        report.malformed(line, str(exc))
        return None
    qos = row["qos"]
    if qos not in params.production_qos + params.best_effort_qos:
        report.malformed(line, f"unknown qos: `{qos}`, expected one of "
                         + ", ".join(params.production_qos + params.best_effort_qos))
        return None
    submit = params.slice.shift(created)
    if submit is None:
        report.outside += 1
        return None
    submit *= scale
    problem = _unusable(ran, size, nodes, row["pod_phase"])
    if problem:
        report.unusable(line, problem)
        return None
    assert ran is not None
    production = qos in params.production_qos
    rng = job_random(seed, row["name"])
    declared = declared_time(ran, params.estimate_sigma, rng)
    return Job(id=row["name"], user=qos.lower(), submit=submit, kind=PRODUCTION if production else BEST_EFFORT,
               driver=size, executors=0, executor=NONE, runtime=ran, declared=declared,
               deadline=params.slack.deadline(submit, declared, rng) if production else None,
               queue=params.production_queue if production else params.best_effort_queue,
               tags=(("qos", qos), ("phase", row["pod_phase"])))


def declared_time(ran: float, sigma: float, rng: random.Random) -> float:
    """What a pod declares: its run time, or with `sigma` > 0 a whole number of seconds off by exp(N(0, sigma))
    (drawn from the job's own generator before its deadline, so that sigma 0 draws nothing and changes nothing)."""
    if sigma <= 0:
        return ran
    return float(max(1, math.ceil(ran * math.exp(rng.gauss(0.0, sigma)))))


def _unusable(ran: float | None, size: Resources, nodes: tuple[NodeGroup, ...], phase: str) -> str | None:
    if ran is None:
        return f"never scheduled: no run time (phase {phase})"
    if ran <= 0:
        return f"run time not positive: {ran:g}"
    if not size:
        return "requests no resources"
    if nodes and not any(all((group.size.get(k) or 0.0) >= v for k, v in size.items()) for group in nodes):
        return "fits no node"
    return None


def read_alibaba_nodes(file: str) -> tuple[NodeGroup, ...]:
    """The node file as groups of identical nodes, in order of first appearance (bad lines raise: nodes are few)."""
    report = ImportReport(file, strict=True)
    counts: dict[tuple[str, Resources], int] = {}
    for line, row in csv_rows(file, NODE_COLUMNS, report):
        try:
            size = Resources.of({k: v for k, v in (("vcores", parse_number(row["cpu_milli"], "cpu_milli") / MILLI),
                                                   ("memory", parse_number(row["memory_mib"], "memory_mib")),
                                                   ("gpu", parse_number(row["gpu"], "gpu"))) if v > 0})
        except ValueError as exc:
            report.malformed(line, str(exc))
            continue
        key = (row["model"], size)
        counts[key] = counts.get(key, 0) + 1
    return tuple(NodeGroup(_group_name(model, size), count, size) for (model, size), count in counts.items())


def _group_name(model: str, size: Resources) -> str:
    """`G2-8gpu-96c-384g`: model (or `cpu`), GPUs, vcores, GiB of memory: unique per shape."""
    gpus = size.get("gpu", 0.0) or 0.0
    memory = (size.get("memory", 0.0) or 0.0) / 1024
    parts = [model or "cpu"] + ([f"{gpus:g}gpu"] if gpus else []) + [f"{size.get('vcores', 0.0):g}c", f"{memory:g}g"]
    return "-".join(parts)
