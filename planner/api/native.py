"""The native endpoints, `/v1/...`: submit, read, list, update, cancel, plan use, the log, health, replan.

Answers are the decision records of decisions.md (with more fields beside them). A user sees and
changes only their own reservations; admins see and change everyone's. A planning rejection is an
answer, not an error: 200 with `accepted: false` and the reason; 201 means a decision committed as
accepted. Bad input is 400 (does not parse) or 422 (does not hold up), and changes nothing.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from datetime import datetime
from typing import Any as AnyType

import numpy as np
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from planner.agents.greedy.agent import GreedyAgent
from planner.agents.registry import DEFAULT_AGENT, get_agent
from planner.api import bodies
from planner.api.auth import Principal
from planner.api.context import Service, admin, body, caller, mine, service
from planner.api.errors import ApiError
from planner.api.jobs import Job
from planner.api.models import (
    ErrorOut,
    Health,
    JobOut,
    Limits,
    LogPage,
    PlanUse,
    Ready,
    RecordOut,
    RecordPage,
    ReplanRequest,
    SubmitAnswer,
    WhoAmI,
)
from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.store.facade import STATES, StoreError, plan_key
from planner.store.records import Holding, LogEntry, Record
from planner.store.rendering import Instants, decision_json
from rdl import units
from rdl.errors import did_you_mean
from rdl.policy import parse_policy
from rdl.registry import UnknownName
from rdl.shape import step_ceil, step_floor
from rdl.tree import Reservation

router = APIRouter(prefix="/v1")
log = logging.getLogger("rayon.api")
MAX_PAGE = 1000
MAX_INT = 2**63 - 1  # what the database stores: larger offsets and ids are refused, not overflowed
MAX_POINTS = 20_000  # per resource in one plan-use answer
RESERVATION_BODY = {
    "required": True,
    "content": {
        "text/plain": {"schema": {"type": "string", "description": "one reservation in RDL text"}},
        "application/json": {"schema": {"anyOf": [{"$ref": "#/components/schemas/ReservationJSON"},
                                                  {"$ref": "#/components/schemas/YarnSubmission"}]}},
    },
}
ERRORS: dict[int | str, dict[str, AnyType]] = {
    code: {"model": ErrorOut, "description": text} for code, text in
    ((400, "the body does not parse"), (401, "no token, or an unknown one"), (403, "not yours, or not an admin"),
     (404, "no such reservation"), (409, "not in a state that allows it"), (413, "the body is too large"),
     (415, "a body neither text nor JSON"), (422, "the input does not hold up against the cluster"),
     (503, "the store does not answer"))}


# -- health ------------------------------------------------------------------------------------------------


@router.get("/health", response_model=Health, tags=["health"])
async def health() -> dict[str, str]:
    """Liveness: the server answers (no store access, no token; runs on the event loop, not a worker thread)."""
    return {"status": "ok"}


@router.get("/ready", response_model=Ready, response_model_exclude_none=True, tags=["health"],
            responses={503: {"model": Ready}})
def ready(svc: Service = Depends(service)) -> AnyType:
    """Readiness: the store answers and holds a plan, and the service's clock moves (503 otherwise, with the store
    error's code, or `clock`); no token."""
    try:
        meta = svc.store.meta()
    except StoreError as error:
        log.warning("not ready: %s", error)  # the details stay in the server's log: this answer needs no token
        return JSONResponse({"status": "unavailable", "reason": error.code}, 503)
    if (stuck := svc.clock_stuck()) is not None:
        log.warning("not ready: the plan's clock cannot move (%s)", stuck)
        return JSONResponse({"status": "unavailable", "reason": "clock", "now": meta["now"]}, 503)
    return {"status": "ready", "now": meta["now"], "plan_version": int(meta["plan_version"])}


@router.get("/whoami", tags=["health"], response_model=WhoAmI, responses={401: ERRORS[401]})
def whoami(who: Principal = Depends(caller)) -> dict[str, str]:
    """The user and role of the token presented."""
    return {"user": who.user, "role": who.role}


# -- reservations ------------------------------------------------------------------------------------------


def online_agent(name: str) -> str:
    """An agent fit for the request path (a greedy one, milliseconds); 422 otherwise."""
    try:
        agent = get_agent(name)
    except UnknownName as exc:
        raise ApiError(422, "input", str(exc)) from None
    if not isinstance(agent, GreedyAgent):
        raise ApiError(422, "input", f"agent `{name}` plans offline (seconds per decision), not on the request path",
                       "submit with gree or gree-l; an admin re-optimises the plan with POST /v1/admin/replan")
    return name


