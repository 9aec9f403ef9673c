"""The Spark-model scenarios: the tool's configs load as the paper describes them; bad files are told."""

from __future__ import annotations

from pathlib import Path

import pytest

from follower.sim.spark.scenario import SparkScenarioError, load_scenario

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "spark"


@pytest.mark.parametrize(("name", "users", "jobs"), [
    ("2_large_2_small", 4, 20), ("2_power_2_small", 4, 144), ("4_large", 4, 16), ("4_super_small", 4, 120),
    ("google_hetero", 27, 824), ("google_homo", 22, 207)])
def test_every_example_loads_with_its_users_and_jobs(name: str, users: int, jobs: int) -> None:
    specs = load_scenario(EXAMPLES / f"{name}.yaml").jobs(True, 1)
    assert (len({job.user for job in specs}), len(specs)) == (users, jobs)


def test_every_job_is_a_scan_stage_then_a_one_task_result_stage() -> None:
    for job in load_scenario(EXAMPLES / "4_super_small.yaml").jobs(False, 1):
        assert [len(stage.tasks) for stage in job.stages] == [32, 1] and job.stages[1].parents == (0,)


def test_poisson_streams_spread_their_jobs_and_seq_streams_chain_them() -> None:
    jobs = load_scenario(EXAMPLES / "2_large_2_small.yaml").jobs(True, 1)
    small = [job.submit for job in jobs if job.user == "user3_small"]
    assert small == sorted(small) and len(set(small)) == 6
    big = [job for job in jobs if job.user == "user1_big"]
    assert [job.follows for job in big] == [None, *(job.id for job in big[:-1])]


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\nstreams: []\nclasess: {}\n", "unknown key `clasess`"),
    ("classes: {a: 1}\nstreams: [{user: u, class: b}]\n", "names class `b`"),
    ("classes: {a: 1}\nstreams: [{user: u, class: a, mode: burst}]\n", "`para` or `seq`"),
    ("classes: {a: -1}\nstreams: [{user: u, class: a}]\n", "`classes.a` must be a number"),
    ("classes: {a: 1}\n", "has no jobs"),
    ("- a\n", "a scenario is a mapping"),
    ("classes: {a: 1}\nstreams: [{user: u}]\n", "with `user` and `class`"),
    ("classes: {a: 1}\nstreams: [{user: u, class: a, count: 0}]\n", "`count` must be a whole number"),
    ("cluster: {nodes: 3}\nclasses: {a: 1}\nstreams: [{user: u, class: a}]\n", "takes `executors` and `cores`"),
    ("small: 2\nclasses: {a: 1}\nstreams: [{user: u, class: a}]\n", "`small` is a quantile"),
    ("trace: none.csv\n", "cannot read the trace"),
])
def test_a_bad_scenario_is_an_error_naming_the_file_and_the_fix(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(SparkScenarioError, match=message) as caught:
        load_scenario(file)
    assert caught.value.place == str(file)
