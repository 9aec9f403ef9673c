"""Progress of the grid: the time left is priced from the finished runs most like the ones to come."""

from __future__ import annotations

from follower.sim.grid import Run
from follower.sim.gridclock import GridClock, duration


def run(label: str, agent: str, slack: float = 3.0, replicate: int = 0) -> Run:
    return Run("reservations", label, f"{label}.yaml", agent=agent, slack=slack, replicate=replicate)


def test_the_time_left_prices_each_run_at_the_runs_most_like_it() -> None:
    runs = [run("week", "milp", replicate=k) for k in range(3)] + [run("mix", "gree", replicate=k) for k in range(3)]
    now = [0.0]
    clock = GridClock(runs, workers=2, clock=lambda: now[0])
    assert clock.left() is None  # nothing to go by yet
    clock.finished(runs[0], 300.0)
    assert clock.left() == (2 * 300.0 + 3 * 300.0) / 2  # the gree runs priced at the only wall time known
    clock.finished(runs[3], 2.0)
    assert clock.left() == (2 * 300.0 + 2 * 2.0) / 2  # now each at its own cell's
    now[0] = 65.0
    line = clock.line(runs[3], 2.0, seed=42)
    assert line == "[2/6] mix gree slack 3 seed 42: 2.0 s (elapsed 1m05s, about 5m02s left)"


def test_another_slack_of_the_same_scenario_and_agent_goes_before_the_mean_of_all() -> None:
    runs = [run("week", "milp", slack=1.5), run("week", "milp", slack=3.0), run("mix", "gree")]
    clock = GridClock(runs, workers=1)
    clock.finished(runs[0], 100.0)
    clock.finished(runs[2], 10.0)
    assert clock.left() == 100.0


def test_the_last_line_has_no_estimate_and_durations_read_at_a_glance() -> None:
    runs = [run("mix", "gree")]
    clock = GridClock(runs, workers=1)
    clock.finished(runs[0], 1.0)
    assert "left" not in clock.line(runs[0], 1.0)
    assert (duration(12.4), duration(245), duration(3725)) == ("12s", "4m05s", "1h02m")


def test_a_fairness_run_is_named_and_priced_by_its_policy_whatever_agent_the_scenario_chose() -> None:
    runs = [Run("fairness", "power", "power.yaml", policy=policy) for policy in ("fair", "uwfq")]
    clock = GridClock(runs, workers=1)
    finished = Run("fairness", "power", "power.yaml", agent="none", policy="fair", seed=1)  # as the run reports it
    clock.finished(finished, 4.0)
    assert clock.line(finished, 4.0, seed=1).startswith("[1/2] power fair seed 1: 4.0 s")
    assert clock.pending[("power", "fair", None)] == 0 and clock.left() == 4.0
