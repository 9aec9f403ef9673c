"""The evaluation report: Markdown tables and matplotlib figures from a grid of simulation results.

Pure rendering: the grid runner (`follower.sim.evaluate`) hands over one `Cell` per run,
and this module writes `report.md` and its PNG figures into a folder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

from follower.sim.scenario import agent_names

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend is chosen before pyplot loads
from matplotlib.ticker import PercentFormatter


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid: which scenario, with what, and what it measured."""

    study: str
    scenario: str
    agent: str
    policy: str
    slack: float | None
    summary: dict[str, Any]
    fairness: dict[str, Any] = field(default_factory=dict)


RESERVATION_COLUMNS = (
    ("SLA attainment", lambda s: s["production"]["sla_attainment"], "{:.1%}"),
    ("accepted", lambda s: s["production"]["accepted"], "{}"),
    ("production jobs", lambda s: s["production"]["jobs"], "{}"),
    ("BE mean response (s)", lambda s: s["best_effort"]["mean_response_s"], "{:.0f}"),
    ("BE p95 response (s)", lambda s: s["best_effort"]["p95_response_s"], "{:.0f}"),
    ("utilisation", lambda s: s["utilization"], "{:.1%}"),
    ("preemptions", lambda s: s["preemptions"], "{}"),
)


