"""The server's metrics, `GET /metrics` in Prometheus's text format (or OpenMetrics, if the scraper asks for it).

Built on prometheus-client: one registry per app. What a request or the store does is counted as it
happens (decisions, admission and commit latencies); what the plan holds is read from the store when
Prometheus scrapes (`PlanCollector`), so the gauges are as fresh as the scrape. Per server: several
servers on one PostgreSQL plan each count their own decisions and latencies (sum them in Prometheus),
while their plan gauges all describe the one plan. The worker processes of one `rayon serve --workers N`
are one server: they count into prometheus-client's shared files (its multiprocess mode, switched on by
`PROMETHEUS_MULTIPROC_DIR`, which the parent sets), and any of them answers a scrape with the sums, with the
memory of all the server's processes (planner/api/processes.py) and, when one worker serves HTTP, that worker's
own `process_*` figures. No token is needed, as for /v1/ready: the metrics name no reservation and no user.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any as AnyType

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from planner.api.jobs import ENDED, Jobs
from planner.api.processes import ServerProcesses, lone_worker, server_pid
from planner.core.decision import Decision
from planner.store.facade import Store, StoreError
from planner.store.records import AdvanceReport
from rdl import units
from rdl.shape import step_floor

router = APIRouter()
log = logging.getLogger("rayon.api")
AHEAD = 24 * 3600  # seconds of plan that the look-ahead gauges cover
ADMISSION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
DIALECTS = ("native", "yarn")
TEXT = "text/plain"
OPENMETRICS = "application/openmetrics-text"
SHARED_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's switch to its multiprocess mode, and where it counts


class Metrics:
    """One app's registry, and what its routes and its store report into it."""

    def __init__(self) -> None:
        # A `_created` series beside every counter and histogram doubles their series for a timestamp Prometheus
        # does not read (prometheus-client's switch is process-wide; this process serves one app).
        disable_created_metrics()
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "rayon_decisions", "Decisions committed by this server (submissions and updates, both dialects; dry "
            "runs are not counted), by agent and outcome; `reason` is a rejection's code, empty when accepted.",
            ["agent", "outcome", "reason"], registry=self.registry)
        self.admission = Histogram(
            "rayon_admission_seconds", "Seconds from a submission's arrival at its route to its decision, committed "
            "(or not, for a dry run), by dialect.", ["dialect"], buckets=ADMISSION_BUCKETS, registry=self.registry)
        for dialect in DIALECTS:
            self.admission.labels(dialect)
        self.commits = Histogram(
            "rayon_store_commit_seconds", "Seconds the plan store took to commit a write transaction of this server "
            "(a decision, a cancel): the database's COMMIT, with its flush to disk.", buckets=COMMIT_BUCKETS,
            registry=self.registry)
        self.batches = Histogram(
            "rayon_store_batch_size", "Submissions decided and committed together in one write transaction (group "
            "commit): batches form when submissions arrive while the previous batch is still being decided.",
            buckets=BATCH_BUCKETS, registry=self.registry)
        self.series = Counter(
            "rayon_series_instances", "Instances of recurring reservations decided as this server moved the plan's "
            "clock into their horizon, by outcome (placed, or missed: logged as rejected, the series goes on).",
            ["outcome"], registry=self.registry)
        for outcome in ("placed", "missed"):
            self.series.labels(outcome)
        self.advances = Counter("rayon_clock_advances", "Times this server moved the plan's clock on.",
                                registry=self.registry)
        self.scraped = self.registry  # what a scrape reads
        own = True  # whether this process's own figures (process_*, python_*) are shown
        if os.environ.get(SHARED_DIR):  # one of the server's processes (workers, decider): a scrape sums them all
            self.scraped = CollectorRegistry()
            MultiProcessCollector(self.scraped)
            if (root := server_pid()) is not None:
                self.scraped.register(ServerProcesses(root))
            own = lone_worker()  # with several workers, each scrape would show whichever worker answered it
        if own:
            for standard in (ProcessCollector, PlatformCollector, GCCollector):
                standard(registry=self.scraped)

    def watch(self, store: Store, jobs: Jobs) -> None:
        """Report the plan in this store and these jobs at every scrape, and time the store's commits."""
        self.scraped.register(PlanCollector(store))
        self.scraped.register(JobCollector(jobs))
        self.watch_writes(store)

    def watch_writes(self, store: Store) -> None:
        """Time the store's commits and count its batches (also in the deciding process of `--workers`)."""
        store.time_commits(self.commits.observe)
        store.count_batches(self.batches.observe)

    def advanced(self, report: AdvanceReport) -> None:
        """Count one move of the plan's clock and the series instances it decided."""
        self.advances.inc()
        self.series.labels("placed").inc(len(report.placed))
        self.series.labels("missed").inc(len(report.missed))

    def decided(self, decision: Decision) -> None:
        """Count one committed decision."""
        agent = str(decision.extra.get("agent", "unknown"))
        reason = "" if decision.accepted or decision.reason is None else decision.reason.code
        self.decisions.labels(agent, "accepted" if decision.accepted else "rejected", reason).inc()

    def admitted(self, dialect: str, started: float, decision: Decision, committed: bool) -> None:
        """Time one submission that got a decision (started: `time.perf_counter()` at its arrival), and count the
        decision if it was committed."""
        self.admission.labels(dialect).observe(time.perf_counter() - started)
        if committed:
            self.decided(decision)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """Every metric, in the format the scraper accepts (Prometheus text unless it asks for OpenMetrics)."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.scraped), content_type


class PlanCollector(Collector):
    """Gauges of the plan, read from the store at each scrape: its use now and over the next day, the reservations
    still holding capacity, and how far the plan's clock lags behind the wall clock."""

    def __init__(self, store: Store):
        self.store = store

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("rayon_store_up", "1 if the plan store answered this scrape (the plan's gauges "
                               "follow), 0 if it did not (see the server's log).")
        try:
            now = units.read_instant(self.store.meta()["now"])
            plan = self.store.load_plan()
        except StoreError as error:
            log.warning("metrics: the plan store does not answer: %s", error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield GaugeMetricFamily("rayon_clock_lag_seconds", "Seconds the plan's clock is behind the wall clock "
                                "(negative: ahead). Submissions are decided at the plan's clock; `rayon advance` "
                                "or a follower moves it.", value=(datetime.now(UTC) - now).total_seconds())
        clock = plan.clock
        current = min(max(step_floor(clock.origin, now, clock.step), 0), clock.steps)
        yield from use_now(plan.resources, plan.capacity, plan.used, current)
        ahead = min(current + math.ceil(AHEAD / clock.step), clock.steps)
        yield from use_ahead(plan.resources, plan.capacity, plan.used, current, ahead)
        active = sum(1 for held in plan.accepted.values() if any(a.end > current for a in held.allocations))
        yield GaugeMetricFamily("rayon_reservations_active", "Accepted reservations holding capacity at or after "
                                "the plan's clock (accepted, not ended).", value=active)


def use_now(resources: tuple[str, ...], capacity: AnyType, used: AnyType, step: int) -> Iterator[Metric]:
    """Capacity and promised use per resource in the plan step of the plan's clock (none past the horizon)."""
    families = (GaugeMetricFamily("rayon_plan_capacity", "The cluster's capacity at the plan's clock, per resource "
                                  "(memory in MiB).", labels=["resource"]),
                GaugeMetricFamily("rayon_plan_used", "Capacity promised to reservations at the plan's clock, per "
                                  "resource (memory in MiB).", labels=["resource"]))
    if step < capacity.shape[1]:
        for index, name in enumerate(resources):
            families[0].add_metric([name], float(capacity[index, step]))
            families[1].add_metric([name], float(used[index, step]))
    yield from families


def use_ahead(resources: tuple[str, ...], capacity: AnyType, used: AnyType, lo: int, hi: int) -> Iterator[Metric]:
    """Mean capacity, mean and peak promised use per resource over plan steps [lo, hi) (none when empty)."""
    families = (GaugeMetricFamily("rayon_plan_capacity_24h_mean", "The cluster's mean capacity over the 24 hours "
                                  "from the plan's clock (up to the horizon's end), per resource.",
                                  labels=["resource"]),
                GaugeMetricFamily("rayon_plan_used_24h_mean", "Mean capacity promised over the 24 hours from the "
                                  "plan's clock, per resource.", labels=["resource"]),
                GaugeMetricFamily("rayon_plan_used_24h_peak", "Most capacity promised in any plan step of the 24 "
                                  "hours from the plan's clock, per resource.", labels=["resource"]))
    if hi > lo:
        for index, name in enumerate(resources):
            families[0].add_metric([name], float(capacity[index, lo:hi].mean()))
            families[1].add_metric([name], float(used[index, lo:hi].mean()))
            families[2].add_metric([name], float(used[index, lo:hi].max()))
    yield from families


class JobCollector(Collector):
    """This server's replan jobs: running now, and ended since it started, by how they ended."""

    def __init__(self, jobs: Jobs):
        self.jobs = jobs

    def collect(self) -> Iterator[Metric]:
        tally = self.jobs.tally()
        yield GaugeMetricFamily("rayon_replan_jobs_running", "Replan jobs running on this server (0 or 1).",
                                value=tally["running"])
        ended = CounterMetricFamily("rayon_replan_jobs", "Replan jobs of this server that ended, by state (done, "
                                    "failed, cancelled).", labels=["state"])
        for state in ENDED:
            ended.add_metric([state], tally[state])
        yield ended


async def of_app(request: Request) -> Metrics:
    """The metrics of the app serving this request."""
    found: Metrics = request.app.state.service.metrics
    return found


@router.get("/metrics", tags=["health"], response_class=Response, responses={200: {
    "description": "Prometheus's text format (OpenMetrics when the `Accept` header asks for it)",
    "content": {TEXT: {"schema": {"type": "string"}}, OPENMETRICS: {"schema": {"type": "string"}}}}})
def metrics(request: Request, found: Metrics = Depends(of_app)) -> Response:
    """The server's metrics for Prometheus (no token): decisions, latencies, the plan's use, jobs, the clock's lag."""
    body, content_type = found.exposition(request.headers.get("accept"))
    return Response(body, media_type=content_type)
