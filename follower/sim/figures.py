"""The evaluation's figures: each a mean over the seeds with its 95 % interval as an error bar.

- `sla.png`: SLA attainment per agent and slack factor, each scenario's panel zoomed to the range
  its intervals span (a scale from 0 hides the difference between 93 % and 100 % that matters);
- `best_effort.png`: best-effort mean response by job size (the run-time percentile buckets),
  per agent, as a ratio to the time-agnostic baseline `none` at the same seed (what reserving
  for production costs the rest; absolute times differ by orders of magnitude between sizes and
  between the seeds' workloads, and are in the table);
- `lost_work.png`: work thrown away by preemption and failures, as a share of the work the jobs needed, per
  agent and slack factor (normalised: a count of preempted containers weighs a one-second task like an
  hour of an MPI gang);
- `acceptance.png`: production jobs accepted over the run, by arrival, per planning agent (a plan that stops
  accepting shows as a falling line: the frozen horizon of issue #28 would have shown at a glance);
- `plan_shapes.png`: what GREE and GREE-L planned over time on one run (vcores held by accepted leases);
- `buckets.png`: the fairness study's mean response by job size, per policy (on a log scale when
  the sizes' responses differ by orders of magnitude).
Every agent and policy keeps one colour across the figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

from follower.sim.baselines import NO_AGENT
from follower.sim.cell import Cell, Reader, bucket_response
from follower.sim.metrics import SIZE_BUCKETS
from follower.sim.peers import PEER_AGENTS
from follower.sim.scenario import agent_names
from follower.sim.setup import SIMULATION_POLICIES
from follower.sim.spread import Spread

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend is chosen before pyplot loads
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

Series = tuple[str, list[Spread | None]]
BUCKET_LABELS = [f"{low:g}–{high:g} %" for low, high in SIZE_BUCKETS]
LEGEND_ENTRY = 1.3  # inches one legend entry takes across
LEGEND_ROW = 0.28  # inches one row of the legend takes down
TICKS = 10  # font size of tick labels and legends
_COLOURED = (*agent_names(), *PEER_AGENTS, *SIMULATION_POLICIES)  # agents and policies share no figure


def colour(name: str) -> str:
    """The colour of an agent or policy, the same in every figure."""
    return f"C{_COLOURED.index(name) % 10}" if name in _COLOURED else "0.4"


def scenarios_of(cells: Sequence[Cell]) -> list[str]:
    """The scenarios, in grid order."""
    return list(dict.fromkeys(cell.scenario for cell in cells))


def agents_of(cells: Sequence[Cell]) -> list[str]:
    """The agents, in the order of `rayon simulate --agent`'s choices."""
    order = list(agent_names())
    return sorted({cell.agent for cell in cells}, key=lambda a: (order.index(a) if a in order else len(order), a))


def slacks_of(cells: Sequence[Cell], scenario: str) -> list[float]:
    """The slack factors `scenario` ran at, smallest first."""
    return sorted({cell.slack or 0.0 for cell in cells if cell.scenario == scenario})


def find(cells: Sequence[Cell], scenario: str, slack: float | None, option: str) -> Cell | None:
    """The cell of `scenario` at `slack` (None: any) with agent or policy `option`."""
    for cell in cells:
        if cell.scenario == scenario and cell.option == option and (slack is None or (cell.slack or 0.0) == slack):
            return cell
    return None


def measured(cell: Cell | None, get: Reader) -> Spread | None:
    """The spread of a figure over a cell's seeds (None without the cell)."""
    return None if cell is None else cell.spread(get)


