"""What a simulation measured: per-job records in, the figures of `rayon simulate --json` out.

Definitions (kept here so the report and the tests read the same ones):
- SLA attainment: production jobs that finished by their deadline ÷ production jobs whose fate
  is known when the run ends (finished, or deadline passed); those still running with a deadline
  beyond the end are counted as `open`, not as misses.
- Response time: finish − submit; slowdown: response ÷ the job's run time alone
  (its actual duration with no waiting), at least 1.
- Start latency: start − submit (a production job's includes its wait for its lease); lateness: how long after
  its deadline a late production job finished (or the run ended, for one that never did).
- SLA over the jobs due in the run: production jobs that finished by their deadline ÷ production jobs whose
  deadline falls within the run's time limit (every job when the scenario sets none). Unlike SLA attainment its
  denominator is the same set of jobs for every agent: a plan that starts jobs late in their windows leaves more
  of them running at the end, and SLA attainment would then leave those out while a baseline that finished them
  early counts them as met.
- SLA over feasible jobs: the same share, counting only the production jobs that could meet their deadline at
  all, those whose run time alone fits between their submission and their deadline.
- Plan changes: how often an accepted reservation's planned allocation changes level over its steps (its
  start and end included): how many times a follower has to resize its queue; GREE-L aims to keep it low.
  (`benchmarks/periodic.py` counts another thing, `planner.agents.milp.changes`: bundles started or stopped,
  which weighs each change by its size.)
- Acceptance over time: production jobs submitted and accepted in each tenth of the run, by arrival.
- Short best-effort jobs: those under SHORT_JOB seconds alone; their mean wait before they start.
- Size buckets (UWFQ paper): jobs ranked by their run time alone; the 0–80, 80–95 and
  95–100 percentile groups, each with its mean response time; over every job, and over the
  best-effort jobs alone (how reservations for production weigh on the rest, by job size).
- DVR / DSR against a user-fair baseline run of the same workload: a job's "deadline" is
  its finish time under the baseline; DVR is the share of jobs that finish later than that,
  DSR the mean lateness of those jobs relative to their baseline response time. (Our
  reading of the paper's fairness-violation measures; the report says so.)
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.core.plan import Allocation

PRODUCTION = "production"
BEST_EFFORT = "best_effort"
SIZE_BUCKETS = ((0.0, 80.0), (80.0, 95.0), (95.0, 100.0))
SHORT_JOB = 60.0  # seconds alone: the best-effort jobs whose wait an interactive user feels
TIME_BUCKETS = 10  # acceptance over time: arrivals in this many equal parts of the run


@dataclass
class JobRecord:
    """One job's life in a simulation: when it came, ran and ended, and what it was promised."""

    job_id: str
    user: str
    kind: str
    submit: float
    alone: float
    deadline: float | None = None
    reservation: str | None = None
    accepted: bool | None = None
    rejection: str | None = None  # the planner's reason code when it rejected the reservation
    start: float | None = None
    finish: float | None = None
    preempted: int = 0  # containers taken back by preemption
    lost: int = 0  # containers lost with a failed node
    lost_work_s: float = 0.0  # container-seconds of work thrown away by preemption and failures (redone)
    plan_changes: int = 0  # level changes of its accepted reservation's planned allocation
    planned: tuple[tuple[float, float, float], ...] = ()  # its leases as accepted: (start s, end s, vcores held)
    work_s: float = 0.0  # container-seconds its work takes with nothing lost (run time × containers)
    dropped: bool = False  # its reservation was dropped when capacity shrank
    refused: bool = False  # no queue took its application
    killed: bool = False  # ended unfinished by the follower (its reservation ended, `on_expiry: kill`)

    @property
    def response(self) -> float | None:
        """Seconds from submission to the end, or None if it never finished."""
        return None if self.finish is None else self.finish - self.submit

    @property
    def slowdown(self) -> float | None:
        """Response time over the time the job needs alone (never below 1)."""
        response = self.response
        if response is None:
            return None
        return max(1.0, response / self.alone) if self.alone > 0 else 1.0

    @property
    def wait(self) -> float | None:
        """Seconds from submission to its first container, or None if it never started."""
        return None if self.start is None else self.start - self.submit

    @property
    def feasible(self) -> bool:
        """Whether its run time alone fits between its submission and its deadline."""
        return self.deadline is not None and self.submit + self.alone <= self.deadline + 1e-9

    def lateness(self, end: float) -> float:
        """Seconds past its deadline it finished (or, unfinished, the run ended); 0 when on time or no deadline."""
        if self.deadline is None:
            return 0.0
        return max(0.0, (self.finish if self.finish is not None else end) - self.deadline)

    @property
    def met_deadline(self) -> bool:
        """Finished, and by its deadline (jobs without a deadline never 'meet' one)."""
        return self.finish is not None and self.deadline is not None and self.finish <= self.deadline + 1e-9


