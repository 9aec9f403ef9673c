"""The evaluation grid and its report, on a grid small enough to run in seconds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from follower.sim import evaluate as evaluate_module
from follower.sim.evaluate import cells, evaluate, run_grid, run_order, with_slack
from follower.sim.grid import RESULTS, Grid
from follower.sim.metrics import JobRecord, fairness_against
from follower.sim.scenario import load_scenario
from follower.sim.spark import table as spark_table
from planner.admission import Planner
from planner.agents.base import Agent
from rdl.cluster import Cluster
from rdl.errors import RayonError
from rdl.tree import Reservation

SMALL = """
name: small
seed: 3
start: 2026-11-23T00:00:00Z
duration: 3h
cluster:
  nodes: [{name: worker, count: 3, memory: 16GiB, vcores: 8}]
  step: 1m
  horizon: 1d
workload:
  synthetic:
    jobs: 16
    rate: 10
    production: 0.5
    users: 3
    executors: [1, 6]
    executor: {memory: 2GiB, vcores: 2}
    driver: {memory: 1GiB, vcores: 1}
    runtime: 5m
    runtime_sigma: 0.5
    min_runtime: 1m
    max_runtime: 30m
    slack: {mean: 3, sigma: 0.5}
"""


@pytest.fixture
def small(tmp_path: Path) -> str:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return str(path)


def test_the_slack_factor_reaches_the_generated_deadlines(small: str) -> None:
    scenario = load_scenario(small)
    tight, loose = (with_slack(scenario, mean).load_workload() for mean in (1.5, 10.0))
    slack = {job.id: (job.deadline or 0) - job.submit for job in tight.production}
    assert all((job.deadline or 0) - job.submit > slack[job.id] for job in loose.production)


def test_a_tiny_grid_writes_a_report_with_both_studies(small: str, tmp_path: Path) -> None:
    fairness = str(Path(__file__).parents[3] / "examples" / "scenarios" / "uwfq_super_small.yaml")
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "gree-l"), slacks=(3.0,), fairness=(fairness,),
                policies=("fair", "userfair"), seeds=1, spark=())
    assert len(grid.runs()) == 4
    report = evaluate(tmp_path / "report", grid, workers=1)
    text = report.read_text()
    assert "## Reservations" in text and "## Fairness" in text
    assert "| small | 3 | none | fair | 1 |" in text and "| small | 3 | gree-l | fair | 1 |" in text
    assert "| uwfq_super_small | userfair | 1 |" in text
    assert "One seed per cell" in text and "The grid: 4 runs in " in text
    for figure in ("sla.png", "best_effort.png", "lost_work.png", "acceptance.png", "plan_shapes.png", "buckets.png"):
        assert (tmp_path / "report" / figure).stat().st_size > 1000
        assert f"]({figure})" in text


def test_the_grid_comes_back_in_grid_order_from_a_process_pool(small: str) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "gree", "gree-l"), slacks=(3.0,), fairness=(), seeds=1)
    results = run_grid(grid, workers=2)
    assert [outcome.run.agent for outcome in results] == ["none", "gree", "gree-l"]
    reservations, fairness = cells(results)
    assert [cell.agent for cell in reservations] == ["none", "gree", "gree-l"] and fairness == []


def test_the_user_fair_baseline_has_no_violations_against_itself() -> None:
    records = [JobRecord("a", "u", "best_effort", 0.0, 10.0, finish=30.0), JobRecord("b", "v", "best_effort", 0.0, 5.0,
                                                                                     finish=12.0)]
    later = [JobRecord("a", "u", "best_effort", 0.0, 10.0, finish=60.0), JobRecord("b", "v", "best_effort", 0.0, 5.0,
                                                                                   finish=10.0)]
    assert fairness_against(records, records) == {"compared": 2, "dvr": 0.0, "dsr": 0.0}
    assert fairness_against(later, records) == {"compared": 2, "dvr": 0.5, "dsr": 1.0}


def test_evaluate_command_rejects_an_unknown_agent_without_running_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evaluate", "--agents", "gree,greedy", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "unknown agent `greedy`" in result.output
    assert not (tmp_path / "r").exists()


def test_evaluate_names_every_scenario_that_does_not_load_before_simulating(small: str, tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(SMALL.replace("synthetic:", "synthetc:"))
    no_slack = str(Path(__file__).parents[3] / "examples" / "scenarios" / "uwfq_super_small.yaml")
    missing = tmp_path / "missing.yaml"
    result = CliRunner().invoke(main, ["evaluate", "--reservations", f"{small},{typo},{no_slack}", "--fairness",
                                       f"{small},{missing}", "--agents", "none", "--slacks", "3",
                                       "--load-scenarios", "", "--out", str(tmp_path / "r"), "--workers", "2"])
    assert result.exit_code == 2, result.output
    assert "3 of 4 scenario(s) do not load" in result.stderr
    assert f"{typo}:" in result.stderr and "unknown key `synthetc`" in result.stderr
    assert f"{no_slack}: " in result.stderr and "no deadline slack to vary" in result.stderr
    assert str(missing) in result.stderr and "nothing was simulated" in result.stderr
    assert "[1/" not in result.stderr and not (tmp_path / "r").exists()


def test_names_are_looked_up_in_the_scenarios_folder_and_a_report_is_not_overwritten(small: str,
                                                                                     tmp_path: Path) -> None:
    out = tmp_path / "r"
    args = ["evaluate", "--scenarios", str(Path(small).parent), "--reservations", "small", "--fairness", "",
            "--agents", "none", "--slacks", "3", "--seeds", "1", "--workers", "1", "--load-scenarios", "", "--no-spark",
            "--out", str(out)]  # the Spark section has tests of its own
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    (out / "report.md").write_text("kept")
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and f"{out / 'report.md'} exists" in again.stderr and "--force" in again.stderr
    assert (out / "report.md").read_text() == "kept"
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "| small | 3 | none | fair | 1 |" in (out / "report.md").read_text()


def test_unknown_names_are_listed_with_the_folder(small: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evaluate", "--scenarios", str(tmp_path), "--reservations", "small,nope",
                                       "--fairness", "gone", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and f"no scenario `nope` in {tmp_path}" in result.stderr
    assert not (tmp_path / "r").exists()


def test_without_the_examples_folder_names_say_where_to_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("follower.cli.simulate.EXAMPLES", tmp_path / "absent")
    result = CliRunner().invoke(main, ["evaluate", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert f"no scenarios folder: {tmp_path / 'absent'} does not exist" in result.stderr
    assert "--scenarios DIR" in result.stderr


def test_quick_takes_the_small_grid_for_what_is_not_given(small: str, tmp_path: Path) -> None:
    out = tmp_path / "q"
    result = CliRunner().invoke(main, ["evaluate", "--quick", "--scenarios", str(Path(small).parent), "--reservations",
                                       "small", "--fairness", "", "--load-scenarios", "small", "--workers", "1",
                                       "--no-spark", "--out", str(out)])
    assert result.exit_code == 0, result.output
    # the quick agents at the quick slack and seeds, on the scenario given; the load study at loads 1 and 2
    assert "45 simulations (15 cells × 3 seeds)" in result.stderr
    assert "[45/45] small " in result.stderr and "left)" in result.stderr  # progress estimates the time left
    text = (out / "report.md").read_text()
    assert all(f"| small | 3 | {agent} | fair | 3 |" in text for agent in ("none", "priority", "capacity", "gree",
                                                                          "gree-l"))
    assert "fewer seeds than the full report's 5" in text
    assert "`milp`" not in text and "| small | 1.5 |" not in text


def test_two_seeds_draw_different_workloads_and_the_cell_keeps_both_and_their_mean(small: str,
                                                                                    tmp_path: Path) -> None:
    grid = Grid(load_scenarios=(), reservations=(small,), agents=("none",), slacks=(3.0,), fairness=(), seeds=2)
    outcomes = run_grid(grid, workers=1)
    assert [outcome.run.seed for outcome in outcomes] == [3, 4]  # the scenario's seed, then the next
    first, second = (outcome.summary for outcome in outcomes)
    assert first["best_effort"]["mean_response_s"] != second["best_effort"]["mean_response_s"]
    [cell], _ = cells(outcomes)
    assert cell.seeds == (3, 4) and cell.summaries == (first, second)
    mean = cell.spread(lambda s: s["best_effort"]["mean_response_s"])
    assert mean is not None and mean.count == 2 and mean.half_width is not None and mean.half_width > 0
    assert mean.mean == pytest.approx((first["best_effort"]["mean_response_s"]
                                       + second["best_effort"]["mean_response_s"]) / 2)


def test_the_report_shows_mean_and_interval_and_the_results_keep_every_seed(small: str, tmp_path: Path) -> None:
    fairness = str(Path(__file__).parents[3] / "examples" / "scenarios" / "uwfq_super_small.yaml")
    grid = Grid(load_scenarios=(), reservations=(small,), agents=("none",), slacks=(3.0,), fairness=(fairness,),
                policies=("fair", "userfair"), seeds=2, spark=())
    report = evaluate(tmp_path / "r", grid, workers=1)
    text = report.read_text()
    assert "| small | 3 | none | fair | 2 | " in text and " ± " in text
    assert "`uwfq_super_small` gave the same figures at every seed" in text  # it draws nothing from its seed
    document = json.loads((tmp_path / "r" / RESULTS).read_text())
    assert document["seeds"] == 2 and document["workers"] == 1 and document["wall_s"] > 0 and document["load"] >= 0
    assert [(run["scenario"], run["policy"], run["seed"]) for run in document["runs"]] == [
        ("small", "fair", 3), ("small", "fair", 4), ("uwfq_super_small", "fair", 1), ("uwfq_super_small", "fair", 2),
        ("uwfq_super_small", "userfair", 1), ("uwfq_super_small", "userfair", 2)]
    assert all("sla_attainment" in run["summary"]["production"] for run in document["runs"])
    assert document["runs"][4]["fairness"]["dvr"] == 0.0  # userfair against itself, at the same seed


def test_runs_start_with_the_milp_then_every_cell_once_before_any_cell_twice() -> None:
    grid = Grid(load_scenarios=(),
                reservations=("a.yaml",), agents=("gree", "milp"), slacks=(3.0,), fairness=("b.yaml",),
                policies=("fair",), seeds=2)
    runs = grid.runs()
    started = [(runs[index].agent or runs[index].policy, runs[index].replicate) for index in run_order(runs)]
    assert started == [("milp", 0), ("milp", 1), ("gree", 0), ("fair", 0), ("gree", 1), ("fair", 1)]


def test_the_milp_time_limit_reaches_the_agent_of_every_planning_run(small: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from follower.sim import evaluate as module

    asked: list[tuple[str, float]] = []
    real = module.simulation_agent

    def recording(name: str, time_limit: float) -> Agent:
        asked.append((name, time_limit))
        return real(name, time_limit)

    monkeypatch.setattr(module, "simulation_agent", recording)
    result = CliRunner().invoke(main, ["evaluate", "--reservations", small, "--fairness", "", "--agents",
                                       "none,gree-l", "--slacks", "3", "--seeds", "1", "--milp-time-limit", "0.7",
                                       "--workers", "1", "--no-spark", "--load-scenarios", "", "--out",
                                       str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert asked == [("gree-l", 0.7)]  # `none` plans nothing: no agent
    assert real("milp", 0.7).time_limit == 0.7  # type: ignore[attr-defined]


SPARK = str(Path(__file__).parents[3] / "examples" / "spark" / "4_super_small.yaml")


def test_the_report_has_the_task_level_uwfq_section_at_the_grid_s_seeds(small: str, tmp_path: Path) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none",), slacks=(3.0,), fairness=(), seeds=2, spark=(SPARK,))
    text = evaluate(tmp_path / "r", grid, workers=1).read_text()
    section = text[text.index("## UWFQ on the task-level Spark model"):]
    assert f"`rayon spark {SPARK} --seeds 2 --markdown`" in section
    assert section.count("| 4_super_small |") == 2  # partitioning on and off
    assert text.index("## UWFQ on the task-level") < text.index("## Published figures")
    kept = json.loads((tmp_path / "r" / "results.json").read_text())["spark"]
    assert kept["files"] == [SPARK] and kept["seeds"] == 2
    assert {(c["scenario"], c["partitioning"]) for c in kept["cells"]} == {("4_super_small", True),
                                                                          ("4_super_small", False)}


def test_render_takes_the_spark_section_from_the_results_and_simulates_nothing(
        small: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none",), slacks=(3.0,), fairness=(), seeds=1, spark=(SPARK,))
    first = evaluate(tmp_path / "r", grid, workers=1).read_text()

    def no_simulation(*_: object, **__: object) -> None:
        raise AssertionError("render simulated")

    monkeypatch.setattr(spark_table, "run_grid", no_simulation)
    monkeypatch.setattr(evaluate_module, "Simulation", no_simulation)
    monkeypatch.setattr(evaluate_module, "run_grid", no_simulation)
    result = CliRunner().invoke(main, ["evaluate", "--render", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    again = (tmp_path / "r" / "report.md").read_text()
    assert again[again.index("## UWFQ"):] == first[first.index("## UWFQ"):]
    assert f"`rayon spark {SPARK} --seeds 1 --markdown`" in again


def test_another_system_s_agent_is_replayed_from_its_source_and_named_in_the_report(small: str,
                                                                                    tmp_path: Path) -> None:
    asked: list[tuple[str, int]] = []

    def source(agent: str, cluster: Cluster, reservations: Sequence[Reservation]) -> tuple[list[dict], list[str]]:
        asked.append((agent, len(reservations)))
        planner = Planner(cluster)
        return [planner.submit(r, "gree", submitted=r.arrival_at(cluster.start)).to_json(planner.plan.clock)
                for r in reservations], []

    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("gree",), slacks=(3.0,), fairness=(), seeds=1, spark=(),
                peers=("yarn-greedy",))
    outcomes = run_grid(grid, workers=1, source=source)
    assert [o.run.agent for o in outcomes] == ["gree", "yarn-greedy"] and asked and asked[0][0] == "yarn-greedy"
    ours, replayed = (o.summary["production"] for o in outcomes)
    assert replayed["accepted"] == ours["accepted"]  # the stand-in decides as gree does, on the same stream
    assert outcomes[1].summary["replayed"]["diverged"] == 0
    with pytest.raises(RayonError, match="need a source"):
        run_grid(grid, workers=1)
    text = evaluate(tmp_path / "r", grid, workers=1, source=source).read_text()
    assert "| small | 3 | yarn-greedy | fair | 1 |" in text and "replayed in the simulator" in text


def test_a_peer_that_cannot_plan_a_scenario_s_cluster_is_left_out_of_it_and_the_report_says_why(
        small: str, tmp_path: Path) -> None:
    gpus = tmp_path / "gpus.yaml"
    gpus.write_text(SMALL.replace("name: small", "name: gpus").replace("vcores: 8}", "vcores: 8, gpu: 2}"))
    asked: list[int] = []

    def source(agent: str, cluster: Cluster, reservations: Sequence[Reservation]) -> tuple[list[dict], list[str]]:
        assert "gpu" not in cluster.resource_names  # the grid never asks for a cluster it cannot plan
        asked.append(len(reservations))
        planner = Planner(cluster)
        return [planner.submit(r, "gree", submitted=r.arrival_at(cluster.start)).to_json(planner.plan.clock)
                for r in reservations], []

    grid = Grid(load_scenarios=(),
                reservations=(small, str(gpus)), agents=("gree",), slacks=(3.0,), fairness=(), seeds=1, spark=(),
                peers=("yarn-greedy", "yarn-aligned"))
    report = evaluate(tmp_path / "r", grid, workers=1, source=source)
    text = report.read_text()
    assert len(asked) == 2  # both peers on `small`, neither on `gpus`
    alone = evaluate(tmp_path / "alone", replace(grid, reservations=(str(gpus),)), workers=1, source=source)
    assert "did not run on `gpus`" in alone.read_text() and "not in this grid" not in alone.read_text()
    assert "| small | 3 | yarn-aligned |" in text and "| gpus | 3 | gree |" in text
    assert "| gpus | 3 | yarn-" not in text
    assert "`yarn-greedy`, `yarn-aligned` did not run on `gpus`: the YARN harness lays plans of memory and " \
           "vcores only, and this cluster also has gpu." in text
    report.unlink()
    again = CliRunner().invoke(main, ["evaluate", "--render", "--no-spark", "--out", str(tmp_path / "r")])
    assert again.exit_code == 0, again.output
    assert report.read_text() == text  # the reason is kept in results.json


def test_the_report_answers_what_planning_buys_and_how_the_agents_compare_seed_by_seed(small: str,
                                                                                       tmp_path: Path) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "gree", "gree-l"), slacks=(3.0,), fairness=(), seeds=2,
                spark=())
    text = evaluate(tmp_path / "r", grid, workers=1).read_text()
    answers = text[text.index("## Answers"):text.index("## Reservations")]
    assert "| small | 3 | none | " in answers and "| small | 3 | gree | " in answers
    assert "| small | 3 | gree-l | " not in answers  # the reference is not compared with itself
    assert answers.count(" ± ") >= 3  # two seeds: every paired figure has its interval


def test_a_report_is_written_again_from_its_results_alone(small: str, tmp_path: Path) -> None:
    fairness = str(Path(__file__).parents[3] / "examples" / "scenarios" / "uwfq_super_small.yaml")
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "gree-l"), slacks=(3.0,), fairness=(fairness,),
                policies=("fair", "userfair"), seeds=2, spark=())
    report = evaluate(tmp_path / "r", grid, workers=1)
    written = report.read_text()
    report.unlink()
    result = CliRunner().invoke(main, ["evaluate", "--render", "--no-spark", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert report.read_text() == written
    missing = CliRunner().invoke(main, ["evaluate", "--render", "--out", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "results.json" in missing.stderr


def test_a_stopped_grid_goes_on_from_its_kept_runs_and_a_changed_scenario_runs_again(
        small: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import follower.sim.evaluate as evaluation

    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "gree", "gree-l"), slacks=(3.0,), fairness=(), seeds=1, spark=())
    real, ran = evaluation.run_one, []

    def stops_at_the_third(run: evaluation.Run, *args: object, **kwargs: object) -> evaluation.Outcome:
        if len(ran) == 2:
            raise KeyboardInterrupt  # the session ended
        ran.append(run.agent)
        return real(run, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluation, "run_one", stops_at_the_third)
    out = tmp_path / "report"
    with pytest.raises(KeyboardInterrupt):
        evaluate(out, grid, workers=1)
    assert not (out / RESULTS).exists() and len(list((out / "partial").glob("*.pickle"))) == 2

    counted: list[str | None] = []
    monkeypatch.setattr(evaluation, "run_one", lambda run, *a, **k: counted.append(run.agent) or real(run, *a, **k))
    evaluate(out, grid, workers=1)
    assert len(counted) == 1  # only the run the first attempt did not finish
    document = json.loads((out / RESULTS).read_text())
    assert [run["agent"] for run in document["runs"]] == ["none", "gree", "gree-l"]
    assert not (out / "partial").exists()  # results written: nothing kept any more

    fresh = evaluate(tmp_path / "fresh", grid, workers=1)  # the same figures as a grid run in one go
    figures = [{**run, "wall_s": None} for run in json.loads((fresh.parent / RESULTS).read_text())["runs"]]
    assert figures == [{**run, "wall_s": None} for run in document["runs"]]

    kept = evaluation.grid_checkpoint(tmp_path / "again", grid)
    kept.save(grid.runs()[0], run_grid(grid, workers=1)[0])
    assert kept.kept(grid.runs()) == {0}
    Path(small).write_text(SMALL.replace("jobs: 16", "jobs: 12"))
    assert kept.kept(grid.runs()) == set()  # the scenario changed: its kept run is not taken for the new one


def test_the_load_study_finds_the_highest_load_each_agent_carries(small: str, tmp_path: Path) -> None:
    grid = Grid(reservations=(), fairness=(), spark=(), load_scenarios=(small,), loads=(1.0, 4.0),
                load_agents=("none", "gree-l"), seeds=1)
    runs = grid.runs()
    assert [(run.study, run.agent, run.load) for run in runs] == [
        ("load", "none", 1.0), ("load", "none", 4.0), ("load", "gree-l", 1.0), ("load", "gree-l", 4.0)]
    text = evaluate(tmp_path / "r", grid, workers=1).read_text()
    assert "## Load: how much more work does the same cluster carry?" in text
    assert "| small | none | " in text and "| small | gree-l | " in text
    document = json.loads((tmp_path / "r" / "results.json").read_text())
    assert sorted({run["load"] for run in document["runs"]}) == [1.0, 4.0]


def test_a_load_is_the_same_jobs_arriving_faster() -> None:
    from follower.sim.load import at_load, carried

    workload = load_scenario(str(Path(__file__).parents[3] / "examples" / "scenarios" / "tiny.yaml")).load_workload()
    faster = at_load(workload, 2.0)
    for before, after in zip(workload.jobs, faster.jobs, strict=True):
        assert after.submit == before.submit / 2 and after.runtime == before.runtime
        assert (after.deadline is None) == (before.deadline is None)
        if before.deadline is not None and after.deadline is not None:
            assert after.deadline - after.submit == before.deadline - before.submit
    assert at_load(workload, 1.0) is workload
    with pytest.raises(ValueError, match="positive"):
        at_load(workload, 0.0)
    assert carried([(1.0, 0.99, 1.2), (2.0, 0.97, 1.9), (3.0, 0.90, 1.5), (4.0, 1.0, 1.0)]) == 2.0
    assert carried([(1.0, 0.80, 1.0)]) is None


def test_a_scenario_can_run_more_seeds_than_the_rest(small: str) -> None:
    grid = Grid(load_scenarios=(small,), loads=(1.0,), load_agents=("none",), reservations=(small,),
                agents=("none",), slacks=(3.0,), fairness=(), seeds=2, seeds_for=(("small", 4),), spark=())
    assert [run.replicate for run in grid.runs() if run.study == "reservations"] == [0, 1, 2, 3]
    assert [run.replicate for run in grid.runs() if run.study == "load"] == [0, 1, 2, 3]
    assert Grid(seeds=2, seeds_for=()).seeds_of("x.yaml") == 2
