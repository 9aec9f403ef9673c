"""A picture of the plan: `rayon plot` and `plot_plan`.

One panel per resource, time along x: each accepted reservation's use stacked (one colour each,
in order of first use from the bottom; beyond the `MAX_NAMED` largest, the rest are summed as
"others", on top) under the cluster's capacity, drawn as a step line so that maintenance windows
show. Memory is in GiB, other resources in their own counts.

Long horizons are downsampled to at most `MAX_POINTS` points per line without hiding what
matters: the stacks show each bucket's *peak* (every reservation's use at the step where the
total use of that resource is highest in the bucket, so the stack is exactly that peak and never
more), and the capacity line shows each bucket's *least* capacity. Drawing uses matplotlib's Agg
canvas directly (no pyplot, no display, no global backend switch); matplotlib is imported only
when a picture is drawn, so the `rayon` command starts as fast as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click
import numpy as np

from planner.cli.store import opened, state_option
from planner.core.plan import Plan
from rdl import units
from rdl.cli import RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.errors import RayonError, did_you_mean
from rdl.shape import step_ceil, step_floor

MAX_POINTS = 2000
"""At most this many points per line: longer windows are bucketed (peak use, least capacity per bucket)."""

MAX_NAMED = 20
"""Reservations named in the legend; the rest are stacked together as "others"."""

GIB = units.MEMORY_UNITS["GiB"]
CAPACITY_COLOUR = "#111111"
OTHERS_COLOUR = "#b0b0b0"
PALETTE = [  # matplotlib's tab20, strong shades then light ones, greys left out, and two of tab20b to make 20
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#8c6d31",
]


class PlotError(RayonError, ValueError):
    """A request that cannot be drawn: an unknown resource, an empty time window, an unknown file format."""


@dataclass(frozen=True)
class Panel:
    """One resource's lines, in its display unit (GiB for memory): one value per bucket."""

    resource: str
    unit: str  # "GiB" for memory, "" for counts
    capacity: np.ndarray  # the least capacity in each bucket
    stacks: np.ndarray  # series × buckets: each series' use at the bucket's peak step of total use

    @property
    def label(self) -> str:
        return f"{self.resource} ({self.unit})" if self.unit else self.resource


@dataclass(frozen=True)
class PlotData:
    """What `plot_plan` draws, computed without matplotlib."""

    start_step: int
    end_step: int
    bucket: int  # steps per point (1: every step)
    times: np.ndarray  # datetime64[s], UTC: each bucket's start, then the window's end (buckets + 1 values)
    series: list[str]  # stacked series, bottom first: reservations by first use, then possibly "others (N)"
    others: int  # how many reservations the "others" series sums (0: there is none)
    panels: list[Panel]
    title: str


