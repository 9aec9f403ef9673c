"""The evaluation grid and its report, on a grid small enough to run in seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli import main
from follower.sim.evaluate import Grid, cells, evaluate, run_grid, with_slack
from follower.sim.metrics import JobRecord, fairness_against
from follower.sim.scenario import load_scenario

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
    grid = Grid(reservations=(small,), agents=("none", "gree-l"), slacks=(3.0,), fairness=(fairness,),
                policies=("fair", "userfair"))
    assert len(grid.runs()) == 4
    report = evaluate(tmp_path / "report", grid, workers=1)
    text = report.read_text()
    assert "## Reservations" in text and "## Fairness" in text
    assert "| small | 3 | none | fair |" in text and "| small | 3 | gree-l | fair |" in text
    assert "| uwfq_super_small | userfair |" in text
    assert (tmp_path / "report" / "sla.png").stat().st_size > 1000
    assert (tmp_path / "report" / "buckets.png").stat().st_size > 1000


def test_the_grid_comes_back_in_grid_order_from_a_process_pool(small: str) -> None:
    grid = Grid(reservations=(small,), agents=("none", "gree", "gree-l"), slacks=(3.0,), fairness=())
    results = run_grid(grid, workers=2)
    assert [run.agent for run, _, _ in results] == ["none", "gree", "gree-l"]
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
                                       "--out", str(tmp_path / "r"), "--workers", "2"])
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
            "--agents", "none", "--slacks", "3", "--workers", "1", "--out", str(out)]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    (out / "report.md").write_text("kept")
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and f"{out / 'report.md'} exists" in again.stderr and "--force" in again.stderr
    assert (out / "report.md").read_text() == "kept"
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "| small | 3 | none |" in (out / "report.md").read_text()


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
                                       "small", "--fairness", "", "--workers", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 simulations" in result.stderr  # the quick agents at the quick slack, on the scenario given
    text = (out / "report.md").read_text()
    assert all(f"| small | 3 | {agent} |" in text for agent in ("none", "static", "gree", "gree-l"))
    assert "milp" not in text and "| small | 1.5 |" not in text
