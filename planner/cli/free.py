"""`rayon free`: what the plan leaves free when, and the earliest a request fits (as `sinfo` and `scontrol show res`
say what is idle and reserved).

The plan's capacity and promised use, step by step over [--from, --to), come from the local store or, in client
mode, from the server's `GET /v1/plan/use` (asked a chunk at a time, at the plan's own step); the rows are
drawn from those alone, so both modes print the same.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any as AnyType

import click
import numpy as np

from planner.cli.options import json_option, opened, state_option
from planner.cli.remote import Client
from planner.cli.render import column_quantities
from planner.cli.shaping import emit_document, without_headers
from planner.cli.target import remote_target, server_option
from planner.replan.adapt import parse_vector
from rdl import units
from rdl.cli import RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.errors import RayonError, RDLErrors
from rdl.shape import step_ceil, step_floor
from rdl.table import format_table

EPOCH, FAR = "1970-01-01T00:00:00Z", "8999-01-01T00:00:00Z"  # before and after any plan
CHUNK = 20_000  # plan steps per request in client mode: the API's most points per resource in one answer


@dataclass(frozen=True)
class Use:
    """Capacity and promised use per resource, one column a plan step, from `start` at `step` seconds."""

    start: datetime
    step: int
    resources: list[str]
    capacity: np.ndarray  # resources x steps
    used: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.capacity.shape[1])

    def at(self, index: int) -> datetime:
        return self.start + timedelta(seconds=index * self.step)


def local_use(state_path: str | None, since: TimeValue | None, until: TimeValue | None) -> Use:
    """The plan's use over the range, from the store."""
    with opened(state_path) as store:
        plan = store.load_plan()
        now = store.now()
    clock = plan.clock
    lo, hi = step_range(clock.origin, clock.step, clock.steps, now, since, until)
    return Use(clock.at(lo), clock.step, list(plan.resources), plan.capacity[:, lo:hi], plan.used[:, lo:hi])


def step_range(origin: datetime, step: int, steps: int, now: datetime, since: TimeValue | None,
               until: TimeValue | None) -> tuple[int, int]:
    """The plan steps [lo, hi) covering [since, until) (default: the clock to the horizon's end), clipped to it."""
    start, end = resolve_time(since, now) or now, resolve_time(until, now)
    if end is not None and end <= start:
        raise RayonError(f"--to {units.format_instant(end)} is not after --from {units.format_instant(start)}")
    lo = min(max(step_floor(origin, start, step), 0), steps)
    hi = steps if end is None else min(max(step_ceil(origin, end, step), lo), steps)
    if lo == hi:
        raise RayonError(f"[{units.format_instant(start)}, {units.format_instant(end or start)}) is outside the plan, "
                         f"which covers [{units.format_instant(origin)}, "
                         f"{units.format_instant(origin + timedelta(seconds=steps * step))})",
                         hint="--from +0h starts at the plan's clock")
    return lo, hi


def remote_use(client: Client, since: TimeValue | None, until: TimeValue | None) -> Use:
    """The plan's use over the range, from the server, a chunk of plan steps per request."""
    now = client.now()
    first = client.request("GET", "/v1/plan/use", params={"from": EPOCH, "to": EPOCH})  # empty, at the plan's start
    last = client.request("GET", "/v1/plan/use", params={"from": FAR})  # empty, at the horizon's end
    origin, step = units.parse_instant(first["start"]), int(first["step"])
    steps = round((units.parse_instant(last["end"]) - origin).total_seconds() / step)
    lo, hi = step_range(origin, step, steps, now, since, until)
    names: list[str] = []
    capacity: list[list[float]] = []
    used: list[list[float]] = []
    for chunk in range(lo, hi, CHUNK):
        part = client.plan_use(origin + timedelta(seconds=chunk * step),
                               origin + timedelta(seconds=min(chunk + CHUNK, hi) * step))
        names = part["resources"]
        capacity = [[*(capacity[i] if capacity else []), *part["capacity"][n]] for i, n in enumerate(names)]
        used = [[*(used[i] if used else []), *part["used"][n]] for i, n in enumerate(names)]
    return Use(origin + timedelta(seconds=lo * step), step, names, np.array(capacity, dtype=np.float64),
               np.array(used, dtype=np.float64))