@dataclass
class Usage:
    """Resource-seconds used and available over the run, per resource."""

    used: dict[str, float] = field(default_factory=dict)
    available: dict[str, float] = field(default_factory=dict)

    def add(self, used: Mapping[str, float], available: Mapping[str, float], seconds: float) -> None:
        """Account `seconds` spent at this level of use."""
        if seconds <= 0:
            return
        for name, amount in available.items():
            self.available[name] = self.available.get(name, 0.0) + amount * seconds
            self.used[name] = self.used.get(name, 0.0) + used.get(name, 0.0) * seconds

    def utilization(self) -> dict[str, float]:
        """Used ÷ available per resource (0 where nothing was available)."""
        return {name: (self.used.get(name, 0.0) / total if total > 0 else 0.0)
                for name, total in self.available.items()}


def summarize(records: Iterable[JobRecord], usage: Usage, preemptions: int, end: float = math.inf,
              limit: float | None = None) -> dict[str, Any]:
    """The simulation's figures in the `--json` shape: production, best effort, use, users (`end`: when it stopped;
    `limit`: the time limit it ran under, None for none)."""
    jobs = list(records)
    production = [job for job in jobs if job.kind == PRODUCTION]
    best_effort = [job for job in jobs if job.kind == BEST_EFFORT]
    utilization = usage.utilization()
    return {
        "production": _production(production, end, math.inf if limit is None else limit),
        "best_effort": {**responses(best_effort), **_short(best_effort)},
        "utilization": _headline(utilization),
        "utilization_by_resource": utilization,
        "preemptions": preemptions,
        "lost_work_s": sum(job.lost_work_s for job in jobs),
        "work_s": sum(job.work_s for job in jobs),
        "all_jobs": responses(jobs),
        "size_buckets": size_buckets(jobs),
        "best_effort_size_buckets": size_buckets(best_effort),
        "per_user": {user: responses(mine) for user, mine in sorted(_by_user(jobs).items())},
    }


def _production(jobs: list[JobRecord], end: float, limit: float) -> dict[str, Any]:
    met = sum(job.met_deadline for job in jobs)
    due = [job for job in jobs if job.deadline is not None and job.deadline <= limit + 1e-9]
    accepted = [job for job in jobs if job.accepted]
    still_open = [job.finish is None and job.deadline is not None and job.deadline > end for job in jobs]
    open_ = sum(still_open)
    feasible = [job for job, pending in zip(jobs, still_open, strict=True) if job.feasible and not pending]
    known = [job for job, pending in zip(jobs, still_open, strict=True) if not pending]
    late = [job.lateness(end) for job in known if not job.met_deadline]
    waits = [job.wait for job in jobs if job.wait is not None]
    return {
        "jobs": len(jobs),
        "accepted": len(accepted),
        "met_deadline": met,
        "open": open_,
        "sla_attainment": _ratio(met, len(jobs) - open_),
        "due": len(due),
        "sla_due": _ratio(sum(job.met_deadline for job in due), len(due)),
        "accepted_met_deadline": sum(job.met_deadline for job in accepted),
        "completed": sum(job.finish is not None for job in jobs),
        "dropped": sum(job.dropped for job in jobs),
        "rejections": dict(sorted(Counter(job.rejection for job in jobs if job.rejection is not None).items())),
        "sla_feasible": _ratio(sum(job.met_deadline for job in feasible), len(feasible)),
        "feasible": len(feasible),
        "median_start_latency_s": _percentile(waits, 50.0),
        "p95_start_latency_s": _percentile(waits, 95.0),
        "late": len(late),
        "mean_lateness_s": _mean(late),
        "plan_changes": sum(job.plan_changes for job in accepted),
        "acceptance_over_time": acceptance_over_time(jobs, end),
    }


