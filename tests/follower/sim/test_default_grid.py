"""`rayon evaluate` with no options is the grid the committed report was made from, so it reproduces the report."""

from __future__ import annotations

import json
from collections import Counter

from follower.sim.grid import MILP, REPOSITORY, Grid

COMMITTED = REPOSITORY / "docs" / "evaluation" / "results.json"


def test_the_default_grid_is_the_committed_reports_run_for_run() -> None:
    kept = json.loads(COMMITTED.read_text())["runs"]
    committed = Counter((r["study"], r["scenario"], r["agent"] if r["study"] != "fairness" else None,
                         r["policy"] if r["study"] == "fairness" else None, r["slack"], r["load"]) for r in kept)
    default = Counter((run.study, run.label, run.agent, run.policy, run.slack, run.load) for run in Grid().runs())
    assert default == committed


def test_the_milp_joins_only_when_named() -> None:
    assert MILP not in Grid().agents
