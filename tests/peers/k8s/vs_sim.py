"""One scenario (vs_sim.yaml) both in the simulator and on the local control plane, job by job.

`simulate(model)` runs it through `follower.sim.engine.Simulation` (what `rayon simulate` runs) with the scheduler's
`preemption.model` set to `yarn` or `yunikorn`. `play(plane, work)` plays the same jobs on the control plane:
best effort fills the nodes (one pod per job, recreated when YuniKorn preempts it, as a Job controller would: the
simulator asks again for a lost container), the production jobs' reservations are submitted to a store whose plan
starts then (`rayon submit --now`, each with its arrival: the simulator submits each at its arrival, so the plans
agree, which `compare` checks), `rayon serve --follow-to yunikorn-configmap` keeps YuniKorn's queues, and each
production job's pod is created when its queue appears in the ConfigMap (the simulator submits it when the follower
opens the queue); KWOK ends every pod after the job's true run time. Times are seconds from the plan's start.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from follower.follow.follower import queue_name
from follower.scheduler.config import load_config
from follower.sim.engine import Simulation
from follower.sim.planning import job_reservation
from follower.sim.scenario import Scenario, Section, load_scenario
from follower.sim.setup import scheduler_config
from rdl.syntax.printer import format_reservation
from tests.peers.k8s.controlplane import ControlPlane, pod, wait
from tests.peers.k8s.scenario import (
    APP_LABEL,
    BATCH,
    JOBS,
    QUEUE_LABEL,
    RUN_FOR,
    clear,
    namespace,
    queues_in,
    rayon,
    serving,
)

SCENARIO = Path(__file__).resolve().parent / "vs_sim.yaml"


@dataclass
class JobRun:
    """One job as one side ran it: its first lease's start, when its pod (its ask) was made, when it started and
    finished, and whether it met its deadline (production jobs)."""

    job: str
    kind: str
    submit: float
    deadline: float | None
    lease: float | None = None
    created: float | None = None
    start: float | None = None
    finish: float | None = None

    @property
    def met(self) -> bool | None:
        if self.deadline is None:
            return None
        return self.finish is not None and self.finish <= self.deadline

    @property
    def latency(self) -> float | None:
        """From its lease's start to its start: what preemption and the follower's round add."""
        return None if self.start is None or self.lease is None else self.start - self.lease


@dataclass
class Side:
    """What one side did: every job, and how many best-effort containers (pods) preemption took."""

    name: str
    jobs: dict[str, JobRun] = field(default_factory=dict)
    preempted: int = 0

    def production(self) -> list[JobRun]:
        return sorted((j for j in self.jobs.values() if j.deadline is not None), key=lambda j: j.job)


def scenario(model: str | None = None, start: datetime | None = None) -> Scenario:
    """The scenario, with its scheduler's preemption model and its start replaced when given."""
    loaded = load_scenario(SCENARIO)
    if model is not None:
        data = {**dict(loaded.scheduler.data), "preemption": {"model": model}}
        loaded = dataclasses.replace(loaded, scheduler=Section(data, None, loaded.file))
    return dataclasses.replace(loaded, start=start) if start is not None else loaded


def simulate(model: str) -> Side:
    """The scenario in the simulator with preemption `model` (yarn | yunikorn)."""
    trace = io.StringIO()
    result = Simulation(scenario(model), trace=trace).run()
    side = Side(f"simulator ({model})")
    submitted: dict[str, float] = {}
    for line in trace.getvalue().splitlines():
        event = json.loads(line)
        if event["event"] == "submit":
            submitted.setdefault(event["application"], event["time"])
        side.preempted += event["event"] == "preempt"
    for record in result.records:
        side.jobs[record.job_id] = JobRun(record.job_id, record.kind, record.submit, record.deadline,
                                          min((s for s, _, _ in record.planned), default=None),
                                          submitted.get(record.job_id), record.start, record.finish)
    return side


