"""YARN's reservation REST dialect under `/ws/v1/cluster/reservation/`, so that YARN clients work unchanged.

As in YARN's RMWebServices: `new-reservation` answers an id `reservation_<clusterTimestamp>_<seq>`;
`submit` answers 202, `update` and `delete` 200 with `{}`, `list` 200 with `{"reservations": [...]}`;
every failure is 400 with a `RemoteException` (401 and 403 for who may do what). Where YARN's answer
is bare we add ours beside it: the decision record, and the error's code, message and JSON paths.
Submitting an id again with the same definition succeeds again without replanning (YARN's
idempotent submit); with a different one it is an error (update it instead).

The stored reservation is named by its id (YARN's `reservation-name` need not be unique), owned
by the caller, and read from the body by `rdl.forms.yarn.from_yarn` (its module notes give the mapping);
the `reservation-name` rides on its body's name, so it is listed back and is part of the definition.
`/ws/v1/cluster`, `/ws/v1/cluster/info` and the web UI's `/cluster` answer as the RM's do, for the
clients that probe them to find the active RM. tests/peers/yarn/conformance.py compares all of this
with a real ResourceManager; docs/api.md lists the differences kept on purpose.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import math
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any as AnyType

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from planner.api import bodies
from planner.api.auth import Principal
from planner.api.context import Service, View, body, caller, mine, service
from planner.api.errors import ApiError
from planner.api.models import ErrorOut, YarnAnswer, YarnCluster, YarnList, YarnNewReservation
from planner.api.yarn_info import info, window_of
from planner.core.decision import Decision
from planner.store.facade import StoreError, plan_key
from planner.store.records import Owner, Record
from planner.store.rendering import Instants, decision_json
from rdl.errors import RDLError, RDLErrors, Span, did_you_mean
from rdl.forms import yarn as yarn_form
from rdl.forms.yarn_read import encode_name
from rdl.shape import lease_steps
from rdl.syntax.printer import format_reservation
from rdl.tree import Atom, Expr, Reservation, walk

router = APIRouter(prefix="/ws/v1/cluster/reservation", tags=["yarn"])
cluster_router = APIRouter(prefix="/ws/v1/cluster", tags=["yarn"])
page_router = APIRouter(tags=["yarn"])
ID = re.compile(r"reservation_(\d+)_(\d+)")
DEFAULT_QUEUE = "default"  # the queue YARN lists when none is named
LIST_PAGE = 1000  # reservations in one answer of `/list`: about a megabyte with their allocations
LAST_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant a time can name
BAD: dict[int | str, dict[str, AnyType]] = {
    code: {"model": ErrorOut, "description": f"{text}: YARN's RemoteException, with our error beside it"}
    for code, text in ((400, "bad input, an unknown id, or a definition that does not fit"),
                       (401, "no token, or an unknown one"), (403, "not yours"), (413, "the body is too large"),
                       (503, "the store does not answer"))}


class YarnIds:
    """Reservation ids as YARN's ResourceManager makes them: its start time in ms and a sequence number."""

    def __init__(self, cluster_timestamp: int | None = None):
        self.cluster_timestamp = cluster_timestamp or int(time.time() * 1000)
        self._sequence = itertools.count(1)
        self._lock = threading.Lock()

    def new(self) -> str:
        with self._lock:
            return f"reservation_{self.cluster_timestamp}_{next(self._sequence):04d}"


async def yarn_ids(request: Request) -> YarnIds:
    """The id maker of the app serving this request."""
    found: YarnIds = request.app.state.yarn_ids
    return found


@contextmanager
def as_yarn() -> Iterator[None]:
    """Store errors in YARN's manner: everything the caller did wrong is 400 (the store failing stays 503)."""
    try:
        yield
    except StoreError as error:
        status = ApiError.from_error(error).status
        raise ApiError(status if status >= 500 else 400, error.code, error.message, error.hint) from None
    except ApiError as error:
        if error.status in (404, 409, 422):
            error.status = 400
        raise


