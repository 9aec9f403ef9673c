"""Import the Google cluster trace subsets in Workflow Trace Archive form (the UWFQ paper's macro benchmark).

One row is one task; a workflow is one job of its user. Times in the file are milliseconds:
a job is submitted `(ts_submit − first ts_submit) / 1000` seconds after the start, and each
task takes `resource_run_time / 1000 × time_scale` seconds on a one-vcore executor
(`resource_run_time` is the run time × the machine share requested, so it is machine-seconds
of work; `task_time: runtime` takes the plain run time instead). The UWFQ tool replays the
homogeneous subset at 20 × 24/32 = 15 and the heterogeneous one at 2 × 24/32 = 1.5, and drops
the homogeneous jobs of 5 × the median work or more (docs/workloads.md).
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from follower.sim.workloads.deadlines import ProductionRule, Slack, job_random
from follower.sim.workloads.fields import choice, flag, integer, memory, nested, number, path, resources, text
from follower.sim.workloads.job import BEST_EFFORT, NONE, PRODUCTION, Job, Workload
from follower.sim.workloads.report import ImportReport
from follower.sim.workloads.tracefile import Slice, csv_rows
from follower.sim.workloads.tracefile import number as parse_number
from rdl.tree import Resources

COLUMNS = ("workflow_id", "ts_submit", "task_count", "task_id", "runtime", "resource_run_time", "user_id")
MS = 1000.0


@dataclass(frozen=True, slots=True)
class GoogleParams:
    """The file, the slice, how task times are read and scaled, the executor shape, the production share."""

    file: str = field(default="", metadata=path())
    slice: Slice = field(default=Slice(), metadata=nested(Slice))
    task_time: str = field(default="resource", metadata=choice("resource", "runtime"))
    time_scale: float = field(default=1.0, metadata=number(minimum=1e-6))
    drop_larger_than: float = field(default=0.0, metadata=number(minimum=0.0))  # × the median job work; 0: keep all
    max_executors: int = field(default=32, metadata=integer(minimum=1))
    executor: Resources = field(default=Resources.of({"memory": 1024.0, "vcores": 1}), metadata=resources())
    driver_memory: float = field(default=0.0, metadata=memory())  # 0: no driver container (as in the UWFQ tool)
    production: ProductionRule = field(default=ProductionRule(), metadata=nested(ProductionRule))
    slack: Slack = field(default=Slack(), metadata=nested(Slack))
    queue: str = field(default="default", metadata=text())
    production_queue: str = field(default="production", metadata=text())
    strict: bool = field(default=False, metadata=flag())
    malleable: bool = field(default=False, metadata=flag())  # reserve the tasks' work, not a gang (no driver)

    def __post_init__(self) -> None:
        if self.malleable and self.driver_memory:
            raise ValueError("malleable jobs run their tasks on executors alone: leave out `driver_memory`")


@dataclass
class _Workflow:
    """The rows of one workflow as read: its first line, submit time, user and (task id, seconds) pairs."""

    line: int
    submit_ms: float
    user: str
    tasks: list[tuple[float, float]] = field(default_factory=list)


def read_google(params: GoogleParams, seed: int, name: str = "google") -> Workload:
    """The workflows inside the slice as jobs, users numbered `u1, u2, …` by first appearance."""
    report = ImportReport(params.file, strict=params.strict)
    flows = _workflows(params, report)
    first = min((flow.submit_ms for flow in flows.values()), default=0.0)
    users = {raw: f"u{index}" for index, raw in enumerate(dict.fromkeys(f.user for f in flows.values()), start=1)}
    cutoff = _cutoff(flows, params)
    jobs = []
    for workflow_id, flow in flows.items():
        submit = params.slice.shift((flow.submit_ms - first) / MS)
        if submit is None:
            report.outside += 1
        elif sum(s for _, s in flow.tasks) >= cutoff:
            report.unusable(flow.line, f"dropped: work at least {params.drop_larger_than:g} × the median job's")
        else:
            jobs.append(_job(workflow_id, flow, submit, users[flow.user], params, seed))
    report.kept = len(jobs)
    return Workload.of(name, jobs, (), report)


def _workflows(params: GoogleParams, report: ImportReport) -> dict[str, _Workflow]:
    flows: dict[str, _Workflow] = {}
    column = "resource_run_time" if params.task_time == "resource" else "runtime"
    for line, row in csv_rows(params.file, COLUMNS, report):
        try:
            submit = parse_number(row["ts_submit"], "ts_submit")
            task = (parse_number(row["task_id"], "task_id"), parse_number(row[column], column) / MS * params.time_scale)
        except ValueError as exc:
            report.malformed(line, str(exc))
            continue
        if task[1] <= 0:
            report.unusable(line, f"task time not positive: {row[column]}")
            continue
        flow = flows.setdefault(row["workflow_id"], _Workflow(line, submit, row["user_id"]))
        if (submit, row["user_id"]) != (flow.submit_ms, flow.user):
            report.malformed(line, f"workflow {row['workflow_id']} changes its submit time or user (first at line "
                             f"{flow.line})")
            continue
        flow.tasks.append(task)
    return flows


def _cutoff(flows: dict[str, _Workflow], params: GoogleParams) -> float:
    """Jobs with this much work or more are dropped (infinite when the filter is off)."""
    if not params.drop_larger_than or not flows:
        return float("inf")
    return params.drop_larger_than * statistics.median(sum(s for _, s in f.tasks) for f in flows.values())


def makespan(tasks: Sequence[float], executors: int) -> float:
    """How long `executors` executors take to run the tasks in order, each free executor taking the next one."""
    free = [0.0] * min(executors, len(tasks))
    for seconds in tasks:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free, default=0.0)


def _job(workflow_id: str, flow: _Workflow, submit: float, user: str, params: GoogleParams, seed: int) -> Job:
    job_id, submit = f"wf-{workflow_id}", round(submit, 3)
    tasks = tuple(seconds for _, seconds in sorted(flow.tasks))
    executors = min(len(tasks), params.max_executors)
    runtime = makespan(tasks, executors)
    rng = job_random(seed, job_id)
    production = params.production.is_production(None, rng)
    driver = Resources.of({"memory": params.driver_memory, "vcores": 1}) if params.driver_memory else NONE
    return Job(id=job_id, user=user, submit=submit, kind=PRODUCTION if production else BEST_EFFORT,
               driver=driver, executors=executors, executor=params.executor, runtime=runtime, declared=runtime,
               deadline=params.slack.deadline(submit, runtime, rng) if production else None,
               queue=params.production_queue if production else params.queue,
               tags=(("user_id", flow.user), ("workflow_id", workflow_id)), tasks=tasks, malleable=params.malleable)