def play(plane: ControlPlane, work: Path, limit: float = 240.0) -> Side:
    """The scenario on the control plane (see the module's words); `limit`: a safety net in seconds past the last
    deadline, for a stuck control plane."""
    api = plane.client()
    loaded = scenario()
    workload = loaded.load_workload()
    best_effort = [job for job in workload.jobs if not job.is_production]
    clear(api)
    for name in (BATCH, JOBS):
        namespace(api, name)
    for job in best_effort:
        _create(api, BATCH, job.id, job, None)
    wait(lambda: [p.status.phase for p in api.list_namespaced_pod(BATCH).items].count("Running") == len(best_effort),
         300, what="best effort running")
    now = int(time.time())
    step = int(loaded.cluster.step)
    start = datetime.fromtimestamp(now - now % step, UTC)
    here = dataclasses.replace(loaded, start=start)
    (work / "cluster.yaml").write_text(here.cluster_yaml(workload))
    rayon("init", "--state", "plan.db", "--cluster", "cluster.yaml", cwd=work)
    cluster = here.plan_cluster(workload)
    delay = load_config(scheduler_config(here)).preemption_delay
    (work / "jobs.rdl").write_text("\n".join(format_reservation(job_reservation(job, cluster, start, delay))
                                             for job in workload.production))
    rayon("submit", "--state", "plan.db", "--now", start.strftime("%Y-%m-%dT%H:%M:%SZ"), "jobs.rdl", cwd=work)
    side = Side("control plane")
    for job in workload.jobs:
        side.jobs[job.id] = JobRun(job.id, job.kind, job.submit, job.deadline)
    for name, first in _leases(work, start, step).items():
        side.jobs[name].lease = first
    until = max(j.deadline for j in workload.production if j.deadline is not None) + limit
    with serving(plane, work):
        _watch(api, side, workload.production, best_effort, start, until)
    _records(api, side, start)
    (work / "side.json").write_text(json.dumps(dataclasses.asdict(side), indent=1))
    return side


def _create(api: Any, namespace: str, name: str, job: Any, queue: str | None) -> None:
    labels = {APP_LABEL: name} | ({QUEUE_LABEL: queue} if queue else {})
    size = job.executor
    api.create_namespaced_pod(namespace, pod(name, namespace, str(int(size["vcores"])), f"{int(size['memory'])}Mi",
                                             labels, {RUN_FOR: f"{int(job.runtime)}s"}))


