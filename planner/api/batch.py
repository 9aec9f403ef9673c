"""`POST /v1/reservations/batch`: several reservations in one request, each decided, all committed in one write.

The body is what a file holds (RDL text of several reservations, or an RDL JSON list), or several files at once,
each under its own name: `{"files": [{"name": "a.rdl", "text": "..."}, ...]}` (what `rayon submit --server`
sends, so that every error names the user's file, line and column). The whole batch is parsed and validated
against the cluster before anything is decided: bad input anywhere answers 400 or 422 with every error's place
and submits nothing. The reservations are then decided in order, each on the plan the earlier ones left (as
`rayon submit FILE` does locally), and committed in one transaction (`Store.submit_all`); if the write refuses
one of them (a name another user's reservation holds), none is committed. The answer lists each decision, in
the shape of `rayon plan --json` (decisions.md).
"""

from __future__ import annotations

import time
from typing import Any as AnyType

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from planner.agents.registry import DEFAULT_AGENT
from planner.api import bodies
from planner.api.auth import Principal
from planner.api.context import Service, body, caller, mine, service
from planner.api.errors import ApiError
from planner.api.models import BatchAnswer, BatchFiles
from planner.api.native import ERRORS, for_caller, online_agent
from planner.store.facade import StoreError, plan_key
from planner.store.rendering import decision_json
from rdl.errors import RDLError, RDLErrors
from rdl.tree import Reservation
from rdl.validate import validate

router = APIRouter(prefix="/v1")
MAX_BATCH = 1000  # reservations in one request: one write holds every other submission back while it is decided
CONSEQUENCE = "nothing was submitted"
BATCH_BODY = {
    "required": True,
    "content": {
        "text/plain": {"schema": {"type": "string", "description": "RDL text of one or more reservations"}},
        "application/json": {"schema": {"anyOf": [
            {"$ref": "#/components/schemas/BatchFiles"},
            {"type": "array", "items": {"$ref": "#/components/schemas/ReservationJSON"}},
            {"$ref": "#/components/schemas/ReservationJSON"}, {"$ref": "#/components/schemas/YarnSubmission"}]}},
    },
}

Files = list[tuple[str, str, list[Reservation]]]  # each file's name, text and reservations


def read_batch(raw: bytes, content_type: str | None, form: str | None) -> Files:
    """The files of a batch body, each parsed; 400 with every positioned error of every file when one does not."""
    text = bodies.decode(raw, CONSEQUENCE)
    chosen = bodies.body_format(content_type, form, text)
    named = _named_files(text) if chosen == "json" else None
    given = named if named is not None else [(bodies.SOURCE, text, chosen)]
    files: Files = []
    errors: list[RDLError] = []
    for source, content, file_form in given:
        try:
            files.append((source, content, bodies.parse_as(content, file_form, source)))
        except RDLErrors as failed:
            errors.extend(failed.errors)
    if errors:
        raise ApiError.from_rdl(400, RDLErrors(errors, {source: content for source, content, _ in given}),
                                CONSEQUENCE)
    return files


def _named_files(text: str) -> list[tuple[str, str, str]] | None:
    """The files of a `{"files": [...]}` body: name, text and form (given, or by the text: JSON if it looks like
    it); None for any other JSON (a reservation, or a list of them); 400 for files that are not all named apart."""
    try:
        data = bodies.json_object(text.encode(), CONSEQUENCE) if text.lstrip().startswith("{") else None
    except ApiError:
        return None  # not an object: the RDL JSON reader reports it, positioned
    if data is None or set(data) != {"files"}:
        return None
    try:
        files = BatchFiles.model_validate(data).files
    except ValueError as exc:
        raise ApiError(400, "input", f"{bodies.SOURCE}: `files` must be a list of {{name, text, format?}} "
                       f"objects: {exc}\n{CONSEQUENCE}") from None
    names = [f.name for f in files]
    if len(set(names)) != len(names) or bodies.SOURCE in names:
        raise ApiError(400, "input", f"{bodies.SOURCE}: each file needs a name of its own\n{CONSEQUENCE}")
    return [(f.name, f.text, f.format or ("json" if f.text.lstrip()[:1] in ("{", "[") else "rdl")) for f in files]


