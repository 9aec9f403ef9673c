"""The grid on Dask's distributed: a local cluster of two workers gives the serial run's figures, and a worker
killed mid-grid loses no run and counts none twice."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from follower.sim.checkpoint import Checkpoint
from follower.sim.evaluate import run_grid
from follower.sim.grid import Grid
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


def test_evaluate_runs_on_a_dask_cluster_given_by_its_address(small: str, tmp_path: Path) -> None:
    from click.testing import CliRunner
    from distributed import LocalCluster

    from follower.cli import main

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        result = CliRunner().invoke(main, ["evaluate", "--reservations", small, "--agents", "none,gree-l", "--slacks",
                                           "3", "--seeds", "2", "--fairness", "", "--load-scenarios", "", "--no-spark",
                                           "--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert f"on the Dask cluster at {cluster.scheduler_address}" in result.stderr and "[4/4]" in result.stderr
    assert "| small | 3 | gree-l | fair | 2 |" in (tmp_path / "r" / "report.md").read_text()


def test_a_local_cluster_left_without_workers_fails_the_grid_rather_than_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    from follower.sim import gridrun

    monkeypatch.setattr(gridrun, "NO_WORKERS_TIMEOUT", "1s")
    with grid_client(None, 1) as client:
        workers = list(client.scheduler_info()["workers"])
        client.retire_workers(workers, close_workers=True, remove=True)  # gone, and their nannies with them
        assert client.scheduler_info()["workers"] == {}
        with pytest.raises(ConnectionError, match="no Dask worker ran for 1s"):
            run_each(client, abs, [-1, -2], (), lambda index, outcome: None)
