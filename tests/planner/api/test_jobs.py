"""Re-planning over HTTP: an admin starts it, it runs in a worker process, the server keeps answering."""

from __future__ import annotations

import time
from pathlib import Path

from planner.api.jobs import Jobs
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, Server, pinned, stored_violations, submit

POLL_TIMEOUT = 180.0


def test_replan_runs_off_the_request_path_while_health_and_submissions_are_answered(api: Server) -> None:
    with api.client("alice") as alice, api.client("ops") as ops, api.client() as anonymous:
        for index in range(6):
            text = (f"reservation r{index} deadline=+{120 + 30 * index}m "
                    f"{{ atom(b={{vcores: 1}}, g=2, h=4, l=10m, w={40 + 20 * index}m) }}")
            assert submit(alice, text).json()["accepted"]
        answer = ops.post("/v1/admin/replan", json={"time_limit": 2})
        assert answer.status_code == 202
        job = answer.json()  # answered before the worker process has even started the solver
        assert job["status"] in ("queued", "running") and answer.headers["location"] == f"/v1/jobs/{job['id']}"
        assert ops.post("/v1/admin/replan").status_code == 409  # one at a time
        answered_while_running, submitted_during = 0, False
        deadline = time.monotonic() + POLL_TIMEOUT
        while job["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            # Answered at all while the job runs: off the request path (how fast depends on the machine).
            assert anonymous.get("/v1/health").status_code == 200
            assert anonymous.get("/v1/ready").json()["status"] == "ready"
            if not submitted_during:
                assert submit(alice, pinned("during", 600, 30, 2)).json()["accepted"]
                submitted_during = True
            job = ops.get(f"/v1/jobs/{job['id']}").json()
            answered_while_running += job["status"] in ("queued", "running")
            time.sleep(0.05)
        assert answered_while_running >= 3
        assert job["status"] == "done", job
        assert job["result"]["status"] in ("optimal", "feasible", "timeout") and job["requested_by"] == "ops"
        assert job["started"] >= job["submitted"] and job["finished"] >= job["started"]
        assert alice.get("/v1/reservations/during").json()["state"] == "accepted"
        assert ops.get("/v1/log", params={"limit": 1}).json()["entries"][0]["action"] == "replan"
    assert stored_violations(api.state) == []


def test_replan_needs_an_admin_and_jobs_are_theirs_to_read(api: Server) -> None:
    with api.client("alice") as alice, api.client("ops") as ops:
        refused = alice.post("/v1/admin/replan")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        unknown_solver = ops.post("/v1/admin/replan", json={"solver": "higs"})
        assert unknown_solver.status_code == 422 and "did you mean `highs`" in unknown_solver.json()["error"]["hint"]
        bad_limit = ops.post("/v1/admin/replan", json={"time_limit": 0})
        assert bad_limit.status_code == 422
        for odd in ({"time_limit": True}, {"gap": False}, {"time_limit": "30"}, {"solver": 1}):
            refused = ops.post("/v1/admin/replan", json=odd)  # found by schemathesis: a boolean started a replan
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "input", odd
        job = ops.post("/v1/admin/replan", json={"time_limit": 1}).json()
        assert alice.get(f"/v1/jobs/{job['id']}").status_code == 403
        assert ops.get("/v1/jobs/0123456789abcdef").status_code == 404
        deadline = time.monotonic() + POLL_TIMEOUT
        while ops.get(f"/v1/jobs/{job['id']}").json()["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        done = ops.get(f"/v1/jobs/{job['id']}").json()
    assert done["status"] == "done" and done["result"]["changed"] is False  # an empty plan: nothing to move


def finished(jobs: Jobs, job_id: str) -> dict[str, object]:
    """The job's JSON once it has finished."""
    assert jobs.get(job_id).done.wait(POLL_TIMEOUT)
    return jobs.get(job_id).to_json()


def test_a_replan_whose_worker_died_fails_and_the_next_one_runs(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    jobs = Jobs(str(state))
    try:
        first = jobs.replan("ops", 1.0, None, None)
        first.process.kill()  # long before a spawned worker has imported the planner and answered
        died = finished(jobs, first.id)
        assert died["status"] == "failed" and "ended without an answer" in died["error"]["message"]  # type: ignore
        second = jobs.replan("ops", 1.0, None, None)
        done = finished(jobs, second.id)
        assert done["status"] == "done" and done["result"]["status"] in ("optimal", "feasible")  # type: ignore
    finally:
        jobs.close()


def test_a_cancelled_replan_ends_its_worker_and_changes_nothing(api: Server) -> None:
    with api.client("alice") as alice, api.client("ops") as ops:
        assert alice.post("/v1/reservations", content=pinned("kept", 0, 30, 2)).status_code == 201
        job = ops.post("/v1/admin/replan", json={"time_limit": 60}).json()
        assert alice.delete(f"/v1/jobs/{job['id']}").status_code == 403
        cancelled = ops.delete(f"/v1/jobs/{job['id']}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] in ("cancelled", "done")
        assert ops.post("/v1/admin/replan", json={"time_limit": 1}).status_code == 202  # no longer busy
        assert ops.post("/v1/admin/replan", json={"time_limit": 1e308}).status_code == 422  # beyond the cap
        assert alice.get("/v1/reservations/kept").json()["state"] == "accepted"
    assert stored_violations(api.state) == []


def test_closing_the_jobs_ends_every_worker(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    jobs = Jobs(str(state))
    job = jobs.replan("ops", 60.0, None, None)
    jobs.close()
    assert job.process.poll() is not None and job.to_json()["status"] in ("cancelled", "done")
