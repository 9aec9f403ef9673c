"""The report's answers, read off the grid's cells: what planning buys over each baseline and at what price, and how
the planning agents (ours, and other systems' where the grid has them) compare with GREE-L.

Comparisons are paired where they can be: the two cells' figures are compared seed by seed (a seed draws the same
workload for both), and the table gives the mean of those differences or ratios with its 95 % interval
(`follower.sim.spread`). Preemptions against a baseline are given side by side: a baseline that reserves nothing
preempts nothing, and no ratio to zero means anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from follower.sim.cell import Cell, Reader
from follower.sim.spread import Spread, format_spread

REFERENCE = "gree-l"  # our default agent: what the others are measured against
BASELINES = ("none", "static", "static-half")  # the time-agnostic ones: no reservation at all, or a static queue

SLA: Reader = lambda s: s["production"]["sla_attainment"]  # noqa: E731  (readers, as in follower.sim.report)
ACCEPTED: Reader = lambda s: s["production"]["accepted"]  # noqa: E731
PREEMPTIONS: Reader = lambda s: s["preemptions"]  # noqa: E731
BE_RESPONSE: Reader = lambda s: s["best_effort"]["mean_response_s"]  # noqa: E731


def answers(cells: Sequence[Cell]) -> str:
    """The answers section (empty when the grid has no GREE-L cell to compare with)."""
    by = {(c.scenario, c.slack, c.agent): c for c in cells}
    places = list(dict.fromkeys((c.scenario, c.slack) for c in cells))
    planning = [row for place in places if (reference := by.get((*place, REFERENCE))) is not None
                for row in _against_baselines(place, reference, by)]
    agents = [row for place in places if (reference := by.get((*place, REFERENCE))) is not None
              for row in _against_reference(place, reference, cells)]
    if not planning and not agents:
        return ""
    parts = ["## Answers", "",
             f"Paired at each seed, mean ± 95 % interval. SLA in percentage points; preemptions and best-effort "
             f"mean response as ratios (below 1: fewer, faster). `{REFERENCE}` is our default agent.", ""]
    if planning:
        parts += [f"**What planning buys.** `{REFERENCE}` against each time-agnostic baseline: `none` (one fair "
                  "queue, no reservations) and a statically sized production queue (`static`: the peak production "
                  "demand, `static-half`: half of it).", "",
                  f"| scenario | slack | baseline | SLA gained (points) | preemptions ({REFERENCE}'s, baseline's) | "
                  "BE mean response (× baseline's) |", "|---|---|---|---|---|---|", *planning, ""]
    if agents:
        parts += [f"**The agents against `{REFERENCE}`.** GREE (tallest, latest), the MILP, and other systems' "
                  "agents where the grid has them (YARN's, replayed).", "",
                  "| scenario | slack | agent | accepted (difference) | SLA (points) | preemptions (× "
                  f"{REFERENCE}'s) | BE mean response (× {REFERENCE}'s) |", "|---|---|---|---|---|---|---|", *agents,
                  ""]
    return "\n".join(parts)


def _against_baselines(place: tuple[str, Any], reference: Cell, by: dict[tuple[str, Any, str], Cell]) -> list[str]:
    rows = []
    for baseline in BASELINES:
        other = by.get((*place, baseline))
        if other is None:
            continue
        sla = reference.difference_spread(other, SLA)
        preempted = (f"{format_spread(reference.spread(PREEMPTIONS), '{:.0f}')}, "
                     f"{format_spread(other.spread(PREEMPTIONS), '{:.0f}')}")
        rows.append(f"| {place[0]} | {_slack(place[1])} | {baseline} | "
                    f"{'–' if sla is None else _signed_points(sla)} | {preempted} | "
                    f"{format_spread(reference.ratio_spread(other, BE_RESPONSE), '{:.3f}')} |")
    return rows


def _against_reference(place: tuple[str, Any], reference: Cell, cells: Sequence[Cell]) -> list[str]:
    rows = []
    for cell in cells:
        if (cell.scenario, cell.slack) != place or cell.agent in (REFERENCE, *BASELINES):
            continue
        accepted, sla = cell.difference_spread(reference, ACCEPTED), cell.difference_spread(reference, SLA)
        rows.append(f"| {place[0]} | {_slack(place[1])} | {cell.agent} | "
                    f"{format_spread(accepted, '{:.1f}', signed=True)} | "
                    f"{'–' if sla is None else _signed_points(sla)} | "
                    f"{format_spread(cell.ratio_spread(reference, PREEMPTIONS), '{:.2f}')} | "
                    f"{format_spread(cell.ratio_spread(reference, BE_RESPONSE), '{:.3f}')} |")
    return rows


def _signed_points(value: Spread) -> str:
    """A difference of shares in percentage points, with its sign."""
    return f"{value.mean * 100:+.1f}" + ("" if value.half_width is None else f" ± {value.half_width * 100:.1f}")


def _slack(slack: float | None) -> str:
    return "–" if slack is None else f"{slack:g}"
