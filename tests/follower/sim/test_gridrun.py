"""The grid on Dask's distributed: a local cluster of two workers gives the serial run's figures, and a worker
killed mid-grid loses no run and counts none twice."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from follower.sim.checkpoint import Checkpoint
from follower.sim.evaluate import Grid, run_grid
from follower.sim.gridrun import grid_client, run_each
from tests.follower.sim.test_evaluate import SMALL

pytest.importorskip("distributed")


@pytest.fixture
def small(tmp_path: Path) -> str:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return str(path)


def figures(outcomes: list) -> list[tuple[str, int, str]]:  # type: ignore[type-arg]
    return [(o.run.agent, o.run.seed, repr(sorted(o.summary["production"].items()))) for o in outcomes]


def test_a_local_cluster_gives_the_figures_of_a_serial_run(small: str) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "capacity", "gree-l"), slacks=(3.0,), fairness=(), seeds=2)
    assert figures(run_grid(grid, workers=2)) == figures(run_grid(grid, workers=1))


def test_a_worker_killed_mid_grid_loses_no_run_and_counts_none_twice(small: str, tmp_path: Path) -> None:
    grid = Grid(load_scenarios=(),
                reservations=(small,), agents=("none", "priority", "gree", "gree-l"), slacks=(3.0,), fairness=(),
                seeds=3)
    runs = grid.runs()
    checkpoint = Checkpoint(tmp_path / "partial", grid.milp_time_limit)
    seen: list[int] = []
    with grid_client(None, 2) as client:
        pids = sorted(client.run(os.getpid).values())
        assert len(pids) == 2

        def finished(index: int, outcome: object) -> None:
            if not seen:
                os.kill(pids[0], signal.SIGKILL)  # one worker dies with runs of its own under way
            seen.append(index)
            checkpoint.save(runs[index], outcome)  # type: ignore[arg-type]

        from follower.sim.evaluate import run_one

        run_each(client, run_one, runs, (grid.milp_time_limit, None), finished)
    assert sorted(seen) == list(range(len(runs)))  # every run once, none twice
    kept = checkpoint.done(runs)
    assert figures([kept[i] for i in range(len(runs))]) == figures(run_grid(grid, workers=1))