def reservation_id(data: dict[str, AnyType], consequence: str) -> str:
    """The body's `reservation-id`, which must have YARN's form; 400 naming its JSON path otherwise."""
    value = data.get("reservation-id")
    problem = None
    if value is None or value == "":
        problem = "missing required field `reservation-id`"
    elif not isinstance(value, str) or not ID.fullmatch(value):
        problem = f"`reservation-id` must look like reservation_<clusterTimestamp>_<sequence>, got `{value}`"
    if problem is None:
        return str(value)
    error = RDLError(Span(bodies.SOURCE, json_path="$.reservation-id"), problem,
                     hint="ask POST /ws/v1/cluster/reservation/new-reservation for an id")
    raise ApiError.from_rdl(400, RDLErrors([error]), consequence)


def read_definition(data: dict[str, AnyType], rid: str, owner: str, view: View, consequence: str) -> Reservation:
    """The reservation of a YARN body, named by its id and owned by `owner`, checked against the cluster."""
    try:
        reservation = yarn_form.from_yarn(data, bodies.SOURCE)
    except RDLErrors as errors:
        raise ApiError.from_rdl(400, errors, consequence) from None
    reservation = replace(reservation, name=rid, user=owner, body=_named(reservation.body, data))
    return bodies.validated(reservation, view.cluster, view.now, "", consequence, status=400)


def _named(body: Expr, data: dict[str, AnyType]) -> Expr:
    """The body carrying YARN's `reservation-name` (the reservation itself is named by its id): the name is part of
    the definition, listed back exactly, and a resubmit under another name is another definition, as in YARN
    (an RDL name holds any text through `encode_name`)."""
    definition = data.get("reservation-definition")
    raw = definition.get("reservation-name") if isinstance(definition, dict) else None
    name = encode_name(raw) if isinstance(raw, str) else ""
    taken = {node.name for _, node in walk(body)}
    return replace(body, name=name) if name and body.name is None and name not in taken else body


def booked(reservation: Reservation, step: int) -> list[dict[str, AnyType]]:
    """Requests whose `duration` is not a whole number of plan steps, with what each container is booked for:
    the duration rounded up to steps (YARN's plan has 1 s steps; ours has the cluster file's `step`)."""
    found = []
    for _, node in walk(reservation.body):
        if isinstance(node, Atom) and node.lease is not None:
            held = lease_steps(node, step) * step
            if not math.isclose(held, node.lease):
                found.append({"reservation-request": node.span.json_path or node.name, "duration": round(
                    node.lease * 1000), "booked-duration": held * 1000, "step": step * 1000})
    return found


def answer(rid: str, decision: Decision, view: View, reservation: Reservation | None) -> dict[str, AnyType]:
    """Our body of an accepting YARN answer: the id, the decision record, and any duration rounded to steps."""
    data: dict[str, AnyType] = {"reservation-id": rid, "decision": decision_json(decision, view.instants)}
    rounded = booked(reservation, view.cluster.step) if reservation is not None else []
    if rounded:
        data["booked"] = rounded
    return data


def stored(svc: Service, view: View, name: str) -> Record:
    """The stored reservation of that name (which the view has seen)."""
    return svc.store.page(view.cluster, names_in=[name], limit=1).records[0]


def rejected(rid: str, decision: Decision, instants: Instants, what: str) -> ApiError:
    """A planning rejection as YARN answers it (400), with our decision record beside it."""
    reason = decision.reason.message if decision.reason else "no placement found"
    return ApiError(400, decision.reason.code if decision.reason else "capacity",
                    f"reservation {rid} {what}: {reason}",
                    extra={"reservation-id": rid, "decision": decision_json(decision, instants)})


