"""The Google WTA importer on the UWFQ paper's two subsets, and on small files with bad lines."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from follower.sim.workloads.deadlines import ProductionRule
from follower.sim.workloads.google import GoogleParams, makespan, read_google
from follower.sim.workloads.report import MALFORMED, UNUSABLE
from rdl import parse_text, validate
from rdl.nodes import NodeGroup
from rdl.tree import Resources
from tests.follower.sim.workloads.conftest import START, cluster_of, trace

HEADER = ("workflow_id,ts_submit,ts_submit_seconds,task_count,total_resources,task_id,runtime,"
          "resource_amount_requested,resource_run_time,user_id\n")


def rows(name: str) -> list[dict[str, str]]:
    with trace(name).open() as stream:
        return list(csv.DictReader(stream))


@pytest.mark.parametrize("name", ["google_wta_homo.csv", "google_wta_hetero.csv"])
def test_each_workflow_is_one_job_of_its_user(name: str) -> None:
    table = rows(name)
    workload = read_google(GoogleParams(file=str(trace(name))), seed=1)
    flows = {row["workflow_id"] for row in table}
    assert len(workload.jobs) == len(flows)
    assert len(workload.users) == len({row["user_id"] for row in table})
    assert sum(len(job.tasks) for job in workload.jobs) == len(table)
    assert workload.report is not None and workload.report.issues == []


def test_milliseconds_become_seconds() -> None:
    table = rows("google_wta_homo.csv")
    first = min(float(row["ts_submit"]) for row in table)
    workload = read_google(GoogleParams(file=str(trace("google_wta_homo.csv")), time_scale=15.0), seed=1)
    flow = table[0]["workflow_id"]  # 6389145941: 76 tasks of 0.09998 machines
    job = next(job for job in workload.jobs if job.id == f"wf-{flow}")
    mine = [row for row in table if row["workflow_id"] == flow]
    assert job.submit == pytest.approx((float(mine[0]["ts_submit"]) - first) / 1000)
    by_task = sorted(mine, key=lambda row: float(row["task_id"]))
    assert job.tasks == pytest.approx([float(row["resource_run_time"]) / 1000 * 15 for row in by_task])
    assert job.executors == min(32, len(mine))
    assert job.runtime == job.declared == pytest.approx(makespan(job.tasks, job.executors))
    assert job.user == "u1" and job.tag("user_id") == mine[0]["user_id"]
    assert min(j.submit for j in workload.jobs) == 0.0


def test_plain_run_times_can_be_used_instead_of_machine_seconds() -> None:
    table = rows("google_wta_hetero.csv")
    workload = read_google(GoogleParams(file=str(trace("google_wta_hetero.csv")), task_time="runtime"), seed=1)
    assert sum(sum(job.tasks) for job in workload.jobs) == pytest.approx(
        sum(float(row["runtime"]) for row in table) / 1000)


def test_the_homogeneous_filter_drops_jobs_of_five_times_the_median_work() -> None:
    table = rows("google_wta_homo.csv")
    work: dict[str, float] = defaultdict(float)
    for row in table:
        work[row["workflow_id"]] += float(row["resource_run_time"])
    cutoff = 5 * statistics.median(work.values())
    workload = read_google(GoogleParams(file=str(trace("google_wta_homo.csv")), time_scale=15.0,
                                        drop_larger_than=5.0), seed=1)
    assert len(workload.jobs) == sum(w < cutoff for w in work.values()) == 97
    assert workload.report is not None and workload.report.counts() == {"dropped": 36}


def test_makespan_runs_tasks_in_order_on_the_first_free_executor() -> None:
    assert makespan([4.0, 1.0, 1.0, 1.0, 1.0], 2) == 4.0
    assert makespan([3.0, 3.0, 3.0], 2) == 6.0
    assert makespan([2.0], 8) == 2.0


def test_a_production_share_gets_deadlines_and_valid_reservations() -> None:
    params = GoogleParams(file=str(trace("google_wta_hetero.csv")), time_scale=1.5,
                          production=ProductionRule(fraction=0.5))
    workload = read_google(params, seed=3)
    assert 0.3 < len(workload.production) / len(workload.jobs) < 0.7
    cluster = cluster_of((NodeGroup("executor", 8, Resources.of({"memory": 4096, "vcores": 4})),), step="1s",
                         horizon="1d")
    validate(parse_text("\n".join(job.to_rdl(START, cluster.resource_names) for job in workload.production)),
             cluster)


def test_bad_rows_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "wta.csv"
    path.write_text(HEADER
                    + "7,1000,1.0,2,0.2,0,5000,0.1,500.0,42\n"       # 2: fine
                    + "7,1000,1.0,2,0.2,1,5000,0.1,oops,42\n"        # 3: not a number
                    + "8,2000,2.0,1,0.1,0,5000,0.1,0.0,43\n"         # 4: no work
                    + "7,1500,1.5,2,0.2,2,5000,0.1,500.0,42\n"       # 5: same workflow, another submit time
                    + "9,3000\n")                                    # 6: a short row
    workload = read_google(GoogleParams(file=str(path)), seed=1)
    assert [job.id for job in workload.jobs] == ["wf-7"]
    assert workload.report is not None
    assert [(i.line, i.sort) for i in workload.report.issues] == [
        (3, MALFORMED), (4, UNUSABLE), (5, MALFORMED), (6, MALFORMED)]
    assert str(workload.report.issues[0]) == f"{path}:3: resource_run_time is not a number: `oops`"
