"""Seeded synthetic workloads: a production/best-effort mix, and the UWFQ paper's two micro scenarios.

A share `malleable` of the mix's jobs with executors are malleable (MapReduce-like: no driver,
each executor's run cut into equal tasks of about `task_length`), drawn from each job's own
generator so that the other draws stay as they were (docs/workloads.md).

Every generator takes an explicit seed and draws from its own `random.Random(seed)` in a
fixed order, so the same parameters and seed give the same jobs, byte for byte.

The micro scenarios follow the UWFQ paper's benchmark tool (repository
kazemaksOG/spark-benchmark-tool, `configs/synthetic_workloads/`): a Spark cluster of 8
executors × 4 cores; users start their workloads 0.1 s apart; a "burst" submits its jobs at
once; a Poisson user waits an exponential time of mean 60/λ s between jobs (λ per minute).
The job shapes are calibrated from the tool's published tables (`results/tables/`): a job
type's run time alone is mean response ÷ mean slowdown (Loop100 2.21 s, Loop20 0.85 s), its
work is the run's total time × 32 cores ÷ jobs (Loop100 ≈ 25, Loop20 ≈ 4 core-seconds).
See docs/workloads.md for the full table.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from follower.sim.workloads.deadlines import Slack, job_random
from follower.sim.workloads.fields import (
    MAX_COUNT,
    duration,
    integer,
    integer_range,
    nested,
    number,
    resources,
    text,
)
from follower.sim.workloads.job import BEST_EFFORT, NONE, PRODUCTION, Job, Workload
from follower.sim.workloads.malleable import even_tasks
from rdl.tree import Resources

GiB = 1024.0


@dataclass(frozen=True, slots=True)
class SyntheticParams:
    """A Poisson stream of jobs from a few users, part production (with deadlines), part best effort."""

    jobs: int = field(default=100, metadata=integer(minimum=1))
    rate: float = field(default=60.0, metadata=number(minimum=0.001))  # jobs per hour (at least one in 1,000 h)
    production: float = field(default=0.3, metadata=number(minimum=0.0, maximum=1.0))
    users: int = field(default=4, metadata=integer(minimum=1))
    executors: tuple[int, int] = field(default=(1, 16), metadata=integer_range(minimum=0))
    executor: Resources = field(default=Resources.of({"memory": 2 * GiB, "vcores": 1}), metadata=resources())
    driver: Resources = field(default=Resources.of({"memory": 1 * GiB, "vcores": 1}), metadata=resources())
    runtime: float = field(default=600.0, metadata=duration())  # median
    runtime_sigma: float = field(default=1.0, metadata=number(minimum=0.0))
    min_runtime: float = field(default=60.0, metadata=duration())
    max_runtime: float = field(default=4 * 3600.0, metadata=duration())
    estimate_sigma: float = field(default=0.0, metadata=number(minimum=0.0))
    slack: Slack = field(default=Slack(), metadata=nested(Slack))
    production_queue: str = field(default="production", metadata=text())
    best_effort_queue: str = field(default="default", metadata=text())
    malleable: float = field(default=0.0, metadata=number(minimum=0.0, maximum=1.0))  # share of jobs with executors
    task_length: float = field(default=300.0, metadata=duration())  # about how long a malleable job's tasks run

    def __post_init__(self) -> None:
        if not self.task_length > 0:
            raise ValueError("task_length must be positive")
        if not 0 < self.min_runtime <= self.runtime <= self.max_runtime:
            raise ValueError("runtimes must satisfy 0 < min_runtime ≤ runtime ≤ max_runtime")


def generate_synthetic(params: SyntheticParams, seed: int, name: str = "synthetic") -> Workload:
    """`params.jobs` jobs arriving as a Poisson process of `params.rate` per hour from the scenario's start."""
    rng = random.Random(seed)
    width = len(str(params.jobs))
    jobs, now = [], 0.0
    for index in range(params.jobs):
        now += rng.expovariate(params.rate / 3600.0)
        job = _synthetic_job(params, rng, f"syn-{index:0{width}d}", round(now, 3))
        jobs.append(_malleable(job, params, seed))
    return Workload.of(name, jobs)


def _malleable(job: Job, params: SyntheticParams, seed: int) -> Job:
    """The job made malleable (a seeded share `params.malleable` of those with executors): its work cut into
    tasks of about `task_length`, no driver. The draw is the job's own, so the other draws do not shift."""
    if not job.executors or job_random(seed, job.id).random() >= params.malleable:
        return job
    return replace(job, driver=NONE, malleable=True, tasks=even_tasks(job.runtime, job.executors, params.task_length))


def _synthetic_job(params: SyntheticParams, rng: random.Random, job_id: str, submit: float) -> Job:
    user = f"u{rng.randrange(params.users) + 1}"
    production = rng.random() < params.production
    low, high = params.executors
    executors = min(high, math.floor(math.exp(rng.uniform(math.log(low + 1), math.log(high + 1)))) - 1)
    drawn = rng.lognormvariate(math.log(params.runtime), params.runtime_sigma)
    runtime = float(min(params.max_runtime, max(params.min_runtime, round(drawn))))
    declared = float(max(1, math.ceil(runtime * math.exp(rng.gauss(0.0, params.estimate_sigma)))))
    deadline = params.slack.deadline(submit, declared, rng)
    return Job(id=job_id, user=user, submit=submit, kind=PRODUCTION if production else BEST_EFFORT,
               driver=params.driver, executors=executors, executor=params.executor, runtime=runtime,
               declared=declared, deadline=deadline if production else None,
               queue=params.production_queue if production else params.best_effort_queue)