def draw_series(panel: Axes, groups: Sequence[str], series: Sequence[Series], bars: bool = False,
                within: tuple[float, float] = (-math.inf, math.inf)) -> None:
    """One marker (or bar) per series in each group along x, dodged, with its 95 % interval as an error bar (cut
    to `within`: a share's interval ends at 100 %)."""
    width = 0.8 / max(1, len(series))
    for index, (name, values) in enumerate(series):
        offset = (index - (len(series) - 1) / 2) * width
        points = [(group + offset, value) for group, value in enumerate(values) if value is not None]
        if not points:
            continue
        xs = [x for x, _ in points]
        means = [value.mean for _, value in points]
        errors = [[value.mean - max(within[0], value.low) for _, value in points],
                  [min(within[1], value.high) - value.mean for _, value in points]]
        if bars:
            panel.bar(xs, means, width * 0.9, yerr=errors, capsize=3, color=colour(name), label=name,
                      error_kw={"ecolor": "0.3", "elinewidth": 1.2})
        else:
            panel.errorbar(xs, means, yerr=errors, fmt="o", markersize=6, capsize=4, elinewidth=1.5,
                           color=colour(name), label=name)
    panel.set_xticks(range(len(groups)), list(groups), fontsize=TICKS)
    panel.set_xlim(-0.5, len(groups) - 0.5)
    panel.tick_params(axis="y", labelsize=TICKS)
    panel.grid(axis="y", alpha=0.3)


def panels(count: int, rows: int = 1, width: float = 4.6, height: float = 3.8) -> tuple[Figure, list[list[Axes]]]:
    """A figure of `rows` × `count` panels, each `width` × `height` inches."""
    figure, axes = plt.subplots(rows, max(1, count), figsize=(max(6.0, width * count), height * rows + 0.6),
                                squeeze=False)
    return figure, [list(row) for row in axes]


def finish(figure: Figure, first: Axes, path: Path, entries: int) -> Path:
    """Legend across the top (the first panel's series) in as many rows as the width needs, tight layout, save at
    a readable resolution."""
    handles, labels = first.get_legend_handles_labels()
    width, height = figure.get_size_inches()
    columns = max(1, min(len(labels) or entries, int(width / LEGEND_ENTRY)))
    rows = -(-max(1, len(labels)) // columns)
    figure.legend(handles, labels, loc="upper center", ncol=columns, fontsize=TICKS, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 1 - (0.15 + LEGEND_ROW * rows) / height))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def zoom(values: Sequence[Spread | None]) -> tuple[float, float]:
    """The y range of a share in [0, 1] spanning every interval, with a margin (at least 2 points wide)."""
    present = [value for value in values if value is not None]
    low = min((value.low for value in present), default=0.0)
    high = min(1.0, max((value.high for value in present), default=1.0))
    margin = max(0.01, (high - low) * 0.08)
    low, high = max(0.0, low - margin), high + margin
    return (min(low, high - 0.02), high)


def sla_figure(cells: Sequence[Cell], path: Path) -> Path:
    """SLA attainment per agent (mean and 95 % interval), slack factors along x, one panel per scenario; every panel
    on one scale, so that panels compare."""
    scenarios, agents = scenarios_of(cells), agents_of(cells)
    figure, axes = panels(len(scenarios))
    shown = []
    for panel, scenario in zip(axes[0], scenarios, strict=False):
        slacks = slacks_of(cells, scenario)
        series = [(agent, [measured(find(cells, scenario, slack, agent), _sla) for slack in slacks])
                  for agent in agents]
        draw_series(panel, [f"slack {slack:g}" for slack in slacks], series, within=(0.0, 1.0))
        shown += [value for _, values in series for value in values]
        panel.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        panel.set_title(scenario, fontsize=11)
    for panel in axes[0]:
        panel.set_ylim(*zoom(shown))
    axes[0][0].set_ylabel("production jobs meeting their deadline", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(agents))


def _sla(summary: dict[str, Any]) -> float | None:
    return summary["production"]["sla_attainment"]


