"""Scenario files: every example loads, the planner's cluster comes out right, and mistakes name their place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from follower.follow.follower import Follower
from follower.scheduler.config import load_config
from follower.sim.scenario import (
    DEFAULT_POLICY,
    DEFAULT_START,
    Scenario,
    agent_names,
    describe_keys,
    load_scenario,
    parse_scenario,
)
from follower.sim.workloads.job import node_capacity
from planner.admission import Planner
from planner.agents.registry import DEFAULT_AGENT
from planner.store.facade import Store
from rdl import RDLErrors, parse_text, validate
from rdl.cluster import parse_cluster
from rdl.nodes import NodeGroup
from rdl.tree import Resources

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))
NODES = "cluster:\n  nodes: [{name: w, count: 2, memory: 8GiB, vcores: 4}]\n"
JOBS = "workload:\n  jobs: [{id: a, submit: 0s, runtime: 5m, driver: {memory: 1GiB, vcores: 1}}]\n"


def errors_of(text: str, folder: Path | None = None) -> list[str]:
    """The headlines of a scenario's errors (it must have some)."""
    with pytest.raises(RDLErrors) as caught:
        parse_scenario(text, "s.yaml", folder)
    return [error.headline() for error in caught.value.errors]


def test_there_are_example_scenarios() -> None:
    names = {path.stem for path in SCENARIOS}
    assert {"tiny", "synthetic_mix", "ricc_week", "alibaba", "uwfq_power_small", "uwfq_super_small"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda path: path.stem)
def test_every_example_scenario_loads_and_its_production_reservations_validate(path: Path) -> None:
    scenario = load_scenario(path)
    workload = scenario.load_workload()
    assert workload.jobs
    cluster = scenario.plan_cluster(workload)
    assert cluster.capacity == node_capacity(scenario.node_groups(workload))
    assert (cluster.start, cluster.step, cluster.horizon) == (scenario.start, scenario.cluster.step,
                                                              scenario.cluster.horizon)
    texts = [job.to_rdl(cluster.start, cluster.resource_names, cluster.step) for job in workload.production]
    if texts:
        validate(parse_text("\n".join(texts), str(path)), cluster)
    load_config(scenario.scheduler.data)  # the queue scheduler accepts its section
    Follower(**scenario.follower.data)  # and so does the plan follower


def test_the_tiny_scenario_says_what_it_says() -> None:
    scenario = load_scenario(ROOT / "examples" / "scenarios" / "tiny.yaml")
    assert (scenario.name, scenario.seed, scenario.duration, scenario.agent, scenario.policy) == (
        "tiny", 1, 3600.0, "gree-l", "fifo")
    assert scenario.cluster.nodes == (NodeGroup("worker", 2, Resources.of({"memory": 8192, "vcores": 4})),)
    [failure] = scenario.cluster.failures.events
    assert (failure.node, failure.at, failure.repair) == ("worker-1", 2400.0, 600.0)
    etl, adhoc, late = scenario.load_workload().jobs
    assert (etl.id, etl.kind, etl.containers, etl.runtime, etl.declared, etl.deadline) == (
        "etl", "production", 4, 600.0, 600.0, 1800.0)
    assert (adhoc.submit, adhoc.kind, adhoc.queue, adhoc.declared) == (60.0, "best_effort", "default", 300.0)
    assert (late.kind, late.runtime, late.declared, late.deadline) == ("production", 1200.0, 900.0, 2400.0)
    assert scenario.follower.node is not None and scenario.follower.node.start_mark.line > 0


def test_the_planners_cluster_file_round_trips_and_plans(tmp_path: Path) -> None:
    scenario = load_scenario(ROOT / "examples" / "scenarios" / "tiny.yaml")
    workload = scenario.load_workload()
    text = scenario.cluster_yaml(workload)
    assert text.splitlines()[1:5] == ["start: 2026-11-23T00:00:00Z", "step: 1m", "horizon: 1d", "nodes:"]
    with Store.open(tmp_path / "plan.db") as store:
        assert store.init(text) == parse_cluster(text)
    planner = Planner(scenario.plan_cluster(workload))
    for job in workload.production:
        reservation = job.to_reservation(scenario.start, planner.plan.cluster.resource_names)
        assert planner.submit(reservation, scenario.agent).accepted, job.id


def test_defaults() -> None:
    scenario = parse_scenario(NODES + JOBS, "s.yaml")
    assert (scenario.name, scenario.seed, scenario.start, scenario.duration) == ("s", 0, DEFAULT_START, None)
    assert (scenario.agent, scenario.policy) == (DEFAULT_AGENT, DEFAULT_POLICY)
    assert (scenario.cluster.step, scenario.cluster.horizon, scenario.cluster.failures.rate) == (60, 7 * 86400, 0.0)
    assert scenario.scheduler.data == {} and scenario.follower.data == {}


