"""The FastAPI application over a plan store: `create_app(state, tokens)`, served by `rayon serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any as AnyType

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from planner.api import batch, dashboard, history, metrics, native, placement, reality, yarn
from planner.api.auth import TokenRegistry
from planner.api.clockwork import ClockMode, WallClock
from planner.api.context import Service
from planner.api.errors import YARN_PREFIX, ApiError
from planner.api.extension import Extension
from planner.api.jobs import Jobs
from planner.api.limits import DEFAULT_MAX_BODY, RequestLimits
from planner.api.logs import AccessLog
from planner.api.models import REQUEST_MODELS
from planner.api.schedule import DEFAULT_REPLAN_LIMIT, ReplanSchedule
from planner.store.facade import Store, default_state_path
from rdl.errors import RayonError

DESCRIPTION = """Reservations over a durable plan: submit one and get the decision at once (accepted with its
leases, or rejected with the reason and the earliest deadline that would fit). Native endpoints under `/v1`;
YARN's ReservationSystem REST dialect under `/ws/v1/cluster/reservation`; Prometheus metrics at `/metrics`. Every
call but health, readiness and metrics needs `Authorization: Bearer TOKEN`."""


MANUAL = ClockMode("manual")


def store_target(state: str | Path | None) -> str:
    """The store's path (made absolute, for worker processes started elsewhere) or URL."""
    target = default_state_path() if state is None else state
    if isinstance(target, str) and "://" in target:
        return target
    return str(Path(target).expanduser().resolve())


def create_app(state: str | Path | None, tokens: TokenRegistry, *, max_body: int = DEFAULT_MAX_BODY,
               store: Store | None = None, cluster_timestamp: int | None = None,
               clock: ClockMode = MANUAL, extensions: Sequence[Extension] = (),
               replan_every: float | None = None, replan_time_limit: float = DEFAULT_REPLAN_LIMIT) -> FastAPI:
    """The API over the plan store at `state` (opened here unless `store` is given), answering `tokens`' holders.

    `clock`: how the plan's clock moves while the app runs (planner/api/clockwork.py; manual: only when told).
    `extensions`: what the layers above add (the follower's queues), installed here and ticked with the clock.
    `replan_every`: seconds of plan time between scheduled replan jobs (planner/api/schedule.py; None: none)."""
    target = store_target(state)
    service = Service(store or Store.open(target), target, tokens, Jobs(target))
    ticks = [extension.tick for extension in extensions]
    if replan_every is not None:
        ticks.append(ReplanSchedule(service.store, service.jobs, replan_every, replan_time_limit).tick)
    wall = WallClock(service.store, clock, on_advance=service.metrics.advanced, on_tick=ticks)
    service.clock_stuck = lambda: wall.stuck
    service.metrics.watch(service.store, service.jobs)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        wall.start()
        yield
        wall.stop()
        service.close()

    # /docs is served from vendored files by the dashboard (FastAPI's own loads Swagger UI from a CDN); no ReDoc
    app = FastAPI(title="rayon", description=DESCRIPTION, version="1", lifespan=lifespan, docs_url=None,
                  redoc_url=None)
    app.state.service = service
    app.state.yarn_ids = yarn.YarnIds(cluster_timestamp)
    app.include_router(native.router)
    app.include_router(batch.router)
    app.include_router(history.router)
    app.include_router(reality.router)
    app.include_router(placement.router)
    app.include_router(yarn.router)
    app.include_router(yarn.cluster_router)
    app.include_router(yarn.page_router)
    app.include_router(metrics.router)
    dashboard.install(app)
    for extension in extensions:
        extension.install(app, service)
    app.add_middleware(RequestLimits, limit=max_body)
    app.add_middleware(AccessLog)  # outermost: it times the whole answer, refusals by the limits too
    install_handlers(app)
    app.openapi = lambda: openapi(app)  # type: ignore[method-assign]
    return app


def openapi(app: FastAPI) -> dict[str, AnyType]:
    """The OpenAPI schema, with the request body models (read by the language's loaders) among its components."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in REQUEST_MODELS:
            found = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
            components.update(found.pop("$defs", {}))
            components[model.__name__] = found
        app.openapi_schema = schema
    return app.openapi_schema


def respond(request: Request, error: ApiError) -> JSONResponse:
    """The error in the style of the dialect the request spoke."""
    yarn_style = request.url.path.startswith(YARN_PREFIX)
    return JSONResponse(error.yarn() if yarn_style else error.native(), status_code=error.status,
                        headers=error.headers)


def install_handlers(app: FastAPI) -> None:
    """Render every error of the app (ours, the store's, the framework's, unexpected ones) in one style."""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return respond(request, exc)

    async def product_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RayonError)
        return respond(request, ApiError.from_error(exc))

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [{"where": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        text = "; ".join(f"{e['where']}: {e['message']}" for e in errors)
        status = 400 if request.url.path.startswith(YARN_PREFIX) else 422  # YARN answers a bad parameter with 400
        return respond(request, ApiError(status, "input", f"invalid request: {text}", None, errors))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return respond(request, ApiError(exc.status_code, "http", str(exc.detail),
                                         headers=dict(exc.headers) if exc.headers else None))

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return respond(request, ApiError(500, "internal", f"internal error: {type(exc).__name__}: {exc}",
                                         "the plan store commits each decision whole or not at all; "
                                         "read the reservation back to see where it stands", changed=None))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RayonError, product_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
