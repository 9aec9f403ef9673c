"""The report's answers, read off the grid's cells: what planning buys over each baseline and at what price, and how
the planning agents (ours, and other systems' where the grid has them) compare with GREE-L.

Comparisons are paired where they can be: the two cells' figures are compared seed by seed (a seed draws the same
workload for both), and the table gives the mean of those differences or ratios with its 95 % interval
(`follower.sim.spread`). Counts (lost work, plan changes) are compared as a ratio of their sums over the seeds,
never as a mean of per-seed ratios, which a seed with a count near zero would sway; a baseline that loses nothing
gets no ratio.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from follower.sim.baselines import BASELINES, ORACLES
from follower.sim.cell import Cell, Reader
from follower.sim.spread import Spread, format_spread

REFERENCE = "gree-l"  # our default agent: what the others are measured against
HOUR = 3600.0

SLA: Reader = lambda s: s["production"]["sla_attainment"]  # noqa: E731  (readers, as in follower.sim.report)
SLA_FEASIBLE: Reader = lambda s: s["production"].get("sla_feasible")  # noqa: E731
SLA_DUE: Reader = lambda s: s["production"].get("sla_due")  # noqa: E731  (None in results made before it was kept)
ACCEPTED: Reader = lambda s: s["production"]["accepted"]  # noqa: E731
PREEMPTIONS: Reader = lambda s: s["preemptions"]  # noqa: E731
LOST_WORK: Reader = lambda s: s.get("lost_work_s")  # noqa: E731
PLAN_CHANGES: Reader = lambda s: s["production"].get("plan_changes")  # noqa: E731
START_LATENCY: Reader = lambda s: s["production"].get("median_start_latency_s")  # noqa: E731
BE_RESPONSE: Reader = lambda s: s["best_effort"]["mean_response_s"]  # noqa: E731
BE_SLOWDOWN: Reader = lambda s: s["best_effort"]["mean_slowdown"]  # noqa: E731
SHORT_WAIT: Reader = lambda s: s["best_effort"].get("short_mean_wait_s")  # noqa: E731


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
             "Paired at each seed, mean ± 95 % interval; counts as the ratio of their sums over the seeds. SLA in "
             f"percentage points. `{REFERENCE}` is our default agent.", ""]
    if planning:
        parts += [f"**What planning buys.** `{REFERENCE}` against what an operator would run without planning "
                  "(`none`: one shared queue; `priority`: production first, earliest deadline first, no admission "
                  "control; `capacity`: a CapacityScheduler split sized on another window) and against the oracles "
                  f"({', '.join(f'`{name}`' for name in ORACLES)}: sized on this run's own peak, in hindsight). "
                  "SLA over feasible jobs counts only the production jobs whose run time alone fits their window; "
                  "SLA over jobs due counts the production jobs whose deadline falls within the run, the same jobs "
                  "for every agent (SLA attainment leaves out the jobs still running at the end, more of them under "
                  "a plan that starts jobs late in their windows). "
                  "Lost work: container-hours thrown away by preemption and failures, per run.", "",
                  f"| scenario | slack | baseline | SLA gained (points) | SLA over jobs due gained (points) | "
                  f"SLA over feasible gained (points) | "
                  f"BE slowdown (× baseline's) | short BE wait, s ({REFERENCE}, baseline) | lost work, container-h "
                  f"({REFERENCE}, baseline) | production start, median s ({REFERENCE}, baseline) |",
                  "|---|---|---|---|---|---|---|---|---|---|", *planning, ""]
    if agents:
        parts += [f"**The agents against `{REFERENCE}`.** GREE (tallest, latest), the MILP, and other systems' "
                  "agents where the grid has them (YARN's, replayed). Plan changes: how often accepted "
                  "reservations' planned allocations change level (what the follower must move).", "",
                  "| scenario | slack | agent | accepted (difference) | SLA (points) | plan changes (× "
                  f"{REFERENCE}'s) | lost work (× {REFERENCE}'s) | BE slowdown (× {REFERENCE}'s) |",
                  "|---|---|---|---|---|---|---|---|", *agents, ""]
    return "\n".join(parts)


def _against_baselines(place: tuple[str, Any], reference: Cell, by: dict[tuple[str, Any, str], Cell]) -> list[str]:
    rows = []
    for baseline in BASELINES:
        other = by.get((*place, baseline))
        if other is None:
            continue
        sla, feasible = reference.difference_spread(other, SLA), reference.difference_spread(other, SLA_FEASIBLE)
        due = reference.difference_spread(other, SLA_DUE)
        name = f"{baseline} (oracle)" if baseline in ORACLES else baseline
        rows.append(f"| {place[0]} | {_slack(place[1])} | {name} | "
                    f"{_signed_points(sla)} | {_signed_points(due)} | {_signed_points(feasible)} | "
                    f"{format_spread(reference.ratio_spread(other, BE_SLOWDOWN), '{:.3f}')} | "
                    f"{_pair(reference, other, SHORT_WAIT, '{:.0f}')} | "
                    f"{_pair(reference, other, lambda s: _hours(LOST_WORK(s)), '{:.1f}')} | "
                    f"{_pair(reference, other, START_LATENCY, '{:.0f}')} |")
    return rows


def _against_reference(place: tuple[str, Any], reference: Cell, cells: Sequence[Cell]) -> list[str]:
    rows = []
    for cell in cells:
        if (cell.scenario, cell.slack) != place or cell.agent in (REFERENCE, *BASELINES):
            continue
        accepted, sla = cell.difference_spread(reference, ACCEPTED), cell.difference_spread(reference, SLA)
        rows.append(f"| {place[0]} | {_slack(place[1])} | {cell.agent} | "
                    f"{format_spread(accepted, '{:.1f}', signed=True)} | {_signed_points(sla)} | "
                    f"{_times(cell.ratio_of_sums(reference, PLAN_CHANGES))} | "
                    f"{_times(cell.ratio_of_sums(reference, LOST_WORK))} | "
                    f"{format_spread(cell.ratio_spread(reference, BE_SLOWDOWN), '{:.3f}')} |")
    return rows


def _pair(mine: Cell, theirs: Cell, get: Reader, fmt: str) -> str:
    """Two cells' means of one figure, side by side."""
    return f"{format_spread(mine.spread(get), fmt)}, {format_spread(theirs.spread(get), fmt)}"


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / HOUR


def _times(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio:.2f}"


def _signed_points(value: Spread | None) -> str:
    """A difference of shares in percentage points, with its sign."""
    if value is None:
        return "–"
    return f"{value.mean * 100:+.1f}" + ("" if value.half_width is None else f" ± {value.half_width * 100:.1f}")


def _slack(slack: float | None) -> str:
    return "–" if slack is None else f"{slack:g}"