def runs(use: Use, bucket: int | None) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """Rows of (first step, end step, free, capacity): buckets of `bucket` steps holding the least free in each
    (the least capacity too), or, without one, the runs of steps where neither changes."""
    free = use.capacity - use.used
    if bucket is not None:
        starts = list(range(0, use.steps, bucket))
        return [(lo, min(lo + bucket, use.steps), free[:, lo:lo + bucket].min(axis=1),
                 use.capacity[:, lo:lo + bucket].min(axis=1)) for lo in starts]
    both = np.vstack([free, use.capacity])
    changes = np.flatnonzero(np.any(both[:, 1:] != both[:, :-1], axis=0)) + 1
    bounds = [0, *changes.tolist(), use.steps]
    return [(lo, hi, free[:, lo], use.capacity[:, lo]) for lo, hi in itertools.pairwise(bounds)]


def demand(use: Use, text: str) -> np.ndarray:
    """A request's resource vector in the plan's resources (0 for those left out); bad input names the place."""
    try:
        vector = parse_vector(text, "--for")
    except RDLErrors as errors:
        raise errors.then("nothing was looked up") from None
    unknown = sorted(set(vector) - set(use.resources))
    if unknown:
        raise RayonError(f"--for: the plan has no resource {', '.join(f'`{u}`' for u in unknown)}; it has "
                         f"{', '.join(use.resources)}")
    if not any(vector.values()):
        raise RayonError("--for: ask for some of a resource, such as {vcores: 8, memory: 16GiB}")
    return np.array([vector.get(name, 0.0) for name in use.resources])


def fits(free: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """How many of the request fit at once, per column of free capacity (whole copies)."""
    asked = wanted > 0
    ratio = np.floor(free[asked] / wanted[asked][:, None] + 1e-9)
    return np.maximum(ratio.min(axis=0), 0)


def earliest(use: Use, wanted: np.ndarray, length: int) -> tuple[int, int] | None:
    """The first step from which the request fits for `length` steps, and the end of the stretch it fits in."""
    ok = fits(use.capacity - use.used, wanted) >= 1
    if length > len(ok):
        return None
    held = np.convolve(ok.astype(np.int64), np.ones(length, dtype=np.int64), mode="valid")
    found = np.flatnonzero(held == length)
    if not len(found):
        return None
    first = int(found[0])
    stops = np.flatnonzero(~ok[first:])
    return first, first + int(stops[0]) if len(stops) else len(ok)


def document(use: Use, rows: list[tuple[int, int, np.ndarray, np.ndarray]], wanted: np.ndarray | None,
             length: int, found: tuple[int, int] | None) -> dict[str, AnyType]:
    """What `rayon free --json` prints."""
    def vector(values: np.ndarray) -> dict[str, float | int]:
        return {name: units_number(v) for name, v in zip(use.resources, values.tolist(), strict=True)}

    data: dict[str, AnyType] = {
        "from": units.format_instant(use.start), "to": units.format_instant(use.at(use.steps)), "step": use.step,
        "resources": use.resources,
        "items": [{"start": units.format_instant(use.at(lo)), "end": units.format_instant(use.at(hi)),
                   "free": vector(free), "capacity": vector(capacity),
                   **({} if wanted is None else {"fits": int(fits(free[:, None], wanted)[0])})}
                  for lo, hi, free, capacity in rows]}
    if wanted is not None:
        data["request"] = {"resources": vector(wanted), "lasting": length * use.step}
        data["earliest"] = None if found is None else {"start": units.format_instant(use.at(found[0])),
                                                       "free_until": units.format_instant(use.at(found[1]))}
    return data


def units_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 6)