def best_effort_figure(cells: Sequence[Cell], path: Path) -> Path:
    """Best-effort mean response per job-size bucket and agent over `none`'s at the same seed (absolute seconds
    without a `none` cell): a row per scenario, a column per slack factor."""
    scenarios, agents = scenarios_of(cells), agents_of(cells)
    relative = NO_AGENT in agents
    shown = [agent for agent in agents if agent != NO_AGENT] if relative else agents
    columns = max(len(slacks_of(cells, scenario)) for scenario in scenarios)
    figure, axes = panels(columns, rows=len(scenarios), height=3.4)
    for row, scenario in zip(axes, scenarios, strict=False):
        slacks = slacks_of(cells, scenario)
        for panel, slack in zip(row, slacks, strict=False):
            baseline = find(cells, scenario, slack, NO_AGENT)
            series = [(agent, [_best_effort(find(cells, scenario, slack, agent), baseline, index)
                               for index in range(len(SIZE_BUCKETS))]) for agent in shown]
            draw_series(panel, BUCKET_LABELS, series)
            if relative:
                panel.axhline(1.0, color=colour(NO_AGENT), linewidth=1.2, linestyle="--", label=f"{NO_AGENT} (= 1)")
                panel.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.2f}×"))
            else:
                log_scale_if_wide(panel)
            panel.set_title(f"{scenario}, slack {slack:g}", fontsize=11)
        row[0].set_ylabel(f"BE mean response ÷ {NO_AGENT}'s" if relative else "BE mean response (s)",
                          fontsize=TICKS)
        for empty in row[len(slacks):]:
            empty.set_visible(False)
    for panel in axes[-1]:
        panel.set_xlabel("best-effort jobs by run time alone (percentile)", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(agents))


def _best_effort(cell: Cell | None, baseline: Cell | None, index: int) -> Spread | None:
    """A bucket's best-effort mean response: over the baseline's at the same seed when there is one."""
    get = bucket_response(index, "best_effort_size_buckets")
    if cell is None:
        return None
    return cell.spread(get) if baseline is None else cell.ratio_spread(baseline, get)


def log_scale_if_wide(panel: Axes) -> None:
    """A log y axis labelled in plain numbers (1, 2, 5, 10, 20, ...), not powers of ten, when the values span more
    than a factor of 8 (below, the linear axis reads better)."""
    low, high = panel.get_ylim()
    if low > 0 and high < 8 * low:
        return
    panel.set_yscale("log")
    low, high = panel.get_ylim()
    subs = (1.0, 2.0, 5.0) if high > 30 * low else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    panel.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    panel.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    panel.yaxis.set_minor_formatter(NullFormatter())


def lost_work_figure(cells: Sequence[Cell], path: Path) -> Path:
    """Work thrown away per agent as a share of the work its jobs needed (mean and 95 % interval), slack factors
    along x, one panel per scenario."""
    scenarios, agents = scenarios_of(cells), agents_of(cells)
    figure, axes = panels(len(scenarios))
    for panel, scenario in zip(axes[0], scenarios, strict=False):
        slacks = slacks_of(cells, scenario)
        series = [(agent, [measured(find(cells, scenario, slack, agent), lost_share) for slack in slacks])
                  for agent in agents]
        draw_series(panel, [f"slack {slack:g}" for slack in slacks], series, bars=True, within=(0.0, math.inf))
        panel.set_ylim(bottom=0)
        panel.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
        panel.set_title(scenario, fontsize=11)
    axes[0][0].set_ylabel("work lost and redone ÷ work needed", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(agents))


def lost_share(summary: dict[str, Any]) -> float | None:
    """Lost work over the work the jobs needed (None for results without it)."""
    work = summary.get("work_s")
    return None if not work else (summary.get("lost_work_s") or 0.0) / work