def for_caller(reservation: Reservation, who: Principal, owner: str | None = None) -> Reservation:
    """The reservation owned by `owner` (default the caller) unless it names a user; 403 for another's name."""
    if reservation.user is None:
        return replace(reservation, user=owner or who.user)
    if reservation.user != (owner or who.user) and not who.admin:
        raise ApiError(403, "forbidden", f"you are `{who.user}`: a reservation for user `{reservation.user}` "
                       "needs an admin token", "leave `user` out: it defaults to you")
    return reservation


def answer(decision: Decision, instants: Instants, dry_run: bool, status: int) -> JSONResponse:
    """A decision record as the answer to a submission or an update."""
    data = decision_json(decision, instants)
    data["dry_run"] = dry_run
    return JSONResponse(data, status)


@router.post("/reservations", response_model=SubmitAnswer, status_code=201, tags=["reservations"],
             openapi_extra={"requestBody": RESERVATION_BODY}, responses={200: {"model": SubmitAnswer}, **ERRORS})
async def submit(request: Request, raw: bytes = Depends(body), dry_run: bool = False, agent: str = DEFAULT_AGENT,
                 explain: bool = True, form: str | None = Query(None, alias="format"), who: Principal = Depends(caller),
                 svc: Service = Depends(service)) -> JSONResponse:
    """Submit one reservation (RDL text, RDL JSON or YARN JSON); 201 when accepted and committed, else 200."""
    started = time.perf_counter()
    consequence = "nothing was submitted"
    agent = online_agent(agent)
    reservation, text = bodies.read_one(raw, request.headers.get("content-type"), form, consequence)
    reservation = for_caller(reservation, who)
    forbidden = ApiError(403, "forbidden", f"the name `{reservation.name}` belongs to another user's reservation",
                         f"choose another name\n{consequence}")
    if dry_run:  # writes nothing, so it reads the name's owner itself (in a worker thread: it reads the store)
        return await run_in_threadpool(_dry_run, svc, reservation, text, agent, who, explain, started, forbidden)
    # No lock and no read here: submissions arriving together are decided and committed together (group commit)
    # by the store's own thread while this coroutine waits, and the event loop serves other requests. A
    # submission is checked against the plan as this server last read it; the store checks the owner inside the
    # write (`owner=`), across servers too, and validates again if the plan it decides on has moved on meanwhile
    # (`validated_on=`). Anything that would read the store runs in a worker thread, off the event loop.
    known = svc.recent_view_known()
    view, key = known if known is not None else await run_in_threadpool(svc.recent_view)
    try:
        bodies.validated(reservation, view.cluster, view.now, text, consequence)
    except ApiError:
        view, key = await run_in_threadpool(svc.recent_view, True)  # refused on a plan since replaced? Read now
        bodies.validated(reservation, view.cluster, view.now, text, consequence)
    try:
        decision = await svc.store.submit_async(reservation, agent, actor=who.user, explain=explain, validated=True,
                                                owner=mine(who), validated_on=key)
    except StoreError as error:
        if error.code == "forbidden":  # the answer a caller gets for another user's name, whoever finds it
            raise forbidden from None
        raise
    if plan_key(svc.store.recent_meta())[:2] != key[:2]:
        view = await run_in_threadpool(svc.view)  # the plan was replaced under this request: speak its new times
    svc.metrics.admitted("native", started, decision, committed=True)
    return answer(decision, view.instants, False, 201 if decision.accepted else 200)


def _dry_run(svc: Service, reservation: Reservation, text: str, agent: str, who: Principal, explain: bool,
             started: float, forbidden: ApiError) -> JSONResponse:
    """A submission decided on the current plan and not committed: its answer (200)."""
    view = svc.view(reservation.name)
    if view.owner is not None and not who.may_act_for(view.owner.user):
        raise forbidden
    bodies.validated(reservation, view.cluster, view.now, text, "nothing was submitted")
    decision = svc.store.submit(reservation, agent, actor=who.user, dry_run=True, explain=explain, validated=True)
    svc.metrics.admitted("native", started, decision, committed=False)
    return answer(decision, view.instants, True, 200)