def _leases(work: Path, start: datetime, step: int) -> dict[str, float]:
    """Each reservation's first planned step with a guarantee, in seconds from the start (`rayon follow`)."""
    rounds = json.loads(rayon("follow", "--state", "plan.db", "--format", "json", "--from",
                              start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--to", "+30m", cwd=work))["rounds"]
    first: dict[str, float] = {}
    for round in rounds:
        for queue in round["queues"]:
            if queue["reservation"] and queue["guaranteed"].get("vcores", 0) > 0:
                first.setdefault(queue["reservation"], round["step"] * step)
    return first


def _watch(api: Any, side: Side, production: list[Any], best_effort: list[Any], start: datetime,
           until: float) -> None:
    """Create each production pod as its queue appears; recreate a preempted best-effort pod; until every production
    pod has ended."""
    origin = start.timestamp()
    replaced: dict[str, int] = {}  # best-effort job -> times recreated
    live = {job.id: job.id for job in best_effort}  # best-effort job -> the name of its pod now
    by_id = {job.id: job for job in best_effort}
    while True:
        t = time.time() - origin
        seen = queues_in(api)
        for job in production:
            record = side.jobs[job.id]
            if record.created is None and queue_name(job.id) in seen:
                _create(api, JOBS, job.id, job, queue_name(job.id))
                record.created = time.time() - origin
        there = {p.metadata.name for p in api.list_namespaced_pod(BATCH).items}
        for job_id, name in list(live.items()):
            if name not in there:  # only YuniKorn's preemption deletes a pod here
                side.preempted += 1
                replaced[job_id] = replaced.get(job_id, 0) + 1
                live[job_id] = f"{job_id}-r{replaced[job_id]}"
                _create(api, BATCH, live[job_id], by_id[job_id], None)
        phases = {p.metadata.name: p.status.phase for p in api.list_namespaced_pod(JOBS).items}
        if all(phases.get(job.id) in ("Succeeded", "Failed") for job in production) or t > until:
            return
        time.sleep(0.5)


def _records(api: Any, side: Side, start: datetime) -> None:
    origin = start.timestamp()
    for item in api.list_namespaced_pod(JOBS).items:
        record = side.jobs.get(item.metadata.name)
        if record is None:
            continue
        if item.status.start_time is not None:
            record.start = item.status.start_time.timestamp() - origin
        for status in item.status.container_statuses or []:
            if status.state.terminated is not None and status.state.terminated.finished_at is not None:
                record.finish = status.state.terminated.finished_at.timestamp() - origin


# How far the control plane's start of a job may fall from the simulator's (`yunikorn` model), from the model: one
# retry, when a try falls just as the follower's round writes the new queue (the simulator counts the queue open
# at that try; YuniKorn, still reading the ConfigMap, tries again 15 s later), plus what the model leaves out: the
# pod is made after the ConfigMap shows its queue (polled every 0.5 s) and pod records keep whole seconds.
RETRY = 15.0
SLACK = 3.0
EARLY = 1.0  # the control plane cannot start a job sooner than the model says, but a record's second truncates
TOLERANCE = RETRY + SLACK


@dataclass(frozen=True)
class Row:
    """One production job on every side: the lease's start, the start and whether it met its deadline."""

    job: str
    deadline: float
    lease: dict[str, float | None]
    start: dict[str, float | None]
    finish: dict[str, float | None]
    met: dict[str, bool | None]


def compare(sides: list[Side]) -> list[Row]:
    """Per production job, each side's figures (by side name)."""
    rows = []
    for job in sides[0].production():
        assert job.deadline is not None
        runs = {side.name: side.jobs[job.job] for side in sides}
        rows.append(Row(job.job, job.deadline, {n: r.lease for n, r in runs.items()},
                        {n: r.start for n, r in runs.items()}, {n: r.finish for n, r in runs.items()},
                        {n: r.met for n, r in runs.items()}))
    return rows


def close_to_deadline(row: Row, side: str) -> bool:
    """Whether the job finished (per `side`) within TOLERANCE of its deadline: the other side may fall either way."""
    finish = row.finish[side]
    return finish is not None and abs(finish - row.deadline) <= TOLERANCE


def table(sides: list[Side]) -> str:
    """The comparison as text: one line per production job, then the preemptions."""
    names = [side.name for side in sides]

    def cell(value: float | bool | None) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "met" if value else "MISSED"
        return f"{value:.0f}"

    head = f"{'job':4} {'deadline':>8} " + " | ".join(f"{n[:26]:^26}" for n in names)
    sub = f"{'':4} {'':>8} " + " | ".join(f"{'lease':>5} {'start':>5} {'lag':>4} {'end':>4} {'':>6}" for _ in names)
    lines = [head, sub]
    for row in compare(sides):
        cells = []
        for n in names:
            lease, start = row.lease[n], row.start[n]
            lag = None if lease is None or start is None else start - lease
            cells.append(f"{cell(lease):>5} {cell(start):>5} {cell(lag):>4} {cell(row.finish[n]):>4} "
                         f"{cell(row.met[n]):>6}")
        lines.append(f"{row.job:4} {row.deadline:>8.0f} " + " | ".join(cells))
    lines.append("best-effort containers preempted: " + ", ".join(f"{s.name} {s.preempted}" for s in sides))
    return "\n".join(lines)