def checked(files: Files, reservations: list[Reservation], cluster: AnyType, now: AnyType) -> None:
    """The batch's reservations validated together against the cluster at the plan's clock (a name twice is an
    error at its second place); 422 with every error, positioned in its file."""
    try:
        validate(reservations, cluster, now)
    except RDLErrors as errors:
        raise ApiError.from_rdl(422, errors.with_sources({source: text for source, text, _ in files}),
                                CONSEQUENCE) from None


@router.post("/reservations/batch", response_model=BatchAnswer, tags=["reservations"],
             openapi_extra={"requestBody": BATCH_BODY}, responses=ERRORS)
async def submit_batch(request: Request, raw: bytes = Depends(body), dry_run: bool = False,
                       agent: str = DEFAULT_AGENT, explain: bool = True,
                       form: str | None = Query(None, alias="format"), who: Principal = Depends(caller),
                       svc: Service = Depends(service)) -> JSONResponse:
    """Submit several reservations (a file's worth, or several named files): each decided in order on the plan the
    earlier ones left, all committed in one write or, on any error, none. 200 with every decision."""
    started = time.perf_counter()
    agent = online_agent(agent)
    files = read_batch(raw, request.headers.get("content-type"), form)
    reservations = [for_caller(r, who) for _, _, found in files for r in found]
    if not reservations:
        raise ApiError(422, "input", f"{bodies.SOURCE} holds no reservation\n{CONSEQUENCE}")
    if len(reservations) > MAX_BATCH:
        raise ApiError(422, "input", f"{bodies.SOURCE} holds {len(reservations)} reservations, more than the "
                       f"{MAX_BATCH} one request may hold\n{CONSEQUENCE}", "send them in several batches")
    return await run_in_threadpool(_decide, svc, files, reservations, agent, who, dry_run, explain, started)


def _decide(svc: Service, files: Files, reservations: list[Reservation], agent: str, who: Principal, dry_run: bool,
            explain: bool, started: float) -> JSONResponse:
    """The batch validated, decided and (unless a dry run) committed; its answer."""
    view, key = svc.recent_view(True)
    checked(files, reservations, view.cluster, view.now)
    if dry_run:  # writes nothing, so the names' owners are read here (a write checks them itself)
        for reservation in reservations:
            owner = svc.view(reservation.name).owner
            if owner is not None and not who.may_act_for(owner.user):
                raise forbidden(reservation.name)
    try:
        decisions = svc.store.submit_all(reservations, agent, actor=who.user, dry_run=dry_run, explain=explain,
                                         validated=True, owner=mine(who), validated_on=key)
    except StoreError as error:
        if error.code == "forbidden":
            raise forbidden(next((r.name for r in reservations if f"`{r.name}`" in error.message), "")) from None
        raise ApiError(error_status(error), error.code, f"{error.message}\n{CONSEQUENCE}", error.hint) from None
    if plan_key(svc.store.recent_meta())[:2] != key[:2]:
        view = svc.view()  # the plan was replaced under this request: speak its new times
    for decision in decisions:
        svc.metrics.admitted("native", started, decision, committed=not dry_run)
    answered = [decision_json(decision, view.instants) for decision in decisions]
    return JSONResponse({"agent": agent, "dry_run": dry_run, "decisions": answered})


def forbidden(name: str) -> ApiError:
    """403 for a batch holding a name another user's reservation holds."""
    return ApiError(403, "forbidden", f"the name `{name}` belongs to another user's reservation",
                    f"choose another name\n{CONSEQUENCE}")


def error_status(error: StoreError) -> int:
    """The status a store error answers with (as the app's handler would give it)."""
    return ApiError.from_error(error).status