def listed_user(who: Principal, user: str | None, state: str | None, doing: str) -> str | None:
    """Whose reservations a listing shows (the caller's own, unless an admin: None, everyone's, or `user`), once
    `user` and `state` are checked: 403 for another user's unless an admin (`doing` says what was asked), 422 for
    an unknown state."""
    if user is not None and not who.may_act_for(user):
        raise ApiError(403, "forbidden", f"you are `{who.user}`: only admins {doing}")
    if state is not None and state not in STATES:
        raise ApiError(422, "input", f"unknown state `{state}`; choose one of {', '.join(STATES)}",
                       did_you_mean(state, STATES))
    return user if who.admin else who.user


def record_json(record: Record, instants: Instants, with_rdl: bool = False,
                holdings: dict[str, Holding] | None = None) -> dict[str, AnyType]:
    """A stored reservation: its decision record as it stands (given `holdings`, what its leases add up to)."""
    data = decision_json(record.decision(), instants)
    if holdings is not None:
        data.pop("allocations", None)  # the record was read without its leases
        holding = holdings.get(record.name)
        if holding is not None and record.state == "accepted":
            data["holds"] = {"start": instants[holding.start], "end": instants[holding.end],
                             "allocations": holding.allocations}
    data.update(user=record.user, queue=record.queue, value=record.value, priority=record.priority,
                submitted=units.format_instant(record.submitted), decided=units.format_instant(record.decided),
                updated=units.format_instant(record.updated))
    if with_rdl:
        data["rdl"] = record.rdl
    return data


def instant(value: str | None, what: str) -> datetime | None:
    """An ISO-8601 query parameter; 422 naming it when it is not one."""
    if value is None:
        return None
    try:
        return units.parse_instant(value)
    except ValueError as exc:
        raise ApiError(422, "input", f"`{what}`: {exc}") from None


@router.get("/reservations", response_model=RecordPage, tags=["reservations"], responses=ERRORS)
def list_reservations(request: Request, user: str | None = None, state: str | None = None,
                      start: str | None = Query(None, alias="from", description="holding capacity at or after"),
                      end: str | None = Query(None, alias="to", description="holding capacity before"),
                      offset: int = Query(0, ge=0, le=MAX_INT), limit: int = Query(100, ge=1, le=MAX_PAGE),
                      allocations: bool = Query(False, description="every allocation, not only what they add up to"),
                      who: Principal = Depends(caller), svc: Service = Depends(service)) -> JSONResponse:
    """Stored reservations in decision order, a page at a time; users see their own only.

    Each item is the reservation's decision record; without `allocations=true` its allocations are
    summed up as `holds` (first start, last end, how many), as YARN lists without
    `include-resource-allocations`: a malleable reservation holds hundreds of leases.
    """
    whose = listed_user(who, user, state, "list another user's reservations")
    view = svc.view()
    found = svc.store.page(view.cluster, user=whose, state=state,
                           start=instant(start, "from"), end=instant(end, "to"), offset=offset, limit=limit,
                           with_leases=allocations)
    following = offset + len(found.records)
    return JSONResponse({
        "items": [record_json(r, view.instants, holdings=None if allocations else found.holdings)
                  for r in found.records],
        "total": found.total, "offset": offset, "limit": limit,
        "next": str(request.url.include_query_params(offset=following)) if following < found.total else None})


@router.get("/reservations/{name}", response_model=RecordOut, tags=["reservations"], responses=ERRORS)
def get_reservation(name: str, who: Principal = Depends(caller), svc: Service = Depends(service)) -> JSONResponse:
    """One stored reservation with its allocations and its RDL text."""
    view = svc.owned(name, who)
    found = svc.store.page(view.cluster, names_in=[name], limit=1)
    return JSONResponse(record_json(found.records[0], view.instants, with_rdl=True))


@router.put("/reservations/{name}", response_model=SubmitAnswer, tags=["reservations"],
            openapi_extra={"requestBody": RESERVATION_BODY}, responses=ERRORS)
