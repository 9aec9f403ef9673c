"""The baselines an operator would run instead of planning ahead, and how each splits the cluster between queues.

Planning is measured against what a cluster's operator would really run, never against a queue sized by
hindsight alone (docs/evaluation/baselines.md):

- `none`: no production queue; every job shares the best-effort queue (time-agnostic, no priority).
- `priority`: production jobs first, earliest deadline first, with no admission control: a production
  queue guaranteed the whole cluster (so it preempts best effort), its applications ranked by deadline.
- `capacity`: YARN's CapacityScheduler as an operator sets it up: a production and a best-effort queue
  whose guarantees sum to the cluster, both elastic up to all of it, preemption giving a starved queue its
  guarantee back. The production share is sized on *another* window of the same trace (the one before, or
  after when the run starts at the trace's beginning; another seed of a synthetic stream): the level that
  covered its production demand 95% of the time.
- `static`, `static-half`: oracles, not baselines an operator could run: the production queue is guaranteed
  the peak (or half the peak) of this very run's production demand, known only in hindsight; best effort
  is guaranteed the rest of the cluster.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from follower.sim.workloads.job import Job, Workload

NO_AGENT = "none"
PRIORITY = "priority"
CAPACITY = "capacity"
ORACLES = {"static": 1.0, "static-half": 0.5}  # share of this run's own peak production demand
BASELINES = (NO_AGENT, PRIORITY, CAPACITY, *ORACLES)
SIZING_QUANTILE = 0.95  # the capacity baseline guarantees what covered production demand this share of the time
MOST_SHARE = 0.95  # ... but leaves best effort at least the rest of the cluster above this share


@dataclass(frozen=True)
class Split:
    """How a baseline divides the cluster: the production queue's guarantee, best effort's, and the order inside
    the production queue (earliest deadline first, or the scenario's policy)."""

    production: Mapping[str, float]
    best_effort: Mapping[str, float]
    earliest_deadline_first: bool = False


def is_baseline(agent: str) -> bool:
    """Whether `agent` names a baseline (no planning) rather than a planning agent."""
    return agent in BASELINES


def split_for(agent: str, workload: Workload, capacity: Mapping[str, float],
              sizing: Workload | None = None) -> Split | None:
    """The queues a baseline sets up on a cluster of `capacity` (None for `none`: one best-effort queue).
    `sizing` is the other window the capacity baseline is sized on (this run's own workload if not given)."""
    if agent == NO_AGENT:
        return None
    if agent == PRIORITY:
        return Split(dict(capacity), {}, earliest_deadline_first=True)
    if agent == CAPACITY:
        demand = demand_quantile((sizing or workload).jobs, SIZING_QUANTILE)
        production = {name: min(demand.get(name, 0.0), MOST_SHARE * total) for name, total in capacity.items()}
        return _with_rest(production, capacity)
    share = ORACLES[agent]
    return _with_rest(peak_production(workload.jobs, share, capacity), capacity)


def _with_rest(production: Mapping[str, float], capacity: Mapping[str, float]) -> Split:
    """Production guaranteed `production`; best effort the rest of the cluster, so the two sum to all of it."""
    rest = {name: max(0.0, total - production.get(name, 0.0)) for name, total in capacity.items()}
    return Split({name: value for name, value in production.items() if value > 0},
                 {name: value for name, value in rest.items() if value > 0})


def _held(jobs: Iterable[Job]) -> list[tuple[float, dict[str, float]]]:
    """Production demand over time as (time it starts, demand) steps, each job held from its submission for its
    declared time (what its owner would ask a queue for)."""
    changes: dict[float, dict[str, float]] = {}
    for job in jobs:
        if not job.is_production:
            continue
        for at, sign in ((job.submit, 1.0), (job.submit + job.declared, -1.0)):
            step = changes.setdefault(at, {})
            for name, value in job.total.items():
                step[name] = step.get(name, 0.0) + sign * value
    held: dict[str, float] = {}
    steps = []
    for at in sorted(changes):
        for name, value in changes[at].items():
            held[name] = held.get(name, 0.0) + value
        steps.append((at, dict(held)))
    return steps


def peak_production(jobs: Iterable[Job], share: float, capacity: Mapping[str, float]) -> dict[str, float]:
    """`share` of the most production jobs hold at once, per resource, if each ran from its submission for its
    declared time (no more than the cluster has): the oracles' guarantee."""
    peak: dict[str, float] = {}
    for _, held in _held(jobs):
        for name, value in held.items():
            peak[name] = max(peak.get(name, 0.0), value)
    return {name: min(share * value, capacity.get(name, math.inf)) for name, value in peak.items() if value > 0}


def demand_quantile(jobs: Iterable[Job], quantile: float) -> dict[str, float]:
    """Per resource, the least level that production demand stayed at or below for `quantile` of the time from the
    first submission to the last job's end (time-weighted)."""
    steps = _held(jobs)
    if len(steps) < 2:
        return {}
    found: dict[str, float] = {}
    for name in {name for _, held in steps for name in held}:
        spans = sorted((held.get(name, 0.0), after[0] - at) for (at, held), after in itertools.pairwise(steps))
        total = sum(seconds for _, seconds in spans)
        covered = 0.0
        for level, seconds in spans:
            covered += seconds
            if covered >= quantile * total - 1e-9:
                found[name] = level
                break
    return found


def sizing_params(params: Any, seed: int) -> tuple[Any, int]:
    """The workload parameters and seed of the window the capacity baseline is sized on: a trace's slice moved back
    by its length (forward when it starts at the trace's beginning), or another seed of a generated stream."""
    trace_slice = getattr(params, "slice", None)
    if trace_slice is not None and math.isfinite(trace_slice.length):
        start = trace_slice.start - trace_slice.length
        if start < 0:
            start = trace_slice.start + trace_slice.length
        return dataclasses.replace(params, slice=dataclasses.replace(trace_slice, start=start)), seed
    return params, seed + 1
