"""The evaluation report: Markdown tables and matplotlib figures from a grid of simulation results.

Pure rendering: the grid runner (`follower.sim.evaluate`) hands over one `Cell` per grid cell (every
seed's figures), and this module writes `report.md`, with its PNG figures (`follower.sim.figures`), into a
folder; the tables give each figure's mean ± the half-width of its 95 % interval over the seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from follower.sim.answers import BE_SLOWDOWN, answers
from follower.sim.cell import Cell, Reader, all_jobs, bucket_response
from follower.sim.figures import (
    acceptance_figure,
    best_effort_figure,
    buckets_figure,
    lost_work_figure,
    plan_shapes_figure,
    sla_figure,
)
from follower.sim.load import SLA_TARGET, SLOWDOWN_LIMIT, carried
from follower.sim.metrics import SIZE_BUCKETS
from follower.sim.spread import format_spread


@dataclass(frozen=True)
class PlanShapes:
    """The leases each agent planned on one run, as (start s, end s, vcores), with what the run was."""

    planned: tuple[tuple[str, list[tuple[float, float, float]]], ...]
    title: str
    command: str


# The load table's SLA: over the jobs due in the run, the same set for every agent; results.json files written
# before `sla_due` was kept give their SLA attainment, the figure their reports were made from.
LOAD_SLA: Reader = lambda s: s["production"].get("sla_due", s["production"]["sla_attainment"])  # noqa: E731


RESERVATION_COLUMNS: tuple[tuple[str, Reader, str], ...] = (
    ("SLA attainment", lambda s: s["production"]["sla_attainment"], "{:.1%}"),
    ("SLA over jobs due", lambda s: s["production"].get("sla_due"), "{:.1%}"),
    ("SLA over feasible", lambda s: s["production"].get("sla_feasible"), "{:.1%}"),
    ("accepted", lambda s: s["production"]["accepted"], "{:.1f}"),
    ("production jobs", lambda s: s["production"]["jobs"], "{:.1f}"),
    ("production start, median (s)", lambda s: s["production"].get("median_start_latency_s"), "{:.0f}"),
    ("BE mean response (s)", lambda s: s["best_effort"]["mean_response_s"], "{:.0f}"),
    ("BE mean slowdown", lambda s: s["best_effort"]["mean_slowdown"], "{:.2f}"),
    ("short BE wait (s)", lambda s: s["best_effort"].get("short_mean_wait_s"), "{:.0f}"),
    ("utilisation", lambda s: s["utilization"], "{:.1%}"),
    ("preemptions", lambda s: s["preemptions"], "{:.1f}"),
    ("lost work (container-h)", lambda s: (s.get("lost_work_s") or 0.0) / 3600.0, "{:.1f}"),
)


def reservations_table(cells: Sequence[Cell]) -> str:
    """Markdown: one row per (scenario, slack, agent) with SLA, BE latency, use and preemptions over the seeds."""
    header = ("| scenario | slack | agent | policy | seeds | "
              + " | ".join(name for name, _, _ in RESERVATION_COLUMNS) + " |")
    lines = [header, "|" + "---|" * (5 + len(RESERVATION_COLUMNS))]
    for cell in cells:
        values = " | ".join(format_spread(cell.spread(get), fmt) for _, get, fmt in RESERVATION_COLUMNS)
        slack = "–" if cell.slack is None else f"{cell.slack:g}"
        lines.append(f"| {cell.scenario} | {slack} | {cell.agent} | {cell.policy} | {len(cell.seeds)} | {values} |")
    return "\n".join(lines)


def fairness_table(cells: Sequence[Cell]) -> str:
    """Markdown: per (scenario, policy) mean response, size buckets, slowdown, DVR and DSR over the seeds."""
    lines = [
        "| scenario | policy | seeds | mean response (s) | 0–80 % (s) | 80–95 % (s) | 95–100 % (s) | mean slowdown"
        " | DVR | DSR |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        buckets = [format_spread(cell.spread(bucket_response(index)), "{:.1f}") for index in range(len(SIZE_BUCKETS))]
        lines.append(
            f"| {cell.scenario} | {cell.policy} | {len(cell.seeds)} | "
            f"{format_spread(cell.spread(lambda s: all_jobs(s)['mean_response_s']), '{:.1f}')} | "
            + " | ".join(buckets)
            + f" | {format_spread(cell.spread(lambda s: all_jobs(s)['mean_slowdown']), '{:.2f}')}"
            f" | {format_spread(cell.fairness_spread('dvr'), '{:.1%}')}"
            f" | {format_spread(cell.fairness_spread('dsr'), '{:.2f}')} |"
        )
    return "\n".join(lines)


def load_table(cells: Sequence[Cell]) -> str:
    """Markdown: per scenario and agent, production SLA and best-effort mean slowdown at each load, and the highest
    load carried (SLA at least SLA_TARGET and slowdown at most SLOWDOWN_LIMIT there and at every lower load)."""
    loads = sorted({cell.load for cell in cells if cell.load is not None})
    lines = ["| scenario | agent | " + " | ".join(f"load {load:g}: SLA, BE slowdown" for load in loads)
             + " | highest load carried |", "|---|---|" + "---|" * (len(loads) + 1)]
    by = {(cell.scenario, cell.agent, cell.load): cell for cell in cells}
    for scenario, agent in dict.fromkeys((cell.scenario, cell.agent) for cell in cells):
        points, shown = [], []
        for load in loads:
            cell = by.get((scenario, agent, load))
            sla = cell.spread(LOAD_SLA) if cell is not None else None
            slowdown = cell.spread(BE_SLOWDOWN) if cell is not None else None
            points.append((load, None if sla is None else sla.mean, None if slowdown is None else slowdown.mean))
            shown.append(f"{format_spread(sla, '{:.1%}')}, {format_spread(slowdown, '{:.2f}')}")
        highest = carried(points)
        carried_text = "none" if highest is None else f"{highest:g}"
        lines.append(f"| {scenario} | {agent} | " + " | ".join(shown) + f" | {carried_text} |")
    return "\n".join(lines)


def write_report(folder: Path, reservations: Sequence[Cell], fairness: Sequence[Cell], preamble: str,
                 published: str = "", loaded: Sequence[Cell] = (), shapes: PlanShapes | None = None) -> Path:
    """Write `report.md` with the studies' tables and figures into `folder`; returns its path. `shapes` are the
    leases each agent planned on one run, for the plan-shape figure."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = [preamble.rstrip(), ""]
    if found := answers(reservations):
        parts += [found.rstrip(), ""]
    if reservations:
        sla_figure(reservations, folder / "sla.png")
        best_effort_figure(reservations, folder / "best_effort.png")
        lost_work_figure(reservations, folder / "lost_work.png")
        acceptance_figure(reservations, folder / "acceptance.png")
        parts += ["## Reservations: does planning ahead pay off?", "", reservations_table(reservations), "",
                  "![SLA attainment per agent, mean and 95 % interval over the seeds](sla.png)", "",
                  "SLA attainment: each scenario's axis spans only the range its intervals cover.", "",
                  "![Best-effort mean response by job size, per agent](best_effort.png)", "",
                  "Best-effort mean response by job size (jobs ranked by their run time alone), over the response "
                  "of the same jobs under `none` at the same seed: above 1, reserving for production slowed them.",
                  "", "![Work lost and redone per agent, as a share of the work needed](lost_work.png)", "",
                  "Work thrown away by preemption and failures (a preempted task starts over, a gang goes back to its "
                  "start or checkpoint), over the work the jobs needed: preemptions normalised by what they cost.", "",
                  "![Production jobs accepted over the run, per planning agent](acceptance.png)", "",
                  "Acceptance by arrival time, summed over the seeds: a plan whose horizon did not roll would "
                  "accept less and less as the run goes on.", ""]
    if shapes is not None:
        plan_shapes_figure(dict(shapes.planned), shapes.title, folder / "plan_shapes.png")
        parts += ["![What GREE and GREE-L planned over one run](plan_shapes.png)", "",
                  f"What each agent planned for production over one run ({shapes.command}): every accepted lease "
                  "as planned at acceptance, in vcores.", ""]
    if loaded:
        parts += ["## Load: how much more work does the same cluster carry?", "",
                  f"The same jobs arriving faster (load f: every submission time divided by f; sizes, run times and "
                  f"deadline slack unchanged; `rayon simulate SCENARIO --load f`). A load is carried while production "
                  f"meets at least {SLA_TARGET:.0%} of its deadlines and best effort's mean slowdown stays at most "
                  f"{SLOWDOWN_LIMIT:g}, there and at every lower load of the sweep (means over the seeds). SLA here "
                  f"is over the production jobs due within the run, the same jobs for every agent (SLA attainment in "
                  f"results made before that figure was kept).", "",
                  load_table(loaded), ""]
    if fairness:
        buckets_figure(fairness, folder / "buckets.png")
        parts += ["## Fairness: user-aware virtual time", "", fairness_table(fairness), "",
                  "![Mean response per size bucket, per policy](buckets.png)", ""]
    if published:
        parts += [published.rstrip(), ""]
    report = folder / "report.md"
    report.write_text("\n".join(parts))
    return report