# --- the UWFQ micro scenarios ----------------------------------------------------------------------------------------

CORE = Resources.of({"memory": 1 * GiB, "vcores": 1})  # one Spark core and its share of a 4 GiB, 4-core executor


@dataclass(frozen=True, slots=True)
class PowerSmallParams:
    """2 power users sending bursts of jobs every 30 s, and 2 small users sending jobs as a Poisson process."""

    power_users: int = field(default=2, metadata=integer(minimum=0))
    bursts: int = field(default=4, metadata=integer(minimum=1))
    burst_jobs: int = field(default=20, metadata=integer(minimum=1))
    interval: float = field(default=30.0, metadata=duration())
    small_users: int = field(default=2, metadata=integer(minimum=0))
    small_jobs: int = field(default=12, metadata=integer(minimum=1))
    small_rate: float = field(default=8.0, metadata=number(minimum=0.001))  # jobs per minute
    executors: int = field(default=11, metadata=integer(minimum=1))  # Loop100: ≈ 25 core-seconds ...
    runtime: float = field(default=2.2, metadata=duration())  # ... run in 2.2 s when alone
    executor: Resources = field(default=CORE, metadata=resources())
    queue: str = field(default="default", metadata=text())


@dataclass(frozen=True, slots=True)
class SuperSmallParams:
    """4 users each sending one burst of many tiny jobs at the start."""

    users: int = field(default=4, metadata=integer(minimum=1))
    bursts: int = field(default=1, metadata=integer(minimum=1))
    burst_jobs: int = field(default=100, metadata=integer(minimum=1))
    interval: float = field(default=30.0, metadata=duration())
    executors: int = field(default=5, metadata=integer(minimum=1))  # Loop20: ≈ 4 core-seconds ...
    runtime: float = field(default=0.85, metadata=duration())  # ... run in 0.85 s when alone
    executor: Resources = field(default=CORE, metadata=resources())
    queue: str = field(default="default", metadata=text())


USER_OFFSET = 0.1  # the tool starts user k's workload at (k + 1) × 100 ms


def _micro_job(job_id: str, user: str, submit: float, executors: int, runtime: float, executor: Resources,
               queue: str) -> Job:
    """A best-effort benchmark job; no driver container (the tool runs every job inside one shared Spark driver)."""
    return Job(id=job_id, user=user, submit=round(submit, 3), kind=BEST_EFFORT, driver=NONE, executors=executors,
               executor=executor, runtime=runtime, declared=runtime, queue=queue)


def _bursts(user: str, offset: float, bursts: int, jobs: int, interval: float) -> Iterator[tuple[str, float]]:
    """(job id, submit time) of `bursts` bursts of `jobs` jobs, `interval` apart."""
    for burst in range(bursts):
        for index in range(jobs):
            yield f"{user}-b{burst}-{index:03d}", offset + burst * interval


def _poisson(user: str, offset: float, jobs: int, rate_per_minute: float,
             rng: random.Random) -> Iterator[tuple[str, float]]:
    """(job id, submit time): the first job at `offset`, then exponential gaps of mean 60/λ s."""
    now = offset
    for index in range(jobs):
        yield f"{user}-p{index:03d}", now
        now += rng.expovariate(rate_per_minute / 60.0)


def _bounded(jobs: int) -> None:
    """Refuse parameters that multiply out to more jobs than any scenario may hold."""
    if jobs > MAX_COUNT:
        raise ValueError(f"these parameters make {jobs:,} jobs; a scenario holds at most {MAX_COUNT:,}")


def uwfq_power_small(params: PowerSmallParams, seed: int, name: str = "uwfq-power-small") -> Workload:
    """The paper's "2 power + 2 small users" micro scenario (`2_power_2_small_users`)."""
    _bounded(params.power_users * params.bursts * params.burst_jobs + params.small_users * params.small_jobs)
    rng = random.Random(seed)
    jobs = []
    for k in range(params.power_users):
        user = f"power{k + 1}"
        for job_id, submit in _bursts(user, (k + 1) * USER_OFFSET, params.bursts, params.burst_jobs, params.interval):
            jobs.append(_micro_job(job_id, user, submit, params.executors, params.runtime, params.executor,
                                   params.queue))
    for k in range(params.small_users):
        user = f"small{k + 1}"
        offset = (params.power_users + k + 1) * USER_OFFSET
        for job_id, submit in _poisson(user, offset, params.small_jobs, params.small_rate, rng):
            jobs.append(_micro_job(job_id, user, submit, params.executors, params.runtime, params.executor,
                                   params.queue))
    return Workload.of(name, jobs)


def uwfq_super_small(params: SuperSmallParams, seed: int, name: str = "uwfq-super-small") -> Workload:
    """The paper's "4 super-small users" micro scenario (`4_super_small_users`); `seed` is unused: nothing is drawn."""
    _bounded(params.users * params.bursts * params.burst_jobs)
    jobs = []
    for k in range(params.users):
        user = f"tiny{k + 1}"
        for job_id, submit in _bursts(user, (k + 1) * USER_OFFSET, params.bursts, params.burst_jobs, params.interval):
            jobs.append(_micro_job(job_id, user, submit, params.executors, params.runtime, params.executor,
                                   params.queue))
    return Workload.of(name, jobs)


UWFQ_SCENARIOS: dict[str, tuple[type, Callable[..., Workload]]] = {
    "power_small": (PowerSmallParams, uwfq_power_small), "super_small": (SuperSmallParams, uwfq_super_small)}
