"""The comparison table: one row per scenario × partitioning, UWFQ's reductions computed from the cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from follower.cli.spark import spark_command
from follower.sim.spark.scenario import SparkScenarioError
from follower.sim.spark.table import Cell, markdown, reduction, rows, run_grid, scenario_files

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "spark"


def test_reduction_is_how_much_lower_uwfq_is() -> None:
    assert reduction(26.0, 100.0) == pytest.approx(74.0)
    assert reduction(110.0, 100.0) == pytest.approx(-10.0)


def test_rows_put_uwfq_s_reductions_beside_the_paper_s_and_the_tool_s() -> None:
    cells = [Cell("s", True, "fair", 10.0, 20.0, 3, 6), Cell("s", True, "uwfq", 4.0, 15.0, 3, 6)]
    measured = {("s", "runtime", "DEFAULT_FAIR"): 50.0, ("s", "runtime", "CUSTOM_USERCLUSTERFAIR"): 10.0}
    headers, table = rows(cells, measured=measured)
    assert headers[-4:] == ["uwfq vs fair small %", "paper small %", "uwfq vs fair all %", "tool all %"]
    assert table == [["s", "runtime", "6 (3)", "10.0 / 20.0", "4.0 / 15.0", "+60", "up to 74", "+25", "+80"]]


def test_the_grid_runs_every_policy_and_partitioning() -> None:
    cells = run_grid([EXAMPLES / "4_large.yaml"])
    policies = ("fifo", "fair", "userfair", "jobfq", "uwfq")
    assert {(cell.policy, cell.partitioning) for cell in cells} == {
        (policy, partitioning) for policy in policies for partitioning in (True, False)}
    assert markdown(cells).count("| 4_large |") == 2


def test_rayon_spark_prints_the_markdown_section() -> None:
    result = CliRunner().invoke(spark_command, [str(EXAMPLES / "4_large.yaml"), "--policy", "fair", "--policy",
                                                "uwfq", "--partitioning", "on", "--markdown"])
    assert result.exit_code == 0, result.output
    assert "| 4_large | runtime | 16 (16) |" in result.output


def test_a_folder_without_scenarios_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SparkScenarioError, match="no Spark scenario files"):
        scenario_files([tmp_path])