@cluster_router.get("", response_model=YarnCluster)
@cluster_router.get("/info", response_model=YarnCluster)
def cluster_info(request: Request, ids: YarnIds = Depends(yarn_ids)) -> dict[str, AnyType]:
    """YARN's cluster information, which clients read to find the active ResourceManager; no token needed, as in
    YARN (it names versions only)."""
    version = f"rayon {_version()}"
    store = request.app.state.service.target
    kind = "postgresql" if str(store).startswith("postgresql") else "sqlite"
    return {"clusterInfo": {
        "id": ids.cluster_timestamp, "startedOn": ids.cluster_timestamp, "state": "STARTED", "haState": "ACTIVE",
        "rmStateStoreName": f"rayon plan store ({kind})", "resourceManagerVersion": version,
        "resourceManagerBuildVersion": version, "resourceManagerVersionBuiltOn": "", "hadoopVersion": version,
        "hadoopBuildVersion": version, "hadoopVersionBuiltOn": "",
        "haZooKeeperConnectionState": "not applicable: rayon keeps its plan in its store, without ZooKeeper"}}


@page_router.get("/cluster", response_class=HTMLResponse, include_in_schema=False)
def cluster_page() -> str:
    """Where YARN's RM serves its web UI: clients (yarn-api-client) probe it for a 200 to find the active RM."""
    return ("<!DOCTYPE html><html><head><title>rayon</title></head><body><h1>rayon: a reservation planner</h1>"
            "<p>YARN's reservation REST API is at <a href=\"/ws/v1/cluster/info\">/ws/v1/cluster/</a>; ours at "
            "<a href=\"/docs\">/docs</a>.</p></body></html>")


@functools.cache
def _version() -> str:
    """The installed package's version, read once: importlib.metadata scans the installed distributions (0.6 ms a
    call, once per /ws/v1/cluster/info request before)."""
    try:
        return importlib.metadata.version("rayon-planner")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree not installed
        return "unknown"


@router.post("/new-reservation", response_model=YarnNewReservation, responses=BAD)
def new_reservation(who: Principal = Depends(caller), ids: YarnIds = Depends(yarn_ids)) -> dict[str, str]:
    """A fresh reservation id to submit under."""
    return {"reservation-id": ids.new()}