def update_reservation(name: str, request: Request, raw: bytes = Depends(body), dry_run: bool = False,
                       agent: str = DEFAULT_AGENT, form: str | None = Query(None, alias="format"),
                       who: Principal = Depends(caller), svc: Service = Depends(service)) -> JSONResponse:
    """Swap an accepted reservation for a new version if it fits without the old one (try-and-swap).

    The answer says `previous: replaced` or `kept`; a rejected new version leaves the old one as it was.
    """
    consequence = "nothing was updated"
    agent = online_agent(agent)
    reservation, text = bodies.read_one(raw, request.headers.get("content-type"), form, consequence)
    if reservation.name != name:
        raise ApiError(422, "input", f"{bodies.SOURCE} holds `{reservation.name}`, so no new version of `{name}` "
                       f"(an update keeps the reservation's name)\n{consequence}")
    with svc.writes:
        view = svc.owned(name, who)
        reservation = for_caller(reservation, who, owner=view.owner.user if view.owner else None)
        bodies.validated(reservation, view.cluster, view.now, text, consequence)
        decision = svc.store.update(name, reservation, agent, actor=who.user, dry_run=dry_run, owner=mine(who))
    if not dry_run:
        svc.metrics.decided(decision)
    return answer(decision, view.instants, dry_run, 200)


@router.delete("/reservations/{name}", response_model=RecordOut, tags=["reservations"], responses=ERRORS)
def cancel_reservation(name: str, start: str | None = Query(None, alias="from", description="a recurring "
                       "reservation: cancel only its instances arriving at or after this time"),
                       who: Principal = Depends(caller), svc: Service = Depends(service)) -> JSONResponse:
    """Cancel an accepted reservation, returning its capacity to the plan; 409 if it holds none. With `from`, a
    recurring one is cancelled from that time on (the earlier instances stay; 422 for one that does not recur)."""
    after = instant(start, "from")
    with svc.writes:
        view = svc.owned(name, who)
        record = svc.store.cancel(name, actor=who.user, after=after, owner=mine(who))
    return JSONResponse(record_json(record, view.instants))


# -- the plan and its log -----------------------------------------------------------------------------------


def buckets(values: np.ndarray, size: int, reduce: AnyType) -> list[list[int | float]]:
    """Rows reduced over consecutive buckets of `size` columns (the last may be shorter)."""
    if values.shape[1] == 0:
        return [[] for _ in range(values.shape[0])]
    reduced = reduce.reduceat(values, np.arange(0, values.shape[1], size), axis=1)
    return [[int(v) if float(v).is_integer() else float(v) for v in row] for row in reduced.tolist()]


def step_range(clock: Clock, since: datetime | None, until: datetime | None) -> tuple[int, int]:
    """The plan steps [lo, hi) covering [since, until), clipped to the horizon (default: all of it)."""
    lo = 0 if since is None else min(max(step_floor(clock.origin, since, clock.step), 0), clock.steps)
    hi = clock.steps if until is None else min(max(step_ceil(clock.origin, until, clock.step), lo), clock.steps)
    return lo, hi


def bucket_steps(step: str | None, clock: Clock) -> int:
    """Plan steps per bucket for a bucket length such as `1h` (at least one, at most the horizon); 422 otherwise."""
    if step is None:
        return 1
    try:
        seconds = units.parse_duration(step)
    except ValueError as exc:
        raise ApiError(422, "input", f"`step`: {exc}") from None
    if not seconds <= clock.steps * clock.step:  # NaN and infinities too
        raise ApiError(422, "input", f"`step` {step} is longer than the plan's horizon "
                       f"({units.format_duration(clock.steps * clock.step)})")
    return max(1, math.ceil(seconds / clock.step))