def acceptance_figure(cells: Sequence[Cell], path: Path) -> Path:
    """Production jobs accepted over the run by arrival (accepted ÷ submitted, summed over the seeds), per planning
    agent, at each scenario's tightest slack; one panel per scenario."""
    scenarios = [s for s in scenarios_of(cells) if any(c.scenario == s and _accepting(c) for c in cells)]
    figure, axes = panels(max(1, len(scenarios)))
    for panel, scenario in zip(axes[0], scenarios, strict=False):
        slack = slacks_of(cells, scenario)[0]
        for cell in cells:
            if cell.scenario != scenario or (cell.slack or 0.0) != slack or not _accepting(cell):
                continue
            tenths = _acceptance(cell)
            panel.plot([index + 0.5 for index in range(len(tenths))], tenths, marker="o", color=colour(cell.agent),
                       label=cell.agent)
        panel.set_ylim(0, 1.05)
        panel.set_xlim(0, 10)
        panel.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        panel.set_xlabel("tenth of the run, by arrival", fontsize=TICKS)
        panel.set_title(f"{scenario}, slack {slack:g}", fontsize=11)
        panel.grid(alpha=0.3)
    axes[0][0].set_ylabel("production jobs accepted", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(agents_of(cells)))


def _accepting(cell: Cell) -> bool:
    """Whether the cell's agent plans (a baseline accepts nothing)."""
    return any(summary["production"].get("accepted") for summary in cell.summaries)


def _acceptance(cell: Cell) -> list[float]:
    """Accepted ÷ submitted per tenth of the run, summed over the seeds (nan where nothing arrived)."""
    submitted, accepted = [0] * 10, [0] * 10
    for summary in cell.summaries:
        for index, bucket in enumerate(summary["production"].get("acceptance_over_time", [])[:10]):
            submitted[index] += bucket["submitted"]
            accepted[index] += bucket["accepted"]
    return [a / s if s else math.nan for a, s in zip(accepted, submitted, strict=True)]


def plan_shapes_figure(planned: dict[str, list[tuple[float, float, float]]], title: str, path: Path) -> Path:
    """The vcores each agent's plan held over time on one run (every accepted lease as planned at acceptance):
    tall and late (GREE) against flat (GREE-L); one panel per agent, on one scale."""
    agents = list(planned)
    figure, axes = panels(len(agents), width=6.0, height=3.4)
    top = 0.0
    for panel, agent in zip(axes[0], agents, strict=False):
        times, held = _held_over_time(planned[agent])
        panel.step([t / 3600 for t in times], held, where="post", color=colour(agent), label=agent)
        top = max(top, max(held, default=0.0))
        panel.set_xlabel("hours into the run", fontsize=TICKS)
        panel.set_title(f"{agent}: {title}", fontsize=11)
        panel.grid(alpha=0.3)
    for panel in axes[0]:
        panel.set_ylim(0, top * 1.05 or 1.0)
    axes[0][0].set_ylabel("vcores planned for production", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(agents))


def _held_over_time(leases: list[tuple[float, float, float]]) -> tuple[list[float], list[float]]:
    """A step function of the total held by (start, end, amount) leases: its change times and levels."""
    edges: dict[float, float] = {}
    for start, end, amount in leases:
        edges[start] = edges.get(start, 0.0) + amount
        edges[end] = edges.get(end, 0.0) - amount
    times, levels, level = [], [], 0.0
    for time in sorted(edges):
        level += edges[time]
        times.append(time)
        levels.append(max(0.0, level))
    return times, levels


def buckets_figure(cells: Sequence[Cell], path: Path) -> Path:
    """The fairness study: mean response per job-size bucket and policy, one panel per scenario (log scale)."""
    scenarios = scenarios_of(cells)
    policies = list(dict.fromkeys(cell.policy for cell in cells))
    figure, axes = panels(len(scenarios))
    for panel, scenario in zip(axes[0], scenarios, strict=False):
        series = [(policy, [measured(find(cells, scenario, None, policy), bucket_response(index))
                            for index in range(len(SIZE_BUCKETS))]) for policy in policies]
        draw_series(panel, BUCKET_LABELS, series)
        log_scale_if_wide(panel)
        panel.set_title(scenario, fontsize=11)
        panel.set_xlabel("jobs by run time alone (percentile)", fontsize=TICKS)
    axes[0][0].set_ylabel("mean response (s)", fontsize=TICKS)
    return finish(figure, axes[0][0], path, len(policies))
