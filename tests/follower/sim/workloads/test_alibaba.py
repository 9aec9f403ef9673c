"""The Alibaba GPU trace importer on the real pod and node files, and on small files with bad lines."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from follower.sim.workloads.alibaba import AlibabaParams, read_alibaba, read_alibaba_nodes
from follower.sim.workloads.deadlines import Slack
from follower.sim.workloads.job import Workload
from follower.sim.workloads.report import MALFORMED, UNUSABLE, TraceError
from follower.sim.workloads.tracefile import Slice
from rdl import parse_text, validate
from rdl.tree import Resources
from tests.follower.sim.workloads.conftest import START, cluster_of, trace

POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time\n")


def pods() -> list[dict[str, str]]:
    with trace("alibaba_openb_pods.csv").open() as stream:
        return list(csv.DictReader(stream))


def test_every_scheduled_pod_is_a_job_and_unscheduled_ones_are_reported(alibaba: Workload) -> None:
    rows = pods()
    scheduled = [row for row in rows if row["scheduled_time"]]
    assert len(alibaba.jobs) == len(scheduled) == 7255
    assert alibaba.report is not None
    assert alibaba.report.read == len(rows) == 8152
    assert alibaba.report.counts() == {"never scheduled": len(rows) - len(scheduled)}
    assert all(issue.sort == UNUSABLE for issue in alibaba.report.issues)


def test_ls_and_guaranteed_pods_are_production_be_and_burstable_best_effort(alibaba: Workload) -> None:
    scheduled = [row for row in pods() if row["scheduled_time"]]
    kinds = {job.id: job.kind for job in alibaba.jobs}
    for row in scheduled:
        expected = "production" if row["qos"] in ("LS", "Guaranteed") else "best_effort"
        assert kinds[row["name"]] == expected, row
    assert len(alibaba.production) == sum(row["qos"] in ("LS", "Guaranteed") for row in scheduled)


def test_pod_fields_and_units_map_to_the_job(alibaba: Workload) -> None:
    # openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
    job = next(job for job in alibaba.jobs if job.id == "openb-pod-0001")
    assert job.driver == Resources.of({"gpu": 0.46, "memory": 12288, "vcores": 6})
    assert (job.executors, job.submit, job.runtime, job.declared) == (0, 427061.0, 12902960.0 - 427061,
                                                                      12902960.0 - 427061)
    assert (job.user, job.tag("qos"), job.tag("phase")) == ("ls", "LS", "Running")


def test_nodes_are_grouped_by_shape(alibaba: Workload) -> None:
    with trace("alibaba_openb_nodes.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    assert sum(group.count for group in alibaba.nodes) == len(rows) == 1523
    shapes = {(row["model"], row["cpu_milli"], row["memory_mib"], row["gpu"]) for row in rows}
    assert len(alibaba.nodes) == len(shapes)
    g2 = next(group for group in alibaba.nodes if group.name.startswith("G2-8gpu"))
    assert g2.size == Resources.of({"gpu": 8, "memory": 393216, "vcores": 96})
    assert g2.count == sum(row["model"] == "G2" and row["cpu_milli"] == "96000" for row in rows)


def test_every_production_reservation_of_a_week_validates(alibaba: Workload) -> None:
    params = AlibabaParams(file=str(trace("alibaba_openb_pods.csv")), slice=Slice(115 * 86400.0, 7 * 86400.0),
                           slack=Slack(floor=2 * 300.0))  # two plan steps of 5 minutes (scenarios set this)
    week = read_alibaba(params, seed=1)
    cluster = cluster_of(alibaba.nodes, step="5m", horizon="400d")
    reservations = parse_text("\n".join(job.to_rdl(START, cluster.resource_names) for job in week.production))
    assert len(reservations) == len(week.production) > 0
    validate(reservations, cluster)


def test_burstable_pods_can_be_production(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER + "p1,1000,1024,0,0,,Burstable,Succeeded,0,100,10\n")
    params = AlibabaParams(file=str(path), production_qos=("LS", "Burstable"), best_effort_qos=("BE",))
    [job] = read_alibaba(params, seed=1).jobs
    assert (job.kind, job.runtime, job.submit) == ("production", 90.0, 0.0)


def test_bad_pod_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER
                    + "p1,1000,1024,0,0,,BE,Running,0,100,10\n"      # 2: fine
                    + "p2,1000,1024,0,0,,BE,Running,0,100\n"         # 3: a field short
                    + "p3,lots,1024,0,0,,BE,Running,0,100,10\n"      # 4: not a number
                    + "p4,1000,1024,0,0,,XX,Running,0,100,10\n"      # 5: unknown qos
                    + "p5,1000,1024,0,0,,LS,Running,5,5,5\n"         # 6: ran for no time
                    + "p6,0,0,0,0,,BE,Running,0,100,10\n")           # 7: asks for nothing
    workload = read_alibaba(AlibabaParams(file=str(path)), seed=1)
    assert [job.id for job in workload.jobs] == ["p1"]
    assert workload.report is not None
    assert [(i.line, i.sort) for i in workload.report.issues] == [
        (3, MALFORMED), (4, MALFORMED), (5, MALFORMED), (6, UNUSABLE), (7, UNUSABLE)]
    assert str(workload.report.issues[1]) == f"{path}:4: cpu_milli is not a number: `lots`"
    with pytest.raises(TraceError, match=r"pods\.csv:3: wrong field count"):
        read_alibaba(replace(AlibabaParams(file=str(path)), strict=True), seed=1)


def test_a_pod_that_fits_no_node_is_reported(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,0,\n")
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER + "p1,16000,1024,0,0,,BE,Running,0,100,10\n")
    workload = read_alibaba(AlibabaParams(file=str(path), nodes_file=str(nodes)), seed=1)
    assert workload.jobs == ()
    assert workload.report is not None and workload.report.counts() == {"fits no node": 1}


def test_a_file_without_the_columns_is_not_this_format(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"other\.csv:1: the header lacks"):
        read_alibaba(AlibabaParams(file=str(path)), seed=1)
    with pytest.raises(ValueError, match=r"other\.csv:1: the header lacks"):
        read_alibaba_nodes(str(path))


def test_arrivals_are_compressed_in_their_order_and_run_times_kept(alibaba: Workload) -> None:
    params = AlibabaParams(file=str(trace("alibaba_openb_pods.csv")),
                           nodes_file=str(trace("alibaba_openb_nodes.csv")),
                           slice=Slice(140 * 86400, 10 * 86400), arrivals_within=86400, node_share=0.01)
    squeezed = read_alibaba(params, seed=1)
    originals = {job.id: job for job in alibaba.jobs}
    assert len(squeezed.jobs) == 2386 and all(0 <= job.submit < 86400 for job in squeezed.jobs)
    for job in squeezed.jobs:
        before = originals[job.id]
        assert job.runtime == before.runtime
        assert job.submit == pytest.approx((before.submit - 140 * 86400) / 10)
    assert [j.id for j in sorted(squeezed.jobs, key=lambda j: (j.submit, j.id))] == \
        [j.id for j in sorted(squeezed.jobs, key=lambda j: (originals[j.id].submit, j.id))]
    counts = {group.name: group.count for group in squeezed.nodes}
    assert counts["G2-8gpu-96c-384g"] == 5 and counts["cpu-96c-768g"] == 1 and len(counts) == 27


def test_an_estimate_error_makes_declared_times_differ_from_run_times_and_deadlines_follow_them() -> None:
    params = AlibabaParams(file=str(trace("alibaba_openb_pods.csv")), estimate_sigma=0.5)
    drawn = read_alibaba(params, seed=1)
    exact = {job.id: job for job in read_alibaba(replace(params, estimate_sigma=0.0), seed=1).jobs}
    assert [job.runtime for job in drawn.jobs] == [exact[job.id].runtime for job in drawn.jobs]
    over = sum(job.declared > job.runtime for job in drawn.jobs)
    under = sum(job.declared < job.runtime for job in drawn.jobs)
    assert over > len(drawn.jobs) // 4 and under > len(drawn.jobs) // 4  # a log-normal error goes both ways
    assert all(job.declared == float(int(job.declared)) >= 1 for job in drawn.jobs)
    # A deadline is a slack multiple of what the job declared: a longer estimate gives a later deadline.
    late = next(job for job in drawn.production if job.declared > 2 * job.runtime)
    assert late.deadline is not None and late.deadline - late.submit >= late.declared
    # The same seed draws the same estimates; sigma 0 draws nothing, so the exact import is what it always was.
    assert read_alibaba(params, seed=1).jobs == drawn.jobs
    assert all(job.declared == job.runtime for job in exact.values())
    # Deadlines as the importer drew them before estimates existed (seed 1): sigma 0 keeps every grid's figures.
    assert [(exact[name].deadline, exact[name].declared) for name in ("openb-pod-0000", "openb-pod-0001")] == [
        (20922896.0, 12537496.0), (35787520.0, 12475899.0)]