def plot_data(plan: Plan, start_step: int | None = None, end_step: int | None = None,
              resources: Iterable[str] | None = None, max_points: int = MAX_POINTS,
              max_named: int = MAX_NAMED) -> PlotData:
    """The numbers behind the picture of steps [start_step, end_step) of the plan (default: all of it).

    Steps outside the plan are dropped; an empty window or an unknown resource is a `PlotError`.
    """
    lo, hi = _window(plan, start_step, end_step)
    rows = _rows(plan, resources)
    span = hi - lo
    bucket = -(-span // max(1, max_points))
    firsts = np.arange(lo, hi, bucket)  # each bucket's first step
    count = len(firsts)

    # The step at which each resource's total use peaks inside each bucket (rows × buckets).
    padded = np.full((len(rows), count * bucket), -1.0)
    padded[:, :span] = plan.used[rows, lo:hi]
    peaks = firsts + padded.reshape(len(rows), count, bucket).argmax(axis=2)
    capacity = np.minimum.reduceat(plan.capacity[rows, lo:hi], firsts - lo, axis=1)

    # Each reservation's use at those steps, and its weight (share of capacity-time in the window) for ranking.
    scale = np.maximum(plan.capacity[rows, lo:hi].max(axis=1), 1.0)
    found: list[tuple[float, int, str, np.ndarray]] = []
    for name, accepted in plan.accepted.items():
        inside = [a for a in accepted.allocations if a.start < hi and a.end > lo]
        if not inside:
            continue
        use = plan.use_of(accepted.allocations)[rows]
        weight = float((use[:, lo:hi].sum(axis=1) / scale).sum())
        if weight > 0:
            first = max(lo, min(a.start for a in inside))
            found.append((weight, first, name, np.take_along_axis(use, peaks, axis=1)))
    # The largest are named (never "others (1)") and stacked in order of their first use, so that
    # what started earlier stays at the bottom; the rest are summed on top.
    found.sort(key=lambda item: (-item[0], item[2]))
    named = found if len(found) <= max_named + 1 else found[:max_named]
    rest = found[len(named):]
    named.sort(key=lambda item: (item[1], item[2]))
    series = [name for _, _, name, _ in named]
    samples = [sample for _, _, _, sample in named]
    if rest:
        series.append(f"others ({len(rest)})")
        samples.append(np.sum([sample for _, _, _, sample in rest], axis=0))
    stacked = np.stack(samples, axis=1) if samples else np.zeros((len(rows), 0, count))  # rows × series × buckets

    panels = []
    for index, row in enumerate(rows):
        resource = plan.resources[row]
        divisor = GIB if resource == units.MEMORY else 1.0
        panels.append(Panel(resource, "GiB" if resource == units.MEMORY else "",
                            capacity[index] / divisor, stacked[index] / divisor))
    times = _datetime64(plan.clock.origin) + (np.append(firsts, hi) * plan.clock.step).astype("timedelta64[s]")
    return PlotData(lo, hi, bucket, times, series, len(rest), panels, _title(plan, lo, hi, bucket, len(found)))


def plot_plan(plan: Plan, out: str | Path, start_step: int | None = None, end_step: int | None = None,
              resources: Iterable[str] | None = None) -> Path:
    """Draw the plan (steps [start_step, end_step), the given resources; default all) to `out`; returns its path.

    The format follows the file's suffix (PNG without one, or for `.png`); any format matplotlib's Agg canvas
    writes (`.svg`, `.pdf`, ...) works.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    path = Path(out)
    data = plot_data(plan, start_step, end_step, resources)
    figure = Figure(figsize=(12, 1.4 + 2.6 * len(data.panels)), dpi=110, layout="constrained")
    canvas = FigureCanvasAgg(figure)
    form = path.suffix[1:].lower() or "png"
    if form not in canvas.get_supported_filetypes():
        raise PlotError(f"cannot write `{path.name}`: unknown picture format `{form}`; "
                        f"use one of {', '.join(sorted(canvas.get_supported_filetypes()))}")

    colours = _colours(len(data.series), data.others > 0)
    axes = figure.subplots(len(data.panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, data.panels, strict=True):
        if data.series:  # step="post": a value holds from its time to the next; repeat the last to the window's end
            ax.stackplot(data.times, *(np.append(s, s[-1]) for s in panel.stacks), colors=colours, step="post",
                         linewidth=0, zorder=1)
        ax.plot(data.times, np.append(panel.capacity, panel.capacity[-1]), drawstyle="steps-post",
                color=CAPACITY_COLOUR, linewidth=1.6, zorder=3)
        top = max(float(panel.capacity.max()), float(panel.stacks.sum(axis=0).max(initial=0.0)))
        ax.set_ylim(0, top * 1.1 if top > 0 else 1.0)
        ax.set_xlim(data.times[0], data.times[-1])
        ax.set_ylabel(panel.label)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
    locator = AutoDateLocator()
    axes[-1].xaxis.set_major_locator(locator)
    axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))
    axes[-1].set_xlabel("time (UTC)")

    # Legend: capacity, then the stack from the top down, as it reads on the panels.
    handles: list[Line2D | Patch] = [Line2D([], [], color=CAPACITY_COLOUR, linewidth=1.6, label="capacity")]
    handles += [Patch(facecolor=c, label=s) for s, c in reversed(list(zip(data.series, colours, strict=True)))]
    figure.legend(handles=handles, loc="outside right upper", fontsize="small", frameon=False)
    figure.suptitle(data.title, fontsize="medium")
    figure.savefig(path, format=form)
    return path


def window_steps(plan: Plan, start: datetime | None, end: datetime | None) -> tuple[int | None, int | None]:
    """The plan steps of a time window, rounded outwards (a step partly inside is shown); None stays None."""
    clock = plan.clock
    return (None if start is None else step_floor(clock.origin, start, clock.step),
            None if end is None else step_ceil(clock.origin, end, clock.step))


def _window(plan: Plan, start_step: int | None, end_step: int | None) -> tuple[int, int]:
    steps = plan.clock.steps
    lo = 0 if start_step is None else max(0, start_step)
    hi = steps if end_step is None else min(steps, end_step)
    if lo >= hi:
        clock = plan.clock
        if start_step is not None and start_step >= steps:
            why = (f"the window starts at {_when(clock.at(start_step))}, "
                   f"when the plan has ended ({_when(clock.at(steps))})")
        elif end_step is not None and end_step <= 0:
            why = f"the window ends at {_when(clock.at(end_step))}, before the plan starts ({_when(clock.at(0))})"
        else:
            why = f"the window {_when(clock.at(lo))} – {_when(clock.at(hi))} is empty"
        raise PlotError(f"nothing to plot: {why} (UTC)")
    return lo, hi


def _rows(plan: Plan, resources: Iterable[str] | None) -> list[int]:
    if resources is None:
        return list(range(len(plan.resources)))
    wanted = list(dict.fromkeys(resources))
    if not wanted:
        raise PlotError("no resource to plot")
    for name in wanted:
        if name not in plan.resources:
            hint = did_you_mean(name, list(plan.resources))
            raise PlotError(f"unknown resource `{name}`; the plan has {', '.join(plan.resources)}"
                            + (f" ({hint})" if hint else ""))
    return [plan.resources.index(name) for name in wanted]


def _colours(count: int, others: bool) -> list[str]:
    """One colour per series: tab20's strong shades, then its light ones, without its greys (grey is "others")."""
    named = count - 1 if others else count
    colours = [PALETTE[i % len(PALETTE)] for i in range(named)]
    return [*colours, OTHERS_COLOUR] if others else colours


def _title(plan: Plan, lo: int, hi: int, bucket: int, shown: int) -> str:
    clock = plan.clock
    title = (f"Plan {_when(clock.at(0))} – {_when(clock.at(clock.steps))} UTC "
             f"({units.format_duration(clock.steps * clock.step)} in {units.format_duration(clock.step)} steps), "
             f"{len(plan.accepted)} accepted reservation{'' if len(plan.accepted) == 1 else 's'}")
    notes = []
    if (lo, hi) != (0, clock.steps):
        notes.append(f"showing {_when(clock.at(lo))} – {_when(clock.at(hi))}, {shown} reservation"
                     f"{'' if shown == 1 else 's'} in view")
    if bucket > 1:
        notes.append(f"each point: peak use and least capacity over {units.format_duration(bucket * clock.step)}")
    return title + ("\n" + "; ".join(notes) if notes else "")


def _when(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M")


def _datetime64(moment: datetime) -> np.datetime64:
    return np.datetime64(moment.astimezone(UTC).replace(tzinfo=None), "s")


@click.command("plot", cls=RayonCommand)
@click.option("--out", default="plan.png", show_default=True, type=click.Path(dir_okay=False),
              help="Picture to write; the format follows the suffix (.png, .svg, .pdf).")
@click.option("--from", "start", type=TimeParam(), help=time_help("Start of the time window (default: the plan's "
              "start)."))
@click.option("--to", "end", type=TimeParam(), help=time_help("End of the time window (default: the plan's end)."))
@click.option("--resource", "resources", multiple=True, metavar="NAME",
              help="Only this resource (repeatable; default: every resource).")
@state_option
def plot_command(out: str, start: TimeValue | None, end: TimeValue | None, resources: tuple[str, ...],
                 state_path: str | None) -> None:
    """Draw the stored plan: capacity over time and each accepted reservation's use, one panel per resource."""
    with opened(state_path) as store:
        plan = store.load_plan()
        now = store.now()
    start_step, end_step = window_steps(plan, resolve_time(start, now), resolve_time(end, now))
    try:
        written = plot_plan(plan, out, start_step, end_step, resources or None)
    except OSError as error:
        raise PlotError(f"cannot write {out}: {error.strerror or error}") from error
    click.echo(str(written))


COMMANDS = [plot_command]
