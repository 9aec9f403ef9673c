"""`GET /v1/history`: reservations that ended a horizon ago and left the live plan (planner/store/history.py)."""

from __future__ import annotations

from typing import Any as AnyType

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from planner.api.auth import Principal
from planner.api.context import Service, caller, service
from planner.api.models import RecordOut
from planner.api.native import ERRORS, MAX_INT, MAX_PAGE, listed_user, record_json
from planner.store.rendering import allocation_json
from rdl import units

router = APIRouter(prefix="/v1")


class ArchivedOut(RecordOut):
    """A reservation as it was when it left the live plan, with the leases it held."""

    archived: str = Field(description="the plan's clock when it moved to the history")


class HistoryPage(BaseModel):
    """One page of the history, the latest moved first."""

    items: list[ArchivedOut]
    total: int
    offset: int
    limit: int
    next: str | None = Field(None, description="the URL of the next page, if any")


@router.get("/history", response_model=HistoryPage, tags=["reservations"], responses=ERRORS)
def history(request: Request, name: str | None = None, user: str | None = None, state: str | None = None,
            offset: int = Query(0, ge=0, le=MAX_INT), limit: int = Query(100, ge=1, le=MAX_PAGE),
            who: Principal = Depends(caller), svc: Service = Depends(service)) -> JSONResponse:
    """Reservations that expired, were cancelled, rejected or dropped a horizon ago, kept for the store's
    retention; the latest moved first, a page at a time; users see their own only."""
    whose = listed_user(who, user, state, "read another user's history")
    view = svc.view()
    found, total = svc.store.history(name=name, user=whose, state=state, offset=offset, limit=limit)
    following = offset + len(found)
    items: list[dict[str, AnyType]] = [
        {**record_json(a.record, view.instants, with_rdl=True), "archived": units.format_instant(a.archived),
         "allocations": [allocation_json(lease, view.instants) for lease in a.record.allocations]}  # what it held
        for a in found]
    return JSONResponse({
        "items": items, "total": total, "offset": offset, "limit": limit,
        "next": str(request.url.include_query_params(offset=following)) if following < total else None})
