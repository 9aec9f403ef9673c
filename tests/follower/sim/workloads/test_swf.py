"""The SWF importer on the real RICC and NASA logs, and on small files with bad lines."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest

from follower.sim.workloads.deadlines import ProductionRule, Slack
from follower.sim.workloads.job import Workload
from follower.sim.workloads.report import MALFORMED, UNUSABLE, TraceError
from follower.sim.workloads.swf import SwfParams, read_swf
from follower.sim.workloads.tracefile import Slice
from rdl import parse_text, validate
from rdl.nodes import NodeGroup
from rdl.tree import Resources
from tests.follower.sim.workloads.conftest import START, WEEK, cluster_of, trace

HEADER = "; MaxNodes: 4\n; MaxProcs: 16\n;\n"
GOOD = "    1      0   5   100   8  -1 -1   8   200  2048  1  7  1 -1  1 -1 -1 -1\n"


def data_lines(path: Path) -> list[list[str]]:
    """The first four fields of an SWF file's data lines: counted here independently of the importer."""
    with gzip.open(path, "rt") as stream:
        return [line.split(None, 4)[:4] for line in stream if line.strip() and not line.startswith(";")]


def write(tmp_path: Path, text: str, name: str = "log.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_ricc_week_holds_every_job_submitted_in_it(ricc_week: Workload) -> None:
    lines = data_lines(trace("ricc_2010.swf.gz"))
    in_week = [f for f in lines if 0 <= float(f[1]) < WEEK and float(f[3]) > 0]
    assert len(ricc_week.jobs) == len(in_week) == 5670
    report = ricc_week.report
    assert report is not None
    assert (report.read, report.kept, report.outside, report.skipped) == (447794, 5670, 447794 - 5670, 0)


def test_ricc_fields_map_to_the_job(ricc_week: Workload) -> None:
    # `    2  1136  0 244682  128  -1 -1  128 259200 1024000  1  2  2 -1  1 -1 -1 -1`
    job = next(job for job in ricc_week.jobs if job.id == "job-2")
    assert (job.submit, job.runtime, job.declared, job.user) == (1136.0, 244682.0, 259200.0, "u2")
    assert (job.executors, job.containers) == (127, 128)
    assert job.executor == job.driver == Resources.of({"memory": 1024000 / 1024, "vcores": 1})
    assert (job.tag("swf_queue"), job.tag("swf_status"), job.tag("declared_from")) == ("1", "1", "requested time")


def test_ricc_header_gives_its_nodes(ricc_week: Workload) -> None:
    assert ricc_week.nodes == (NodeGroup("node", 1024, Resources.of({"memory": 12288, "vcores": 8})),)


def test_ricc_production_share_and_deadlines(ricc_week: Workload) -> None:
    production = ricc_week.production
    assert 0.18 < len(production) / len(ricc_week.jobs) < 0.22
    assert all(job.deadline is not None and job.deadline >= job.submit + job.declared + 120 for job in production)
    assert {job.queue for job in production} == {"production"}


def test_every_ricc_production_reservation_parses_and_validates(ricc_week: Workload) -> None:
    cluster = cluster_of(ricc_week.nodes)
    text = "\n".join(job.to_rdl(START, cluster.resource_names) for job in ricc_week.production)
    reservations = parse_text(text)
    assert len(reservations) == len(ricc_week.production)
    validate(reservations, cluster)


def test_a_later_slice_starts_at_time_zero_and_keeps_each_jobs_draws(tmp_path: Path) -> None:
    lines = [f"{n:5d} {n * 1000:8d} 0 100 4 -1 -1 4 200 -1 1 {n % 3} 1 -1 1 -1 -1 -1\n" for n in range(1, 21)]
    path = write(tmp_path, HEADER + "".join(lines))
    params = SwfParams(file=str(path), production=ProductionRule(fraction=0.5), slack=Slack(mean=3.0))
    whole = read_swf(params, seed=4)
    part = read_swf(replace(params, slice=Slice(5000.0, 5000.0)), seed=4)
    assert [job.id for job in part.jobs] == [f"job-{n}" for n in range(5, 10)]
    assert part.jobs[0].submit == 0.0
    for job in part.jobs:
        same = next(j for j in whole.jobs if j.id == job.id)
        assert job.kind == same.kind
        if job.deadline is not None:
            assert job.deadline - job.submit == same.deadline - same.submit  # type: ignore[operator]
    assert part.report is not None and part.report.outside == 15


def test_missing_values_fall_back_as_documented(tmp_path: Path) -> None:
    # allocated processors missing (use requested: 6), requested time and memory missing
    path = write(tmp_path, HEADER + "  1  10  -1  50  -1  -1 -1  6  -1  -1  1  -1  1 -1 -1 -1 -1 -1\n")
    [job] = read_swf(SwfParams(file=str(path), default_memory=512.0, production=ProductionRule()), seed=1).jobs
    assert (job.containers, job.declared, job.user, job.tag("declared_from")) == (6, 50.0, "unknown", "run time")
    assert job.executor == Resources.of({"memory": 512, "vcores": 1})


def test_queues_can_name_the_production_jobs(tmp_path: Path) -> None:
    lines = GOOD + GOOD.replace("    1      0", "    2     10").replace("  1 -1 -1 -1\n", "  2 -1 -1 -1\n")
    path = write(tmp_path, HEADER + lines)
    jobs = read_swf(SwfParams(file=str(path), production=ProductionRule(queues=("2",))), seed=1).jobs
    assert [(job.id, job.kind) for job in jobs] == [("job-1", "best_effort"), ("job-2", "production")]


def test_bad_lines_are_reported_with_file_and_line_and_skipped(tmp_path: Path) -> None:
    text = (HEADER + GOOD                                              # line 4: fine
            + "  2  10  0  100  4 -1 -1\n"                                # 5: too few fields
            + GOOD.replace(" 100 ", " 1x0 ")                             # 6: not a number
            + GOOD.replace("    1      0   5   100", "    3     20   5    -1")  # 7: no run time
            + "\n"                                                        # 8: blank: ignored
            + GOOD.replace("   8  -1 -1   8 ", "  99  -1 -1  99 ")       # 9: more processors than the machine
            + GOOD.replace("  2048  1", "  99999999  1"))                # 10: more memory than a node
    path = write(tmp_path, text)
    workload = read_swf(SwfParams(file=str(path)), seed=1)
    report = workload.report
    assert report is not None
    assert [(issue.line, issue.sort) for issue in report.issues] == [
        (5, MALFORMED), (6, MALFORMED), (7, UNUSABLE), (9, UNUSABLE), (10, UNUSABLE)]
    assert str(report.issues[0]).startswith(f"{path}:5: wrong field count")
    assert "field 4 is not a number: `1x0`" in str(report.issues[1])
    assert (report.read, report.kept, len(workload.jobs)) == (6, 1, 1)
    assert "5 skipped" in report.summary()


def test_strict_mode_raises_at_the_first_malformed_line(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + GOOD + GOOD.replace(" 100 ", " abc "))
    with pytest.raises(TraceError, match=r"log\.swf:5: field 4 is not a number"):
        read_swf(SwfParams(file=str(path), strict=True), seed=1)


def test_nasa_log_jobs_nodes_and_missing_run_times() -> None:
    path = trace("nasa_ipsc_1993.swf.gz")
    lines = data_lines(path)
    workload = read_swf(SwfParams(file=str(path), production=ProductionRule(fraction=0.1)), seed=2)
    assert len(workload.jobs) == sum(float(f[3]) > 0 for f in lines)
    assert workload.report is not None
    assert workload.report.counts() == {"run time missing": sum(float(f[3]) <= 0 for f in lines)}
    assert workload.nodes == (NodeGroup("node", 128, Resources.of({"memory": 1024, "vcores": 1})),)
    assert all(job.declared == job.runtime for job in workload.jobs)  # NASA has no requested times


def test_an_import_is_deterministic_and_the_seed_picks_the_production_jobs() -> None:
    params = SwfParams(file=str(trace("nasa_ipsc_1993.swf.gz")), production=ProductionRule(fraction=0.3))
    first, again, other = read_swf(params, seed=8), read_swf(params, seed=8), read_swf(params, seed=9)
    assert repr(first.jobs) == repr(again.jobs)
    assert [job.kind for job in first.jobs] != [job.kind for job in other.jobs]