def acceptance_over_time(jobs: list[JobRecord], end: float) -> list[dict[str, float]]:
    """Production jobs submitted and accepted in each of TIME_BUCKETS equal parts of the run, by arrival."""
    if not jobs or not math.isfinite(end) or end <= 0:
        return []
    width = end / TIME_BUCKETS
    buckets = [{"from_s": index * width, "submitted": 0, "accepted": 0} for index in range(TIME_BUCKETS)]
    for job in jobs:
        bucket = buckets[min(TIME_BUCKETS - 1, int(job.submit // width))]
        bucket["submitted"] += 1
        bucket["accepted"] += bool(job.accepted)
    return buckets


def _short(jobs: list[JobRecord]) -> dict[str, Any]:
    """How long the short jobs waited to start (the interactive user's experience of a busy cluster)."""
    short = [job for job in jobs if job.alone < SHORT_JOB]
    waits = [job.wait for job in short if job.wait is not None]
    return {"short_jobs": len(short), "short_mean_wait_s": _mean(waits)}


def responses(jobs: list[JobRecord]) -> dict[str, Any]:
    """Count, completions, mean and p95 response and mean slowdown of these jobs."""
    responses = [job.response for job in jobs if job.response is not None]
    slowdowns = [job.slowdown for job in jobs if job.slowdown is not None]
    return {
        "jobs": len(jobs),
        "completed": len(responses),
        "mean_response_s": _mean(responses),
        "p95_response_s": _percentile(responses, 95.0),
        "mean_slowdown": _mean(slowdowns),
    }


def size_buckets(jobs: list[JobRecord]) -> list[dict[str, Any]]:
    """Mean response time of the finished jobs in each run-time percentile group."""
    done = sorted((job for job in jobs if job.response is not None), key=lambda job: (job.alone, job.job_id))
    buckets = []
    for low, high in SIZE_BUCKETS:
        first, last = round(len(done) * low / 100.0), round(len(done) * high / 100.0)
        members = done[first:last]
        buckets.append({
            "percentiles": f"{low:g}-{high:g}",
            "jobs": len(members),
            "mean_response_s": _mean([job.response for job in members if job.response is not None]),
            "mean_slowdown": _mean([job.slowdown for job in members if job.slowdown is not None]),
        })
    return buckets


def fairness_against(jobs: Iterable[JobRecord], baseline: Iterable[JobRecord]) -> dict[str, Any]:
    """DVR and DSR of a run against a user-fair baseline run of the same jobs (see module doc)."""
    deadlines = {job.job_id: job for job in baseline if job.finish is not None}
    compared = late = 0
    slack: list[float] = []
    for job in jobs:
        reference = deadlines.get(job.job_id)
        if reference is None or job.finish is None or reference.finish is None:
            continue
        compared += 1
        if job.finish > reference.finish + 1e-9:
            late += 1
            base = max(reference.response or 0.0, 1e-9)
            slack.append((job.finish - reference.finish) / base)
    return {"compared": compared, "dvr": _ratio(late, compared), "dsr": _mean(slack) if slack else 0.0}


def _by_user(jobs: list[JobRecord]) -> dict[str, list[JobRecord]]:
    grouped: dict[str, list[JobRecord]] = defaultdict(list)
    for job in jobs:
        grouped[job.user].append(job)
    return grouped


def _headline(utilization: Mapping[str, float]) -> float:
    """One figure for the table: the mean over resources (vcores and memory weigh alike)."""
    return float(np.mean(list(utilization.values()))) if utilization else 0.0


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


@dataclass
class Result:
    """What `rayon simulate` reports: the figures, the per-job records, and how long it all took."""

    scenario: str
    agent: str
    policy: str
    seed: int
    summary: dict[str, Any]
    records: list[JobRecord]
    events: int
    simulated_s: float
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        """The `--json` document."""
        return {"scenario": self.scenario, "agent": self.agent, "policy": self.policy, "seed": self.seed,
                **self.summary, "events": self.events, "simulated_s": self.simulated_s, "wall_s": self.wall_s,
                "events_per_s": self.events / self.wall_s if self.wall_s > 0 else None}


def level_changes(allocations: Sequence[Allocation]) -> int:
    """How often the bundles these allocations hold change level over the steps, their start and end included."""
    edges: dict[int, int] = {}
    for allocation in allocations:
        edges[allocation.start] = edges.get(allocation.start, 0) + allocation.bundles
        edges[allocation.end] = edges.get(allocation.end, 0) - allocation.bundles
    return sum(1 for change in edges.values() if change != 0)
