"""Import Standard Workload Format logs (Parallel Workloads Archive): RICC, NASA iPSC/860, any SWF file.

One data line is one job; its processors become containers of one vcore each: the first
hosts the driver, the others are executors. The header (`;` lines) gives the machine:
`MaxNodes` nodes of `MaxProcs / MaxNodes` vcores. Field 4 is the actual run time, field 9
the requested (declared) wall time; `-1` marks a missing value. The unit mapping is in
docs/workloads.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from follower.sim.workloads.deadlines import ProductionRule, Slack, job_random
from follower.sim.workloads.fields import flag, memory, nested, path, text
from follower.sim.workloads.job import BEST_EFFORT, PRODUCTION, Job, Workload
from follower.sim.workloads.report import ImportReport
from follower.sim.workloads.tracefile import Slice, number, open_text
from rdl.nodes import NodeGroup
from rdl.tree import Resources

FIELDS = 18
MISSING = -1
KIB_PER_MIB = 1024.0
_HEADER = re.compile(r"^;\s*([A-Za-z]+):\s*(.*?)\s*$")


@dataclass(frozen=True, slots=True)
class SwfParams:
    """Which file, which slice of its clock, which jobs are production, their deadlines, and the memory model."""

    file: str = field(default="", metadata=path())
    slice: Slice = field(default=Slice(), metadata=nested(Slice))
    production: ProductionRule = field(default=ProductionRule(fraction=0.2), metadata=nested(ProductionRule))
    slack: Slack = field(default=Slack(), metadata=nested(Slack))
    default_memory: float = field(default=1024.0, metadata=memory())  # MiB per processor when field 10 is missing
    node_memory: float | None = field(default=None, metadata=memory())  # default: vcores per node × default_memory
    production_queue: str = field(default="production", metadata=text())
    best_effort_queue: str = field(default="default", metadata=text())
    strict: bool = field(default=False, metadata=flag())


@dataclass(frozen=True, slots=True)
class _Machine:
    """What the header says about the machine, and what each processor container may hold."""

    nodes: int | None
    vcores_per_node: float
    node_memory: float

    def groups(self) -> tuple[NodeGroup, ...]:
        if self.nodes is None:
            return ()
        return (NodeGroup("node", self.nodes, Resources.of({"memory": self.node_memory,
                                                            "vcores": self.vcores_per_node})),)


def read_swf(params: SwfParams, seed: int, name: str | None = None) -> Workload:
    """The jobs of an SWF file inside the slice, with the report of every skipped line."""
    report = ImportReport(params.file, strict=params.strict)
    header: dict[str, str] = {}
    jobs: list[Job] = []
    machine: _Machine | None = None
    with open_text(params.file) as stream:
        for line_number, line in enumerate(stream, start=1):
            if line.startswith(";"):
                match = _HEADER.match(line)
                if match:
                    header.setdefault(match.group(1), match.group(2))
                continue
            if not line.strip():
                continue
            report.read += 1
            machine = machine or _machine(header, params)
            job = _job(line, line_number, params, machine, seed, report)
            if job is not None:
                jobs.append(job)
    report.kept = len(jobs)
    machine = machine or _machine(header, params)
    return Workload.of(name or Path(params.file).name.split(".")[0], jobs, machine.groups(), report)


def _machine(header: dict[str, str], params: SwfParams) -> _Machine:
    nodes = _header_int(header, "MaxNodes")
    procs = _header_int(header, "MaxProcs")
    per_node = procs / nodes if nodes and procs else 1.0
    node_memory = params.node_memory if params.node_memory is not None else per_node * params.default_memory
    return _Machine(nodes, per_node, node_memory)


def _header_int(header: dict[str, str], key: str) -> int | None:
    try:
        value = int(header.get(key, "").split()[0])
    except (ValueError, IndexError):
        return None
    return value if value > 0 else None


def _job(line: str, line_number: int, params: SwfParams, machine: _Machine, seed: int,
         report: ImportReport) -> Job | None:
    """One line as a job; None (and a reported reason) when it is outside the slice, malformed or unusable."""
    fields = line.split()
    if len(fields) != FIELDS:
        report.malformed(line_number, f"wrong field count: {len(fields)} fields, SWF has {FIELDS}")
        return None
    try:
        submitted = number(fields[1], "field 2 (submit time)")
        if submitted >= 0 and params.slice.shift(submitted) is None:
            report.outside += 1  # the rest of a line outside the slice is not read: a long trace sliced stays fast
            return None
        values = [number(text, f"field {index}") for index, text in enumerate(fields, start=1)]
    except ValueError as exc:
        report.malformed(line_number, str(exc))
        return None
    submit = params.slice.shift(submitted)
    if submit is None:
        report.unusable(line_number, f"submit time missing: {fields[1]}")
        return None
    problem = _unusable(values, machine)
    if problem:
        report.unusable(line_number, problem)
        return None
    return _make_job(values, submit, params, machine, seed)


def _processors(values: list[float]) -> int:
    """Allocated processors (field 5), else requested ones (field 8); 0 when neither is known."""
    for value in (values[4], values[7]):
        if value > 0:
            return int(value)
    return 0


def _memory(values: list[float], params: SwfParams) -> float:
    """MiB per processor: requested memory (field 10, KiB per processor), else the default."""
    return values[9] / KIB_PER_MIB if values[9] > 0 else params.default_memory


def _unusable(values: list[float], machine: _Machine) -> str | None:
    """Why a well-formed line cannot be simulated, or None."""
    if values[3] <= 0:
        return f"run time missing: {values[3]:g}"
    processors = _processors(values)
    if processors <= 0:
        return "processor count missing: fields 5 and 8 are both -1"
    if machine.nodes is not None and processors > machine.nodes * machine.vcores_per_node:
        return f"more processors than the machine: {processors}"
    per_processor = values[9] / KIB_PER_MIB if values[9] > 0 else 0.0
    if per_processor > machine.node_memory:
        return f"more memory per processor than a node has: {per_processor:g} MiB"
    return None


def _make_job(values: list[float], submit: float, params: SwfParams, machine: _Machine, seed: int) -> Job:
    number_ = int(values[0])
    job_id = f"job-{number_}"
    rng = job_random(seed, job_id)
    queue = str(int(values[14])) if values[14] != MISSING else None
    production = params.production.is_production(queue, rng)
    runtime = values[3]
    declared = float(math.ceil(values[8])) if values[8] > 0 else runtime
    container = Resources.of({"memory": _memory(values, params), "vcores": 1.0})
    processors = _processors(values)
    tags = (("swf_user", _raw(values[11])), ("swf_queue", queue or "-1"), ("swf_status", _raw(values[10])),
            ("declared_from", "requested time" if values[8] > 0 else "run time"))
    return Job(id=job_id, user=f"u{_raw(values[11])}" if values[11] != MISSING else "unknown", submit=submit,
               kind=PRODUCTION if production else BEST_EFFORT, driver=container, executors=processors - 1,
               executor=container, runtime=runtime, declared=declared,
               deadline=params.slack.deadline(submit, declared, rng) if production else None,
               queue=params.production_queue if production else params.best_effort_queue, tags=tags,
               gang=True)  # an MPI job: its ranks run together or not at all


def _raw(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)