def table(data: dict[str, AnyType]) -> str:
    """The rows as a table: free of capacity per resource, each column in one unit; FITS with --for."""
    items, names = data["items"], data["resources"]
    columns = []
    for name in names:
        shown = column_quantities(name, [i["free"][name] for i in items] + [i["capacity"][name] for i in items])
        columns.append([f"{free} of {whole}" for free, whole in zip(shown[:len(items)], shown[len(items):],
                                                                      strict=True)])
    headers = ["START", "END", *(f"FREE {name.upper()}" for name in names)]
    rows = [[i["start"], i["end"], *(column[k] for column in columns)] for k, i in enumerate(items)]
    if "request" in data:
        headers.append("FITS")
        for row, item in zip(rows, items, strict=True):
            row.append(str(item["fits"]))
    return format_table(headers, rows)


def verdict(data: dict[str, AnyType]) -> str:
    """The earliest-fit line of --for."""
    request = data["request"]
    asked = "{" + ", ".join(f"{k}: {units.format_quantity(k, v)}" for k, v in request["resources"].items()
                            if v) + "}"
    lasting = units.format_duration(request["lasting"])
    span = f"[{data['from']}, {data['to']})"
    if data["earliest"] is None:
        return f"{asked} for {lasting} does not fit anywhere in {span}"
    found = data["earliest"]
    return (f"{asked} for {lasting} fits at the earliest from {found['start']} (and stays free until "
            f"{found['free_until']})")


@click.command("free", cls=RayonCommand)
@click.option("--from", "since", type=TimeParam(), help=time_help("From this time (default: the plan's clock)."))
@click.option("--to", "until", type=TimeParam(), help=time_help("Until this time (default: the horizon's end)."))
@click.option("--for", "request", metavar="VECTOR", help="A request, an RDL resource vector such as "
              "'{vcores: 64, memory: 128GiB}': how many fit in each row (FITS), and the earliest it fits.")
@click.option("--lasting", metavar="DURATION", help="With --for: how long it must fit (default: one plan step).")
@click.option("--step", "bucket", metavar="DURATION", help="One row per this long (the least free in it), instead "
              "of one per stretch where nothing changes.")
@state_option
@server_option
@json_option
@click.option("-o", "--output", type=click.Choice(("table", "json", "yaml")), default="table", show_default=True,
              help="table, or the document --json prints as JSON or YAML.")
@click.option("--no-headers", is_flag=True, help="The table without its header and the verdict of --for.")
def free_command(since: TimeValue | None, until: TimeValue | None, request: str | None, lasting: str | None,
                 bucket: str | None, state_path: str | None, server: str | None, as_json: bool, output: str,
                 no_headers: bool) -> None:
    """What the plan leaves free over a time range, and the earliest a request fits.

    Each row is a stretch of time: what accepted reservations leave free of the capacity, per resource. With
    --for VECTOR, how many of it fit in each row and the earliest time it fits (for --lasting, at once). Exit
    status 0 whether it fits or not (the JSON's `earliest` is null when it does not), 2 for bad input.
    """
    length_s, bucket_s = duration(lasting, "--lasting"), duration(bucket, "--step")
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            use = remote_use(client, since, until)
    else:
        use = local_use(state_path, since, until)
    wanted = demand(use, request) if request is not None else None
    if lasting is not None and wanted is None:
        raise click.UsageError("--lasting goes with --for VECTOR")
    length = max(1, math.ceil(length_s / use.step - 1e-9)) if length_s else 1
    found = earliest(use, wanted, length) if wanted is not None else None
    rows = runs(use, max(1, math.ceil(bucket_s / use.step - 1e-9)) if bucket_s else None)
    data = document(use, rows, wanted, length, found)
    if as_json or output != "table":
        emit_document(data, "json" if as_json else output)
        return
    if no_headers:
        click.echo(without_headers(table(data)))
        return
    click.echo(table(data))
    if wanted is not None:
        click.echo(verdict(data))


def duration(text: str | None, option: str) -> float | None:
    """A duration option in seconds; bad input is a usage error naming the option."""
    if text is None:
        return None
    try:
        seconds = units.parse_duration(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    if not seconds > 0:
        raise click.BadParameter("must be longer than zero", param_hint=option)
    return seconds


COMMANDS = [free_command]
