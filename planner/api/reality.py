"""`GET /v1/queues/history`: the plan against reality, per queue over a time range (the dashboard's third view);
`POST /v1/queues/allocated`: what a scheduler allocated, loaded by an admin (a simulation's, read by the dashboard).

What the plan follower wrote at each step (each queue's `planned` and `guaranteed` capacity, and its `max`) and
what a scheduler reported it allocated (YuniKorn polled by `rayon serve --follow-allocated`), as recorded in
the store's queue log (planner/store/queuelog.py). The token rules of `GET /v1/queues` hold: an admin sees every
queue; a user sees the plan's own queues, their reservations' queues by name, and every other user's reservation
queues summed into one anonymous `others` entry; queues the follower never wrote (a scheduler's own) only admins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any as AnyType
from typing import Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from planner.api.auth import Principal
from planner.api.context import Service, admin, caller, service
from planner.api.errors import ApiError
from planner.api.native import ERRORS, instant
from planner.store.queuelog import FOLLOWER, SOURCES, QueueLog, Run
from rdl import units

router = APIRouter(prefix="/v1")
OTHERS = "others"  # the anonymous entry: every other user's reservation queues, summed (as /v1/queues says it)
DEFAULT_SPAN = timedelta(days=1)  # back from the plan's clock, when no `from` is given
MAX_SPAN = timedelta(days=366)
Owners = dict[str, tuple[str | None, str | None, str | None]]  # queue -> (kind, reservation, user)


@router.get("/queues/history", tags=["plan"], responses={k: ERRORS[k] for k in (401, 422, 503)})
def queue_history(start: str | None = Query(None, alias="from", description="default: a day before the clock"),
                  end: str | None = Query(None, alias="to", description="default: the end of the clock's step"),
                  source: str | None = Query(None, description=f"one of {', '.join(SOURCES)} (default: all)"),
                  who: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Per queue, the runs of equal figures over `[from, to)`: what the plan follower wrote at each step
    (`follower`: `planned`, `guaranteed`, `max`) and what schedulers reported they allocated (`allocated`, by
    source). A user sees their own reservations' queues and the plan's, the others' summed as one `others`."""
    view = svc.view()
    since, until = _range(instant(start, "from"), instant(end, "to"), view.now + timedelta(seconds=view.cluster.step))
    if source is not None and source not in SOURCES:
        raise ApiError(422, "input", f"unknown source `{source}`; choose one of {', '.join(SOURCES)}")
    log = QueueLog(svc.store.engine)
    runs = log.read(since, until, source)
    owners = log.owners()
    queues = entries(runs, owners)
    if not who.admin:
        queues = seen_by(queues, who.user)
    return {"from": units.format_instant(since), "to": units.format_instant(until),
            "now": units.format_instant(view.now), "step": view.cluster.step, "queues": queues}


def _range(since: datetime | None, until: datetime | None, default: datetime) -> tuple[datetime, datetime]:
    """`[from, to)` with its defaults (the day up to `default`); 422 unless `from` comes before `to` by at most
    MAX_SPAN (instants lie in the years 1970-9000: `instant` refuses others, so nothing here overflows)."""
    until = until or default
    since = since or until - DEFAULT_SPAN
    if not (since < until and until - since <= MAX_SPAN):
        raise ApiError(422, "input", f"`from` must come before `to`, at most {MAX_SPAN.days} days before it")
    return since, until


class AllocatedRun(BaseModel):
    """What one queue held over `[start, end)`, in the plan's units (memory in MiB)."""

    queue: str = Field(min_length=1, max_length=255, description="the queue's full path, `root.plan.NAME`")
    start: str = Field(description="ISO-8601")
    end: str = Field(description="ISO-8601, after `start`")
    allocated: dict[str, float] = Field(description="resource name to amount, each finite and at least 0")


class AllocatedRuns(BaseModel):
    """Runs of what a scheduler allocated, from one source."""

    source: Literal["simulate", "yunikorn"]
    runs: list[AllocatedRun] = Field(max_length=100_000)


