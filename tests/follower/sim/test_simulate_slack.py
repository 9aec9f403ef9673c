"""`rayon simulate --slack F` makes the run `rayon evaluate` makes at slack F, so a report's cell can be rerun alone."""

from __future__ import annotations

import json

from click.testing import CliRunner

from follower.cli import main
from follower.sim.engine import simulate
from follower.sim.evaluate import with_slack
from follower.sim.grid import EXAMPLES
from follower.sim.scenario import load_scenario

SCENARIO = EXAMPLES / "synthetic_mix.yaml"


def _production(*options: str) -> dict:
    result = CliRunner().invoke(main, ["simulate", str(SCENARIO), "--agent", "gree-l", "--json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["production"]


def test_slack_gives_the_grids_run_at_that_slack() -> None:
    expected = simulate(with_slack(load_scenario(SCENARIO), 10.0), agent="gree-l").summary["production"]
    assert _production("--slack", "10") == json.loads(json.dumps(expected))
    assert _production("--slack", "10")["met_deadline"] != _production("--slack", "1.1")["met_deadline"]


def test_slack_on_a_workload_without_deadlines_to_draw_is_an_error_that_names_the_file() -> None:
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "tiny.yaml"), "--slack", "2"])
    assert result.exit_code == 2
    assert "tiny.yaml: its workload has no deadline slack to vary" in result.output