@router.post("/submit", status_code=202, response_model=YarnAnswer, responses=BAD,
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/YarnSubmission"}}}}})
async def submit(raw: bytes = Depends(body), who: Principal = Depends(caller),
                 svc: Service = Depends(service)) -> AnyType:
    """Submit a reservation under its id; 202 when accepted (again, for the same id and definition).

    As a native submission: no server lock, decided and committed in the store's batches with the others arriving
    together (group commit; a worker forwards them from its event loop to the deciding process). Only the id's
    owner is read first (in a worker thread), for YARN's idempotent submit; the store checks it again inside the
    write, across servers too."""
    started = time.perf_counter()
    consequence = "nothing was submitted"
    data = bodies.json_object(raw, consequence)
    rid = reservation_id(data, consequence)
    with as_yarn():
        found, view, key = await run_in_threadpool(_looked_up, svc, rid)
        if found is not None and not who.may_act_for(found.user):
            raise _not_yours(rid)
        owner = found.user if found and found.user else who.user
        try:
            reservation = read_definition(data, rid, owner, view, consequence)
        except ApiError:  # refused on a plan since replaced? Read it now
            view, key = await run_in_threadpool(svc.recent_view, True)
            reservation = read_definition(data, rid, owner, view, consequence)
        if found is not None and found.state == "accepted":
            return await run_in_threadpool(_again, svc, rid, reservation)
        try:
            decision = await svc.store.submit_async(reservation, actor=who.user, validated=True, owner=mine(who),
                                                    validated_on=key)
        except StoreError as error:
            if error.code == "forbidden":  # another user took the id meanwhile
                raise _not_yours(rid) from None
            raise
    svc.metrics.admitted("yarn", started, decision, committed=True)
    if not decision.accepted and decision.reason is not None and decision.reason.code == "invalid":
        again = await run_in_threadpool(_accepted_meanwhile, svc, rid, reservation, who)
        if again is not None:  # the same id submitted twice at once: the other one's decision, as YARN's is
            return again
    if plan_key(svc.store.recent_meta())[:2] != key[:2]:
        view = await run_in_threadpool(svc.view)  # the plan was replaced under this request: speak its new times
    if not decision.accepted:
        raise rejected(rid, decision, view.instants, "could not be placed; nothing was submitted")
    return JSONResponse(answer(rid, decision, view, reservation), 202)


def _looked_up(svc: Service, rid: str) -> tuple[Owner | None, View, tuple[str, str, str]]:
    """The id's owner as stored now, and the plan as this server last read it with its `plan_key` (what the
    submission is validated against; the store validates again if it decides on another)."""
    found = svc.store.meta_and_owner(rid)[1]
    view, key = svc.recent_view_known() or svc.recent_view()
    return found, view, key


def _again(svc: Service, rid: str, reservation: Reservation) -> JSONResponse:
    """YARN's idempotent submit of an accepted id: its stored decision again (no decision, no log entry) for the
    same definition; 400 for another."""
    view = svc.view(rid)
    record = stored(svc, view, rid)
    if record.rdl != format_reservation(reservation):
        raise ApiError(400, "invalid", f"reservation {rid} already exists with a different definition",
                       "change it with POST /ws/v1/cluster/reservation/update")
    return JSONResponse(answer(rid, record.decision(), view, reservation), 202)


def _accepted_meanwhile(svc: Service, rid: str, reservation: Reservation, who: Principal) -> JSONResponse | None:
    """`_again`'s answer when the id was accepted after it was looked up (the same id submitted twice at once, the
    other decided first; 403 if another user's); None otherwise."""
    found = svc.store.meta_and_owner(rid)[1]
    if found is None or found.state != "accepted":
        return None
    if not who.may_act_for(found.user):
        raise _not_yours(rid)
    with as_yarn():
        return _again(svc, rid, reservation)


def _not_yours(rid: str) -> ApiError:
    return ApiError(403, "forbidden", f"reservation {rid} belongs to another user")


@router.post("/update", response_model=YarnAnswer, response_model_exclude_none=True, responses=BAD,
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/YarnUpdate"}}}}})
def update(raw: bytes = Depends(body), who: Principal = Depends(caller), svc: Service = Depends(service)) -> AnyType:
    """Replace a reservation's definition if the new one fits without the old; else the old one stays."""
    consequence = "nothing was updated"
    data = bodies.json_object(raw, consequence)
    rid = reservation_id(data, consequence)
    with as_yarn(), svc.writes:
        view = svc.owned(rid, who)
        # YARN's update body has no queue (a `queue` in it is ignored): the reservation keeps its own.
        data = {**data, "queue": stored(svc, view, rid).queue or DEFAULT_QUEUE}
        owner = view.owner.user if view.owner and view.owner.user else who.user
        reservation = read_definition(data, rid, owner, view, consequence)
        decision = svc.store.update(rid, reservation, actor=who.user, owner=mine(who))
    svc.metrics.decided(decision)
    if not decision.accepted:
        raise rejected(rid, decision, view.instants, "keeps its previous definition, as the new one does not fit")
    return answer(rid, decision, view, reservation)


@router.post("/delete", response_model=YarnAnswer, response_model_exclude_none=True, responses=BAD,
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/YarnDelete"}}}}})
def delete(raw: bytes = Depends(body), who: Principal = Depends(caller), svc: Service = Depends(service)) -> AnyType:
    """Delete (cancel) a reservation, returning its capacity to the plan."""
    consequence = "nothing was deleted"
    data = bodies.json_object(raw, consequence)
    rid = reservation_id(data, consequence)
    with as_yarn(), svc.writes:
        view = svc.owned(rid, who)
        record = svc.store.cancel(rid, actor=who.user, owner=mine(who))
    return {"reservation-id": rid, "decision": decision_json(record.decision(), view.instants)}


@router.get("/list", response_model=YarnList, response_model_exclude_none=True, responses=BAD)
def list_reservations(named: str | None = Query(None, alias="queue",
                                                description="this queue only (YARN's default: `default`)"),
                      rid: str | None = Query(None, alias="reservation-id",
                                              description="this reservation only (the times are not looked at)"),
                      start_time: int = Query(0, alias="start-time", ge=-1, le=LAST_MS, description="epoch ms"),
                      end_time: int = Query(-1, alias="end-time", ge=-1, le=LAST_MS,
                                            description="epoch ms; -1: no end"),
                      include: str = Query("false", alias="include-resource-allocations",
                                           description="`true` (any case) adds the allocations; anything else does "
                                                       "not, as in YARN"),
                      offset: int = Query(0, ge=0, le=2**31 - 1, description="ours: skip this many (paging)"),
                      limit: int = Query(LIST_PAGE, ge=1, le=LIST_PAGE, description="ours: at most this many"),
                      who: Principal = Depends(caller), svc: Service = Depends(service)) -> dict[str, AnyType]:
    """Active (accepted) reservations of a queue holding capacity in [start-time, end-time); users see their own only.

    As in YARN's ClientRMService: a `reservation-id` lists that reservation whatever the times; an `end-time`
    before the `start-time` is an error, an equal one is not. YARN answers in one page; ours are pages of at most
    LIST_PAGE (`next-offset` says where the next starts)."""
    queue = named or DEFAULT_QUEUE
    with_allocations = include.strip().lower() == "true"  # Java's Boolean.parseBoolean, which YARN's list uses
    if rid is None and 0 <= end_time < max(start_time, 0):
        raise ApiError(400, "input", f"end-time {end_time} must not be before start-time {start_time}")
    with as_yarn():
        view = svc.view(rid) if rid is not None else svc.view()
        reservable(view, queue, named is None)
        if rid is not None and view.owner is None:  # YARN lists nothing for an unknown id
            return {"reservations": [], "total": 0}
        if rid is not None:
            svc.owned(rid, who)  # another user's reservation is 403, as everywhere in our API
        user = None if who.admin else who.user
        names = [rid] if rid is not None else None
        if rid is None and (start_time > 0 or end_time >= 0 or queue == DEFAULT_QUEUE):
            names = _listed(svc, view, user, queue, _instant(max(start_time, 0)),
                            _instant(end_time) if end_time >= 0 else None)
        found = svc.store.page(view.cluster, user=user, state="accepted", names_in=names,
                               queue=queue if queue != DEFAULT_QUEUE else None, offset=offset, limit=limit,
                               with_leases=with_allocations)
    following = offset + len(found.records)
    return {"reservations": [info(record, view.instants.clock, with_allocations) for record in found.records],
            "total": found.total, "next-offset": following if following < found.total else None}


def reservable(view: View, queue: str, defaulted: bool = False) -> None:
    """A queue the plan holds reservations in: any, unless the cluster file lists its `queues` (YARN's reservable
    queues); 400 otherwise, as YARN answers."""
    queues = view.cluster.queues
    if queues and queue not in queues:
        named = ", ".join(f"`{name}`" for name in queues)
        why = " (YARN's list looks in `default` when no queue is named)" if defaulted else ""
        raise ApiError(400, "input", f"queue `{queue}` is not one of the plan's reservable queues{why}",
                       did_you_mean(queue, queues) or f"name one of {named} with ?queue=")


def _listed(svc: Service, view: View, user: str | None, queue: str, start: datetime,
            end: datetime | None) -> list[str]:
    """The accepted reservations of the queue whose window [arrival, deadline) meets [start, end]: YARN's list
    filters by the reservation's window, not by when it holds capacity (a scan, as YARN's is). A reservation
    without a queue is in `default`, the plan's default queue."""
    names: list[str] = []
    offset = 0
    while True:
        found = svc.store.page(view.cluster, user=user, state="accepted", queue=None if queue == DEFAULT_QUEUE else
                               queue, offset=offset, limit=LIST_PAGE, with_leases=False)
        for record in found.records:
            arrival, deadline = window_of(record.reservation(), record, view.instants.clock)
            if (record.queue or DEFAULT_QUEUE) == queue and deadline > start and (end is None or arrival <= end):
                names.append(record.name)
        offset += len(found.records)
        if not found.records or offset >= found.total:
            return names


def _instant(ms: int) -> datetime:
    return yarn_form.EPOCH + timedelta(milliseconds=ms)
