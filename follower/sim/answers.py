"""The report's answers, read off the grid's cells: what planning buys over each baseline and at what price, and how
the planning agents (ours, and other systems' where the grid has them) compare with GREE-L.

Comparisons are paired where they can be: the two cells' figures are compared seed by seed (a seed draws the same
workload for both), and the table gives the mean of those differences or ratios with its 95 % interval
(`follower.sim.spread`). Preemptions against a baseline are given side by side: a baseline that reserves nothing
preempts nothing, and no ratio to zero means anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from follower.sim.cell import Cell, Reader
from follower.sim.spread import Spread, spread

REFERENCE = "gree-l"  # our default agent: what the others are measured against
BASELINES = ("none", "static", "static-half")  # the time-agnostic ones: no reservation at all, or a static queue

SLA: Reader = lambda s: s["production"]["sla_attainment"]  # noqa: E731  (readers, as in follower.sim.report)
ACCEPTED: Reader = lambda s: s["production"]["accepted"]  # noqa: E731
PREEMPTIONS: Reader = lambda s: s["preemptions"]  # noqa: E731
BE_RESPONSE: Reader = lambda s: s["best_effort"]["mean_response_s"]  # noqa: E731


def paired(mine: Cell, theirs: Cell, get: Reader, combine: Callable[[float, float], float | None]) -> Spread | None:
    """`combine(mine, theirs)` of a figure at each seed both cells ran, over those seeds."""
    others = dict(zip(theirs.seeds, theirs.summaries, strict=True))
    values = []
    for seed, summary in zip(mine.seeds, mine.summaries, strict=True):
        a, b = get(summary), (get(others[seed]) if seed in others else None)
        if a is not None and b is not None and (value := combine(a, b)) is not None:
            values.append(value)
    return spread(values)


def _difference(a: float, b: float) -> float:
    return a - b


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def shown(value: Spread | None, fmt: str, signed: bool = False) -> str:
    """`mean ± half-width` (the mean alone with one seed; `–` where nothing was measured); `signed`: the mean with
    its sign, as a difference."""
    if value is None:
        return "–"
    mean = (fmt.replace("{:", "{:+") if signed else fmt).format(value.mean)
    return mean + ("" if value.half_width is None else " ± " + fmt.format(value.half_width))


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
        sla = paired(reference, other, SLA, _difference)
        preempted = f"{shown(reference.spread(PREEMPTIONS), '{:.0f}')}, {shown(other.spread(PREEMPTIONS), '{:.0f}')}"
        rows.append(f"| {place[0]} | {_slack(place[1])} | {baseline} | "
                    f"{'–' if sla is None else _signed_points(sla)} | {preempted} | "
                    f"{shown(paired(reference, other, BE_RESPONSE, _ratio), '{:.3f}')} |")
    return rows


def _against_reference(place: tuple[str, Any], reference: Cell, cells: Sequence[Cell]) -> list[str]:
    rows = []
    for cell in cells:
        if (cell.scenario, cell.slack) != place or cell.agent in (REFERENCE, *BASELINES):
            continue
        accepted, sla = paired(cell, reference, ACCEPTED, _difference), paired(cell, reference, SLA, _difference)
        rows.append(f"| {place[0]} | {_slack(place[1])} | {cell.agent} | {shown(accepted, '{:.1f}', signed=True)} | "
                    f"{'–' if sla is None else _signed_points(sla)} | "
                    f"{shown(paired(cell, reference, PREEMPTIONS, _ratio), '{:.2f}')} | "
                    f"{shown(paired(cell, reference, BE_RESPONSE, _ratio), '{:.3f}')} |")
    return rows


def _signed_points(value: Spread) -> str:
    """A difference of shares in percentage points, with its sign."""
    return f"{value.mean * 100:+.1f}" + ("" if value.half_width is None else f" ± {value.half_width * 100:.1f}")


def _slack(slack: float | None) -> str:
    return "–" if slack is None else f"{slack:g}"