@router.post("/queues/allocated", tags=["plan"], responses={k: ERRORS[k] for k in (400, 401, 403, 422, 503)})
def load_allocated(body: AllocatedRuns, _: Principal = Depends(admin),
                   svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Load what a scheduler allocated to each queue (admins): each queue's runs replace what that source had of it
    over the span they cover, so a simulation loaded again, or a piece at a time, replaces itself. All or nothing:
    one bad run and nothing is loaded."""
    runs = []
    for index, run in enumerate(body.runs):
        where = f"runs[{index}]"
        since, until = instant(run.start, f"{where}.start"), instant(run.end, f"{where}.end")
        assert since is not None and until is not None
        if until <= since:
            raise ApiError(422, "input", f"{where}: `end` must come after `start`")
        bad = [name for name, value in run.allocated.items() if not (math.isfinite(value) and value >= 0)]
        if bad:
            raise ApiError(422, "input", f"{where}: `{bad[0]}` must be a finite amount of at least 0")
        runs.append(Run(body.source, run.queue, since, until,
                        {"allocated": {name: whole(value) for name, value in sorted(run.allocated.items())}}))
    written = QueueLog(svc.store.engine).load(body.source, runs)
    return {"source": body.source, "runs": written, "queues": len({run.queue for run in runs})}


def entries(runs: Iterable[Run], owners: Owners) -> list[dict[str, AnyType]]:
    """One entry per queue: who it is (from the follower's latest row of it) and its runs, by source."""
    found: dict[str, dict[str, AnyType]] = {}
    for run in runs:
        kind, reservation, user = (run.kind, run.reservation, run.user) if run.source == FOLLOWER else \
            owners.get(run.queue, (None, None, None))
        entry = found.setdefault(run.queue, {"queue": run.queue, "kind": kind, "reservation": reservation,
                                             "user": user, "follower": [], "allocated": {}})
        if run.source == FOLLOWER:
            entry.update(kind=kind, reservation=reservation, user=user)
            entry["follower"].append(run_json(run))
        else:
            entry["allocated"].setdefault(run.source, []).append(run_json(run))
    return [found[name] for name in sorted(found)]


def run_json(run: Run) -> dict[str, AnyType]:
    return {"start": units.format_instant(run.start), "end": units.format_instant(run.end), **run.figures}


def seen_by(queues: Sequence[dict[str, AnyType]], user: str) -> list[dict[str, AnyType]]:
    """The entries `user` may see: the plan's queues and their own reservations' by name, the other users'
    reservation queues summed into one anonymous `others` entry (no name, no max), nothing the follower never
    wrote (a queue of the scheduler's own says nothing of the plan, and may name someone)."""
    own, others = [], []
    for entry in queues:
        if entry["kind"] in ("plan", "default") or (entry["kind"] == "reservation" and entry["user"] == user):
            own.append(entry)
        elif entry["kind"] == "reservation":
            others.append(entry)
    if others:
        sources = sorted({s for entry in others for s in entry["allocated"]})
        own.append({"queue": None, "kind": OTHERS, "reservation": None, "user": None, "count": len(others),
                    "follower": summed([e["follower"] for e in others], ("planned", "guaranteed")),
                    "allocated": {s: summed([e["allocated"].get(s, []) for e in others], ("allocated",))
                                  for s in sources}})
    return own


def summed(series: Sequence[Sequence[dict[str, AnyType]]], keys: tuple[str, ...]) -> list[dict[str, AnyType]]:
    """Step functions (runs of `{start, end, key: vector}`) added up where any of them is defined: runs of equal
    sums, a gap where none is."""
    edges = sorted({units.read_instant(run[side]) for runs in series for run in runs for side in ("start", "end")})
    timed = [[(units.read_instant(run["start"]), units.read_instant(run["end"]), run) for run in runs]
             for runs in series]
    out: list[dict[str, AnyType]] = []
    cursors = [0] * len(timed)
    for lo, hi in pairwise(edges):
        total: dict[str, dict[str, float]] | None = None
        for i, runs in enumerate(timed):
            while cursors[i] < len(runs) and runs[cursors[i]][1] <= lo:
                cursors[i] += 1
            if cursors[i] < len(runs) and runs[cursors[i]][0] <= lo:
                total = total or {key: {} for key in keys}
                for key in keys:
                    for name, value in (runs[cursors[i]][2].get(key) or {}).items():
                        total[key][name] = total[key].get(name, 0) + value
        if total is None:
            continue
        figures = {key: {name: whole(value) for name, value in vector.items()} for key, vector in total.items()}
        last = out[-1] if out else None
        if last is not None and last["end"] == units.format_instant(lo) and \
                all(last[key] == figures[key] for key in keys):
            last["end"] = units.format_instant(hi)
        else:
            out.append({"start": units.format_instant(lo), "end": units.format_instant(hi), **figures})
    return out


def whole(value: float) -> float | int:
    """A sum as JSON writes it best: whole amounts as integers."""
    return int(value) if float(value).is_integer() else round(value, 6)
