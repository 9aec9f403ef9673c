"""The offered load of a run: the same jobs arriving faster, so that a load sweep asks how much more work the same
cluster carries with planning than without it (Rayon's utilisation question).

A load factor f divides every submission time by f: the arrival process runs f times as fast, while each job keeps
its size, its run time, what it declares and how far its deadline is from its submission. Load 1 is the workload as
the trace or generator gives it.
"""

from __future__ import annotations

import dataclasses
import math

from follower.sim.workloads.job import Job, Workload

SLA_TARGET = 0.95  # a load is carried while production meets at least this share of its deadlines ...
SLOWDOWN_LIMIT = 2.0  # ... and best effort takes on average at most this many times its time alone


def at_load(workload: Workload, factor: float) -> Workload:
    """The workload with its arrivals `factor` times as fast (1: unchanged)."""
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"a load factor must be a positive number, got {factor}")
    if factor == 1.0:
        return workload
    return dataclasses.replace(workload, jobs=tuple(_sooner(job, factor) for job in workload.jobs))


def _sooner(job: Job, factor: float) -> Job:
    submit = job.submit / factor
    deadline = None if job.deadline is None else submit + (job.deadline - job.submit)
    return dataclasses.replace(job, submit=submit, deadline=deadline)


def carried(points: list[tuple[float, float | None, float | None]]) -> float | None:
    """The highest load of the sweep at which, as at every lower load, production SLA stays at least SLA_TARGET and
    best-effort mean slowdown at most SLOWDOWN_LIMIT; `points` are (load, SLA, slowdown); None if not even the
    lowest load does."""
    best = None
    for load, sla, slowdown in sorted(points):
        if sla is None or slowdown is None or sla < SLA_TARGET or slowdown > SLOWDOWN_LIMIT:
            break
        best = load
    return best