def test_deadline_floors_default_to_two_plan_steps() -> None:
    text = "cluster:\n  nodes: [{name: w, count: 2, memory: 8GiB, vcores: 4}]\n  step: 5m\n"
    scenario = parse_scenario(text + "workload:\n  synthetic: {jobs: 3}\n", "s.yaml")
    assert scenario.workload.params.slack.floor == 600.0
    scenario = parse_scenario(text + "workload:\n  synthetic: {jobs: 3, slack: {floor: 1h}}\n", "s.yaml")
    assert scenario.workload.params.slack.floor == 3600.0


def test_the_seed_drives_the_workload() -> None:
    scenario = parse_scenario(NODES + "workload:\n  synthetic: {jobs: 20}\n", "s.yaml")
    assert scenario.load_workload() == scenario.load_workload()
    assert scenario.with_options(seed=5).load_workload() != scenario.load_workload()


def test_command_line_overrides_are_checked() -> None:
    scenario = parse_scenario(NODES + JOBS, "s.yaml")
    changed = scenario.with_options(agent="none", policy="uwfq", seed=9)
    assert (changed.agent, changed.policy, changed.seed) == ("none", "uwfq", 9)
    assert scenario.with_options() == scenario
    with pytest.raises(ValueError, match=r"unknown agent `gre-l`.*did you mean `gree-l`"):
        scenario.with_options(agent="gre-l")
    with pytest.raises(ValueError, match=r"unknown policy `fiffo`.*did you mean `fifo`"):
        scenario.with_options(policy="fiffo")
    assert agent_names() == ("none", "priority", "capacity", "static", "static-half", "gree", "gree-l", "milp")


def test_an_unknown_key_is_named_with_its_place_and_a_suggestion() -> None:
    [error] = errors_of("seed: 1\nagnet: gree\n" + NODES + JOBS)
    assert error.startswith("s.yaml:2:1: unknown key `agnet` in the scenario")
    assert "did you mean `agent`?" in error


def test_every_mistake_is_reported_at_once_with_its_place() -> None:
    text = ("policy: fiffo\n"
            "cluster:\n  nodes: [{name: w, count: 2, memory: 8GiB, vcores: 4}]\n  step: 90\n"
            "  failures: {rate: 1, events: [{node: w-7, at: 5m}]}\n"
            "workload:\n  synthetic: {jobs: 10, rat: 5, slack: {mean: 0.5}, runtime: 10,"
            " executor: {memory: 1GiB, vcore: 1}}\n")
    errors = errors_of(text)
    expected = [
        r"s\.yaml:1:9: `policy`: unknown `fiffo`.*did you mean `fifo`",
        r"s\.yaml:4:9: `step`: `90` needs a unit for a duration \(did you mean `90m`\?\)",
        r"s\.yaml:5:39: a failure of node `w-7`, which the cluster does not have",
        r"s\.yaml:7:25: unknown key `rat` in `workload.synthetic`.*did you mean `rate`",
        r"s\.yaml:7:47: `mean` in `slack` in `workload.synthetic`: expected a number above 1, got `0.5`",
        r"s\.yaml:7:62: `runtime` in `workload.synthetic`: `10` needs a unit",
        r"s\.yaml:7:76: `executor` in `workload.synthetic`: the cluster has no resource `vcore`.*`vcores`",
    ]
    assert len(errors) == len(expected), errors
    for pattern, error in zip(expected, errors, strict=True):
        assert re.match(pattern, error), (pattern, error)


