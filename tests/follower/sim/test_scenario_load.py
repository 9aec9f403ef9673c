"""The evaluation's reservation scenarios measure something: they load their cluster, and planning changes the
answer (the report once had a scenario at 0.03% utilisation where every agent gave the same figures)."""

from __future__ import annotations

import json
from typing import Any as AnyType

import pytest
from click.testing import CliRunner

from follower.cli import main
from follower.sim.grid import EXAMPLES, RESERVATION_SCENARIOS

pytestmark = pytest.mark.slow
LEAST_UTILISATION = 0.05


def simulate(scenario: str, agent: str) -> dict[str, AnyType]:
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / f"{scenario}.yaml"), "--agent", agent, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, AnyType] = json.loads(result.stdout)
    return data


def answer(run: dict[str, AnyType]) -> tuple[AnyType, ...]:
    """What a reader compares between agents: deadlines met, preemptions, best-effort response."""
    return (run["production"]["met_deadline"], run["production"]["sla_attainment"], run["preemptions"],
            run["best_effort"].get("mean_response_s"))


@pytest.mark.parametrize("scenario", RESERVATION_SCENARIOS)
def test_each_reservation_scenario_loads_its_cluster_and_planning_changes_the_answer(scenario: str) -> None:
    runs = {agent: simulate(scenario, agent) for agent in ("none", "gree")}
    for agent, run in runs.items():
        assert run["utilization"] >= LEAST_UTILISATION, f"{scenario} with {agent}: {run['utilization']:.2%} busy"
    assert answer(runs["none"]) != answer(runs["gree"]), f"{scenario}: planning changed nothing"
