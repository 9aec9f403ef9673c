"""GET /metrics: Prometheus's text format without a token; decisions, latencies, the plan's use, jobs, the clock."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from planner.api import jobs as jobs_module
from planner.api.app import create_app
from planner.api.auth import TokenRegistry
from planner.api.jobs import Jobs
from planner.api.metrics import JobCollector
from planner.store.facade import Store, StoreError
from rdl.syntax.parser import parse_text
from tests.planner.api.support import CLUSTER, Server, pinned, post_json, submit, yarn_body
from tests.planner.support import instant

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: Server) -> Samples:
    """Every sample of the server's metrics, by name and labels (asked for without a token)."""
    with server.client() as anonymous:
        answer = anonymous.get("/metrics")
    assert answer.status_code == 200, answer.text
    return parse(answer.text)


def parse(text: str) -> Samples:
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_need_no_token_and_speak_prometheus_text_or_openmetrics(server: Server) -> None:
    with server.client() as anonymous:
        text = anonymous.get("/metrics")
        openmetrics = anonymous.get("/metrics", headers={"Accept": "application/openmetrics-text"})
        described = anonymous.get("/openapi.json").json()["paths"]["/metrics"]["get"]
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.endswith("# EOF\n")
    assert set(described["responses"]["200"]["content"]) == {"text/plain", "application/openmetrics-text"}
    assert "security" not in described
    samples = parse(text.text)
    assert value(samples, "rayon_store_up") == 1
    assert value(samples, "process_resident_memory_bytes") > 0  # the process's own, for a server run for months
    assert not [name for name, _ in samples if name.endswith("_created")]


def test_decisions_are_counted_by_agent_and_outcome_and_submissions_timed_by_dialect(api: Server) -> None:
    before = scrape(api)
    with api.client("alice") as alice:
        assert submit(alice, pinned("full", 0, 60, 16)).status_code == 201
        assert submit(alice, pinned("greedy", 60, 60, 2), agent="gree").status_code == 201
        rejected = submit(alice, pinned("late", 0, 60, 1))  # the cluster is full then
        assert rejected.status_code == 200 and rejected.json()["reason"]["code"] == "capacity"
        assert submit(alice, pinned("trial", 200, 60, 1), dry_run="true").status_code == 200
        rid = alice.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
        assert post_json(alice, "/ws/v1/cluster/reservation/submit", yarn_body(rid, 300, 400)).status_code == 202
        assert post_json(alice, "/ws/v1/cluster/reservation/submit", yarn_body(rid, 300, 400)).status_code == 202
    after = scrape(api)

    def added(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert added("rayon_decisions_total", agent="gree-l", outcome="accepted", reason="") == 2  # native and YARN
    assert added("rayon_decisions_total", agent="gree", outcome="accepted", reason="") == 1
    assert added("rayon_decisions_total", agent="gree-l", outcome="rejected", reason="capacity") == 1
    assert added("rayon_admission_seconds_count", dialect="native") == 4  # the dry run too
    assert added("rayon_admission_seconds_count", dialect="yarn") == 1  # the repeat decides nothing
    assert 0 < added("rayon_admission_seconds_sum", dialect="native") < 60
    assert added("rayon_store_commit_seconds_count") == 4  # each committed decision, the rejection's log row too
    assert added("rayon_store_commit_seconds_bucket", le="+Inf") == 4
    assert added("rayon_store_batch_size_count") == 4 and added("rayon_store_batch_size_sum") == 4  # one at a time


def test_plan_gauges_are_read_at_the_scrape(api: Server) -> None:
    with api.client("alice") as alice:
        assert submit(alice, pinned("now", 0, 60, 4)).status_code == 201
        assert submit(alice, pinned("later", 600, 120, 8)).status_code == 201
        assert submit(alice, pinned("beyond", 0, 60, 30)).status_code == 422  # more than the cluster has
    samples = scrape(api)
    vcores = {"resource": "vcores"}
    assert value(samples, "rayon_plan_capacity", **vcores) == 16
    assert value(samples, "rayon_plan_used", **vcores) == 4
    assert value(samples, "rayon_plan_used_24h_peak", **vcores) == 8
    assert value(samples, "rayon_plan_used_24h_mean", **vcores) == pytest.approx((4 * 60 + 8 * 120) / (24 * 60))
    assert value(samples, "rayon_plan_capacity_24h_mean", resource="memory") == 64 * 1024
    assert value(samples, "rayon_reservations_active") == 2
    lag = (datetime.now(UTC) - instant(0)).total_seconds()  # the plan's clock is still at the cluster's start
    assert value(samples, "rayon_clock_lag_seconds") == pytest.approx(lag, abs=30)


def test_replan_jobs_are_counted_when_they_end(api: Server) -> None:
    before = scrape(api)
    with api.client("ops") as ops:
        job = ops.post("/v1/admin/replan", json={"time_limit": 1}).json()
        deadline = time.monotonic() + 120
        while ops.get(f"/v1/jobs/{job['id']}").json()["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    after = scrape(api)
    assert value(after, "rayon_replan_jobs_total", state="done") - value(before, "rayon_replan_jobs_total",
                                                                        state="done") == 1
    assert value(after, "rayon_replan_jobs_running") == 0


def test_a_running_job_and_a_cancelled_one_are_tallied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "WORKER", ("sleep", "60"))
    jobs = Jobs(str(tmp_path / "plan.db"))
    collector = JobCollector(jobs)

    def tallied() -> dict[str, float]:
        return {f"{s.name}{s.labels}": s.value for family in collector.collect() for s in family.samples}

    jobs.replan("ops", 1.0, None, None)
    assert tallied()["rayon_replan_jobs_running{}"] == 1
    jobs.close()
    assert tallied() == {"rayon_replan_jobs_running{}": 0, "rayon_replan_jobs_total{'state': 'done'}": 0,
                         "rayon_replan_jobs_total{'state': 'failed'}": 0,
                         "rayon_replan_jobs_total{'state': 'cancelled'}": 1}


def test_a_store_that_does_not_answer_is_a_metric_not_a_failed_scrape(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    store = Store.open(state)
    app = create_app(state, TokenRegistry({}), store=store)

    def down() -> dict[str, str]:
        raise StoreError("database", "the plan store failed: connection refused")

    assert value(parse(get(app, "/metrics").text), "rayon_store_up") == 1
    monkeypatch.setattr(store, "meta", down)
    answer = get(app, "/metrics")
    samples = parse(answer.text)
    assert answer.status_code == 200 and value(samples, "rayon_store_up") == 0
    assert not [name for name, _ in samples if name.startswith("rayon_plan_")]
    store.close()


def get(app: AnyType, path: str) -> httpx.Response:
    """One request to the app in this process."""

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rayon") as client:
            return await client.get(path)

    return asyncio.run(go())


def test_the_store_reports_each_write_s_commit_time_and_no_read_s(tmp_path: Path) -> None:
    with Store.open(tmp_path / "plan.db") as store:
        store.init(CLUSTER, "cluster.yaml")
        times: list[float] = []
        store.time_commits(times.append)
        store.list()
        store.load_plan()
        assert times == []
        store.advance(instant(10))
        store.submit(parse_text(pinned("one", 20, 10, 1))[0])
        assert len(times) == 2 and all(0 < seconds < 10 for seconds in times)