@pytest.mark.parametrize(("text", "pattern"), [
    (NODES + "workload:\n  synthetic: {}\n  jobs: []\n", r"s\.yaml:4:3: `workload` takes exactly one of"),
    (NODES, r"s\.yaml:1:1: a scenario needs `workload`"),
    ("", r"s\.yaml:1:1: the scenario file is empty"),
    ("cluster: [\n", r"s\.yaml:2:1: not valid YAML"),
    ("cluster:\n  nodes: trace\n" + JOBS, r"s\.yaml:2:10: `nodes: trace` needs a trace that implies nodes"),
    (f"cluster:\n  nodes: trace\nworkload:\n  trace: {{format: alibaba, file: {ROOT / 'pyproject.toml'}}}\n",
     r"s\.yaml:2:10: `nodes: trace` needs a trace that implies nodes"),
    ("cluster:\n  step: 1m\n" + JOBS, r"s\.yaml:2:3: `cluster` needs `nodes`"),
    (NODES + "workload:\n  trace: {format: swf, file: nowhere.swf}\n",
     r"s\.yaml:4:30: `file` in `workload.trace` \(swf\): no such file: .*nowhere\.swf"),
    (NODES + "workload:\n  trace: {format: swff}\n", r"s\.yaml:4:19: `format`: `swff` is not one of.*`swf`"),
    (NODES + "workload:\n  uwfq: {scenario: power_small, burst_jobs: 0}\n",
     r"s\.yaml:4:45: `burst_jobs` in `workload.uwfq` \(power_small\): expected a whole number of at least 1"),
    (NODES + "agent: milpp\n" + JOBS, r"s\.yaml:3:8: `agent`: unknown `milpp`.*did you mean `milp`"),
    (NODES + "seed: -3\n" + JOBS, r"s\.yaml:3:7: `seed`: expected a whole number of 0 or more"),
    (NODES + "duration: 0s\n" + JOBS, r"s\.yaml:3:11: `duration`: must be positive"),
    (NODES + "scheduler: !!python/object:os.system {}\n" + JOBS, r"s\.yaml:3:12: `scheduler`: "),
    (NODES + "workload:\n  jobs: [{id: a, submit: 0s, runtime: 5m, executors: 2}]\n",
     r"s\.yaml:4:10: job `a`: executors need resources: give `executor`"),
    (NODES + "workload:\n  jobs: [{id: a, submit: 0s, runtime: 5m, kind: production, driver: {vcores: 1}}]\n",
     r"s\.yaml:4:10: job `a`: a production job needs a deadline"),
    (NODES + "workload:\n  jobs: [{id: a, submit: 0s, kindd: x}]\n",
     r"s\.yaml:4:30: unknown key `kindd` in a job.*did you mean `kind`"),
    (NODES + "workload:\n  jobs:\n    - {id: a, submit: 0s, runtime: 1m, driver: {vcores: 1}}\n"
     "    - {id: a, submit: 0s, runtime: 1m, driver: {vcores: 1}}\n", r"s\.yaml:6:7: job id `a` is used twice"),
    (NODES + "workload:\n  jobs: [{id: a, submit: 0s, runtime: 1m, driver: {vcores: 64}}]\n",
     r"s\.yaml:4:51: `driver` of a job: a container of \{vcores: 64\} fits on no node"),
    (NODES + "seed: 1\nseed: 2\n" + JOBS, r"s\.yaml:4:1: `seed` is given twice"),
])
def test_a_mistake_names_its_place(text: str, pattern: str) -> None:
    errors = errors_of(text, Path.cwd())
    assert any(re.match(pattern, error) for error in errors), errors


def test_trace_files_are_found_beside_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "log.swf").write_text("; MaxNodes: 2\n; MaxProcs: 8\n"
                                      "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    path = tmp_path / "s.yaml"
    path.write_text("cluster:\n  nodes: trace\nworkload:\n  trace: {format: swf, file: log.swf}\n")
    scenario = load_scenario(path)
    workload = scenario.load_workload()
    assert [job.id for job in workload.jobs] == ["job-1"]
    assert scenario.node_groups(workload) == (NodeGroup("node", 2, Resources.of({"memory": 4096, "vcores": 4})),)


LOG = "; MaxNodes: 2\n; MaxProcs: 8\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
TRACED = "cluster:\n  nodes: trace\nworkload:\n  trace: {format: swf, file: log.swf}\n"


def test_a_trace_not_beside_the_scenario_is_looked_up_in_rayon_traces(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "log.swf").write_text(LOG)
    path = tmp_path / "s.yaml"
    path.write_text(TRACED)
    monkeypatch.delenv("RAYON_TRACES", raising=False)
    with pytest.raises(RDLErrors, match=r"no such file: .*log.swf \(set RAYON_TRACES to a folder that holds it\)"):
        load_scenario(path)
    monkeypatch.setenv("RAYON_TRACES", str(tmp_path / "traces"))
    assert load_scenario(path).workload.params.file == str((tmp_path / "traces" / "log.swf").resolve())
    (tmp_path / "log.swf").write_text(LOG)  # beside the scenario comes first
    assert load_scenario(path).workload.params.file == str((tmp_path / "log.swf").resolve())


def test_a_given_trace_replaces_the_workload_s_file_even_a_missing_one(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.swf"
    copy.write_text(LOG)
    path = tmp_path / "s.yaml"
    path.write_text(TRACED)  # its log.swf does not exist
    scenario = load_scenario(path, trace=copy)
    assert scenario.workload.params.file == str(copy.resolve())
    assert [job.id for job in scenario.load_workload().jobs] == ["job-1"]


def test_a_given_trace_is_refused_for_a_workload_without_one(tmp_path: Path) -> None:
    with pytest.raises(RDLErrors, match=r"s.yaml:4:3: a trace file was given, but `workload.jobs` reads none"):
        parse_scenario(NODES + JOBS, "s.yaml", trace=tmp_path / "log.swf")


def test_every_documented_key_is_in_the_workload_guide() -> None:
    guide = (ROOT / "docs" / "workloads.md").read_text()
    for section, keys in describe_keys().items():
        for key in keys:
            assert f"`{key}`" in guide, f"{section} key `{key}` is not documented"


def test_a_scenario_is_a_value() -> None:
    first = parse_scenario(NODES + JOBS, "s.yaml")
    assert isinstance(first, Scenario) and first == parse_scenario(NODES + JOBS, "s.yaml")