def _cell(value: Any, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def reservations_table(cells: Sequence[Cell]) -> str:
    """Markdown: one row per (scenario, slack, agent) with SLA, BE latency, use and preemptions."""
    header = "| scenario | slack | agent | policy | " + " | ".join(name for name, _, _ in RESERVATION_COLUMNS) + " |"
    lines = [header, "|" + "---|" * (4 + len(RESERVATION_COLUMNS))]
    for cell in cells:
        values = " | ".join(_cell(get(cell.summary), fmt) for _, get, fmt in RESERVATION_COLUMNS)
        slack = "–" if cell.slack is None else f"{cell.slack:g}"
        lines.append(f"| {cell.scenario} | {slack} | {cell.agent} | {cell.policy} | {values} |")
    return "\n".join(lines)


def fairness_table(cells: Sequence[Cell]) -> str:
    """Markdown: per (scenario, policy) mean response, size buckets, slowdown, DVR and DSR."""
    lines = [
        "| scenario | policy | mean response (s) | 0–80 % (s) | 80–95 % (s) | 95–100 % (s) | mean slowdown"
        " | DVR | DSR |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        jobs = _all_jobs(cell.summary)
        buckets = [_cell(b["mean_response_s"], "{:.1f}") for b in cell.summary["size_buckets"]]
        lines.append(
            f"| {cell.scenario} | {cell.policy} | {_cell(jobs['mean_response_s'], '{:.1f}')} | "
            + " | ".join(buckets)
            + f" | {_cell(jobs['mean_slowdown'], '{:.2f}')} | {_cell(cell.fairness.get('dvr'), '{:.1%}')}"
            f" | {_cell(cell.fairness.get('dsr'), '{:.2f}')} |"
        )
    return "\n".join(lines)


def _all_jobs(summary: dict[str, Any]) -> dict[str, Any]:
    """Response figures over every job (the fairness studies have no production class)."""
    return summary.get("all_jobs") or summary["best_effort"]


def sla_figure(cells: Sequence[Cell], path: Path) -> Path:
    """SLA attainment per agent: one panel per scenario, slack factors along it, the y axis zoomed to the range the
    bars span (a scale from 0 hides the differences between 93% and 100% that matter), each bar labelled."""
    scenarios = sorted({cell.scenario for cell in cells})
    agents = sorted({cell.agent for cell in cells}, key=_agent_order)
    slacks = {scenario: sorted({cell.slack or 0.0 for cell in cells if cell.scenario == scenario})
              for scenario in scenarios}
    values = [_sla(cells, scenario, slack, agent) for scenario in scenarios for slack in slacks[scenario]
              for agent in agents]
    low = max(0.0, math.floor((min(values, default=1.0) - 0.02) * 50) / 50)  # a step of 2% below the lowest bar
    figure, panels = plt.subplots(1, max(1, len(scenarios)), figsize=(max(6.0, 4.2 * len(scenarios)), 4.4),
                                  sharey=True, squeeze=False)
    width = 0.8 / max(1, len(agents))
    for panel, scenario in zip(panels[0], scenarios, strict=False):
        for index, agent in enumerate(agents):
            heights = [_sla(cells, scenario, slack, agent) for slack in slacks[scenario]]
            bars = panel.bar([g + index * width for g in range(len(heights))], [h - low for h in heights], width,
                             bottom=low, label=agent)
            panel.bar_label(bars, labels=[f"{h:.1%}" for h in heights], fontsize=7, rotation=90, padding=2)
        panel.set_xticks([g + 0.4 - width / 2 for g in range(len(slacks[scenario]))])
        panel.set_xticklabels([f"slack {slack:g}" for slack in slacks[scenario]], fontsize=10)
        panel.set_title(scenario, fontsize=11)
        panel.set_ylim(low, 1.0 + (1.0 - low) * 0.2)  # room for the labels above a bar at 100%
        panel.yaxis.set_major_formatter(PercentFormatter(1.0))
        panel.tick_params(axis="y", labelsize=10)
        panel.grid(axis="y", alpha=0.3)
    panels[0][0].set_ylabel("production jobs meeting their deadline", fontsize=10)
    handles, labels = panels[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=max(1, len(agents)), fontsize=10, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 0.92))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _sla(cells: Sequence[Cell], scenario: str, slack: float, agent: str) -> float:
    for cell in cells:
        if cell.scenario == scenario and (cell.slack or 0.0) == slack and cell.agent == agent:
            return float(cell.summary["production"]["sla_attainment"] or 0.0)
    return 0.0


def _agent_order(agent: str) -> tuple[int, str]:
    order = list(agent_names())
    return (order.index(agent) if agent in order else len(order), agent)


def buckets_figure(cells: Sequence[Cell], path: Path) -> Path:
    """Mean response per size bucket, one panel per scenario, one bar per policy."""
    scenarios = sorted({cell.scenario for cell in cells})
    figure, axes = plt.subplots(1, len(scenarios), figsize=(4.5 * len(scenarios), 3.8), squeeze=False)
    for panel, scenario in zip(axes[0], scenarios, strict=True):
        mine = [cell for cell in cells if cell.scenario == scenario]
        width = 0.8 / max(1, len(mine))
        for index, cell in enumerate(mine):
            means = [b["mean_response_s"] or 0.0 for b in cell.summary["size_buckets"]]
            panel.bar([b + index * width for b in range(len(means))], means, width, label=cell.policy)
        panel.set_xticks([b + 0.4 - width / 2 for b in range(3)])
        panel.set_xticklabels(["0–80 %", "80–95 %", "95–100 %"])
        panel.set_title(scenario, fontsize=9)
        panel.set_ylabel("mean response (s)")
        panel.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def write_report(folder: Path, reservations: Sequence[Cell], fairness: Sequence[Cell], preamble: str,
                 published: str = "") -> Path:
    """Write `report.md` with both studies' tables and figures into `folder`; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = [preamble.rstrip(), ""]
    if reservations:
        sla_figure(reservations, folder / "sla.png")
        parts += ["## Reservations: does planning ahead pay off?", "", reservations_table(reservations), "",
                  "![SLA attainment per agent](sla.png)", ""]
    if fairness:
        buckets_figure(fairness, folder / "buckets.png")
        parts += ["## Fairness: user-aware virtual time", "", fairness_table(fairness), "",
                  "![Mean response per size bucket](buckets.png)", ""]
    if published:
        parts += [published.rstrip(), ""]
    report = folder / "report.md"
    report.write_text("\n".join(parts))
    return report