@router.get("/plan/use", response_model=PlanUse, tags=["plan"], responses=ERRORS)
def plan_use(start: str | None = Query(None, alias="from"), end: str | None = Query(None, alias="to"),
             step: str | None = Query(None, description="bucket length, a duration such as `1h`"),
             _: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Capacity and promised use over a time range (default: the whole horizon), for dashboards."""
    since, until = instant(start, "from"), instant(end, "to")
    plan = svc.store.load_plan()
    clock = plan.clock
    lo, hi = step_range(clock, since, until)
    size = bucket_steps(step, clock)
    if (hi - lo) / size > MAX_POINTS:
        raise ApiError(422, "input", f"{math.ceil((hi - lo) / size)} points per resource is more than "
                       f"{MAX_POINTS}", "ask for a shorter range or a longer `step`")
    names = list(plan.resources)
    return {"start": units.format_instant(clock.at(lo)), "end": units.format_instant(clock.at(hi)),
            "step": size * clock.step, "times": [units.format_instant(clock.at(s)) for s in range(lo, hi, size)],
            "resources": names,
            "capacity": dict(zip(names, buckets(plan.capacity[:, lo:hi], size, np.minimum), strict=True)),
            "used": dict(zip(names, buckets(plan.used[:, lo:hi], size, np.maximum), strict=True))}


@router.get("/plan/limits", response_model=Limits, tags=["plan"], responses=ERRORS)
def plan_limits(user: str | None = Query(None, description="whose limits (default: the caller's)"),
                who: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """The sharing policy's limits on a user (the cluster file's `policies`), for dashboards; users may ask for
    their own only."""
    whose = user if user is not None else who.user
    if not who.may_act_for(whose):
        raise ApiError(403, "forbidden", f"you are `{who.user}`: only admins see another user's limits")
    cluster = svc.view().cluster
    limits = parse_policy(cluster.policies, cluster.step).for_user(whose)
    return {"user": whose, "instantaneous": limits.instantaneous, "average": limits.average,
            "window": None if limits.window is None else limits.window * cluster.step}


def log_json(entry: LogEntry) -> dict[str, AnyType]:
    """A log entry as `rayon log --json` prints it."""
    return {"id": entry.id, "time": units.format_instant(entry.time), "actor": entry.actor, "action": entry.action,
            "reservation": entry.reservation, "accepted": entry.accepted, "reason": entry.reason,
            "decision": entry.decision, "clock": units.format_instant(entry.clock) if entry.clock else None}


@router.get("/log", response_model=LogPage, tags=["plan"], responses=ERRORS)
def decision_log(request: Request, limit: int = Query(100, ge=1, le=MAX_PAGE),
                 before: int | None = Query(None, ge=0, le=MAX_INT, description="only entries older than this id"),
                 reservation: str | None = None, who: Principal = Depends(caller),
                 svc: Service = Depends(service)) -> dict[str, AnyType]:
    """The decision log, latest `limit` entries oldest first; users see what they did and what was done to theirs."""
    entries = svc.store.log_entries(limit=limit, before=before, reservation=reservation,
                                    visible_to=None if who.admin else who.user)
    older = str(request.url.include_query_params(before=entries[0].id)) if len(entries) == limit else None
    return {"entries": [log_json(e) for e in entries], "next": older}


# -- long work ------------------------------------------------------------------------------------------------


@router.post("/admin/replan", response_model=JobOut, response_model_exclude_none=True, status_code=202,
             tags=["admin"], responses=ERRORS)
def replan(response: Response, params: ReplanRequest | None = None, who: Principal = Depends(admin),
           svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Start re-optimising the plan (MILP) in a worker process; poll the job it answers with."""
    from planner.agents.milp.solvers import BACKENDS  # imports the MILP modeller: only when a replan is asked for

    params = params or ReplanRequest.model_validate({})
    if params.solver is not None and params.solver not in BACKENDS:
        unknown = UnknownName(BACKENDS.kind, params.solver, BACKENDS.names)
        raise ApiError(422, "input", unknown.message, unknown.hint)
    job = svc.jobs.replan(who.user, params.time_limit, params.solver, params.gap)
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return job.to_json()


@router.get("/jobs", response_model=list[JobOut], response_model_exclude_none=True, tags=["admin"],
            responses=ERRORS)
def list_jobs(who: Principal = Depends(caller), svc: Service = Depends(service)) -> list[dict[str, AnyType]]:
    """This server's jobs, past (the latest ones it keeps) and running, oldest first: all of them for an admin,
    one's own for a user (scheduled replans are the `schedule` actor's)."""
    return [job.to_json() for job in svc.jobs.all() if who.may_act_for(job.requested_by)]


@router.delete("/jobs/{job_id}", response_model=JobOut, response_model_exclude_none=True, tags=["admin"],
               responses=ERRORS)
def cancel_job(job_id: str, who: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Cancel a job still running (its requester or an admin): the plan stays as it was before the job."""
    return svc.jobs.cancel(own_job(job_id, who, svc).id).to_json()


@router.get("/jobs/{job_id}", response_model=JobOut, response_model_exclude_none=True, tags=["admin"],
            responses=ERRORS)
def get_job(job_id: str, who: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Where a job stands, and its result once done (its requester or an admin)."""
    return own_job(job_id, who, svc).to_json()


def own_job(job_id: str, who: Principal, svc: Service) -> Job:
    """The job, if the caller started it or is an admin; 404 or 403 otherwise."""
    job = svc.jobs.get(job_id)
    if not who.may_act_for(job.requested_by):
        raise ApiError(403, "forbidden", f"job `{job_id}` was started by another user")
    return job
