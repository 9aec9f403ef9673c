"""Pydantic models of the HTTP API: the JSON form of RDL, decision records, plan use, and YARN's REST bodies.

Request bodies are read by the language's own loaders (`rdl.forms.jsonform`, `rdl.forms.yarn`), which name the
JSON path of every error as the command line does; these models describe the same shapes for the
OpenAPI schema and hold responses to them (the tests check both against the loaders and printers).
"""

from __future__ import annotations

from typing import Any as AnyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.api.jobs import MAX_TIME_LIMIT
from planner.core.decision import REASON_CODES
from planner.store.facade import ACTIONS, STATES

ReasonCode = Literal[REASON_CODES]  # type: ignore[valid-type]
State = Literal[STATES]  # type: ignore[valid-type]
Action = Literal[ACTIONS]  # type: ignore[valid-type]
Quantity = str | int | float
Number = int | float


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the JSON form of RDL (spec: rdl.md, "JSON form") ---------------------------------------------------


class AtomArguments(Strict):
    b: dict[str, Quantity] = Field(description="one bundle: resource → quantity (memory as `8GiB` or MiB)")
    g: int | None = Field(None, description="gang: bundles held together per lease (default 1)")
    h: int | None = Field(None, description="most bundles held at once")
    l: str | None = Field(None, description="lease length, a duration such as `5m`")  # noqa: E741 (RDL's name)
    w: str = Field(description="work in bundle-time, a duration such as `50h`")


class AtomExpr(Strict):
    name: str | None = None
    atom: AtomArguments


class WindowArguments(Strict):
    s: str | None = Field(None, description="start: ISO-8601 time or `+6h` from the arrival")
    e: str = Field(description="end: ISO-8601 time or `+6h` from the arrival")
    expr: Expr


class WindowExpr(Strict):
    name: str | None = None
    window: WindowArguments


class OrderArguments(Strict):
    order: list[Expr]
    gap: str | None = None


class OrderExpr(Strict):
    name: str | None = None
    order: list[Expr] | OrderArguments
    gap: str | None = Field(None, description="the most time between stages (`0s`: no gap)")


class AllExpr(Strict):
    name: str | None = None
    all: list[Expr]


class AnyExpr(Strict):
    name: str | None = None
    any: list[Expr]


Expr = AtomExpr | WindowExpr | OrderExpr | AllExpr | AnyExpr


class ReservationJSON(Strict):
    """A reservation in the JSON form of RDL."""

    name: str
    user: str | None = Field(None, description="the owner; defaults to the caller (admins may name another)")
    queue: str | None = None
    arrival: str | None = None
    deadline: str | None = None
    value: Number | None = None
    priority: int | None = None
    every: str | None = None
    until: str | None = None
    tz: str | None = Field(None, description="an IANA time zone: `every` counts calendar days there")
    placement: Literal["early", "late"] | None = None
    pack: Literal["node"] | None = None
    expr: Expr


# -- decision records (spec: decisions.md) ---------------------------------------------------------------


class AllocationOut(BaseModel):
    """Leases of one atom that start and end together."""

    atom: str
    start: str
    end: str
    bundles: int
    resources: dict[str, Number]
    instance: int | None = None


class ReasonOut(BaseModel):
    """Why a reservation was rejected, dropped or not placed."""

    code: ReasonCode
    atom: str | None = None
    message: str
    earliest_deadline: str | None = None


class DecisionOut(BaseModel):
    """A decision record: accepted with its allocations, or rejected with a reason (more fields may follow)."""

    model_config = ConfigDict(extra="allow")

    reservation: str
    accepted: bool
    allocations: list[AllocationOut] | None = None
    reason: ReasonOut | None = None
    agent: str | None = None


class SubmitAnswer(DecisionOut):
    """The decision on one submission or update (`previous`: `replaced` or `kept`, for updates)."""

    dry_run: bool
    state: State | None = None
    previous: Literal["replaced", "kept"] | None = None


class BatchFile(Strict):
    """One file of a batch: its name (the errors' FILE), its text, and its form (by the text when left out)."""

    name: str = Field(min_length=1, max_length=4096)
    text: str
    format: Literal["rdl", "json", "yarn"] | None = None


class BatchFiles(Strict):
    """A batch of several files, submitted whole: every reservation in them, in order."""

    files: list[BatchFile] = Field(min_length=1)


class BatchAnswer(BaseModel):
    """The decisions on a batch, in order, all committed together (or, for a dry run, none)."""

    agent: str
    dry_run: bool
    decisions: list[DecisionOut]


class Holds(BaseModel):
    """What an accepted reservation's allocations add up to: first start, last end, how many."""

    start: str
    end: str
    allocations: int


class RecordOut(DecisionOut):
    """One stored reservation: its decision record as it stands, who owns it, and when it was decided."""

    holds: Holds | None = Field(None, description="in lists without `allocations=true`, instead of the allocations")
    state: State
    user: str | None
    queue: str | None
    value: float
    priority: int
    submitted: str
    decided: str
    updated: str
    rdl: str | None = Field(None, description="canonical RDL text (single reservation reads only)")


class RecordPage(BaseModel):
    """One page of stored reservations, in decision order."""

    items: list[RecordOut]
    total: int
    offset: int
    limit: int
    next: str | None = Field(None, description="the URL of the next page, if any")


class LogEntryOut(BaseModel):
    id: int
    time: str
    actor: str | None
    action: Action
    reservation: str | None
    accepted: bool | None
    reason: dict[str, AnyType] | None
    decision: dict[str, AnyType] | None
    clock: str | None = Field(None, description="the plan's clock when the entry was written")


class LogPage(BaseModel):
    """Decision log entries, oldest first; `next` pages back to older ones."""

    entries: list[LogEntryOut]
    next: str | None = None


class PlanUse(BaseModel):
    """Capacity and promised use per resource over [start, end), in buckets of `step` seconds.

    A bucket shows the least capacity and the most use of the plan steps inside it (memory in MiB).
    """

    start: str
    end: str
    step: int
    times: list[str]
    resources: list[str]
    capacity: dict[str, list[Number]]
    used: dict[str, list[Number]]


class Health(BaseModel):
    status: Literal["ok"]


class WhoAmI(BaseModel):
    user: str
    role: Literal["user", "admin"]


class Limits(BaseModel):
    """The sharing policy's limits on one user, as shares (0 to 1) of each resource's capacity; null: none."""

    user: str
    instantaneous: float | None
    average: float | None
    window: int | None = Field(description="seconds the average is taken over")


class Ready(BaseModel):
    status: Literal["ready", "unavailable"]
    now: str | None = Field(None, description="the plan's clock")
    plan_version: int | None = Field(None, description="counts the plan's changes")
    reason: str | None = Field(None, description="when unavailable: the store error's code (details in the log)")


class ReplanRequest(Strict):
    # Strict: `{"time_limit": true}` is not a number of seconds (lax validation read it as 1.0 and started a replan)
    model_config = ConfigDict(extra="forbid", strict=True)

    time_limit: float | None = Field(None, ge=0.5, le=MAX_TIME_LIMIT, description="seconds the solver may take "
                                     f"(at most {MAX_TIME_LIMIT:g})")
    solver: str | None = Field(None, description="MILP backend: highs, cbc or cpsat")
    gap: float | None = Field(None, ge=0.0, description="relative gap at which the solver stops")


class JobOut(BaseModel):
    """Long work run off the request path; poll `GET /v1/jobs/{id}` until `status` is done or failed."""

    id: str
    kind: str
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    requested_by: str
    params: dict[str, AnyType]
    submitted: str
    started: str | None = None
    finished: str | None = None
    result: dict[str, AnyType] | None = None
    error: dict[str, AnyType] | None = None


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str = Field(description="what the command line would print: positioned lines, carets, the outcome")
    hint: str | None = None
    errors: list[dict[str, AnyType]] | None = None


class ErrorOut(BaseModel):
    error: ErrorBody
    changed: bool | None = Field(description="false: nothing was written; null: unknown (internal error)")


# -- YARN's ReservationSystem REST bodies (RMWebServices, webapp/dao) ------------------------------------


class YarnModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class YarnCapability(YarnModel):
    memory: int = Field(description="MB")
    vCores: int  # YARN's field name


class YarnRequest(YarnModel):
    capability: YarnCapability
    num_containers: int = Field(alias="num-containers")
    min_concurrency: int | None = Field(None, alias="min-concurrency")
    duration: int = Field(description="milliseconds")


class YarnRequests(YarnModel):
    interpreter: int | None = Field(None, alias="reservation-request-interpreter",
                                    description="0 R_ANY, 1 R_ALL, 2 R_ORDER, 3 R_ORDER_NO_GAP")
    requests: list[YarnRequest] = Field(alias="reservation-request")


class YarnDefinition(YarnModel):
    arrival: int = Field(description="epoch milliseconds")
    deadline: int = Field(description="epoch milliseconds")
    reservation_name: str | None = Field(None, alias="reservation-name")
    priority: int | None = None
    recurrence_expression: str | None = Field(None, alias="recurrence-expression")
    reservation_requests: YarnRequests = Field(alias="reservation-requests")


class YarnSubmission(YarnModel):
    queue: str
    reservation_id: str = Field(alias="reservation-id")
    reservation_definition: YarnDefinition = Field(alias="reservation-definition")


class YarnUpdate(YarnModel):
    reservation_id: str = Field(alias="reservation-id")
    reservation_definition: YarnDefinition = Field(alias="reservation-definition")


class YarnDelete(YarnModel):
    reservation_id: str = Field(alias="reservation-id")


class YarnNewReservation(YarnModel):
    reservation_id: str = Field(alias="reservation-id")


class YarnAnswer(YarnModel):
    """YARN answers submit with an empty 202 and update/delete with `{}`; we add the decision record."""

    reservation_id: str = Field(alias="reservation-id")
    decision: dict[str, AnyType] | None = None
    booked: list[dict[str, AnyType]] | None = Field(
        None, description="ours: the requests whose duration is not a whole number of plan steps, each with the "
                          "`booked-duration` its containers hold (rounded up to the plan's `step`)")


class YarnResourceAllocation(YarnModel):
    resource: YarnCapability
    start_time: int = Field(alias="startTime")
    end_time: int = Field(alias="endTime")


class YarnReservationInfo(YarnModel):
    acceptance_time: int = Field(alias="acceptance-time")
    user: str
    resource_allocations: list[YarnResourceAllocation] | None = Field(
        None, alias="resource-allocations",
        description="with include-resource-allocations=true: the total held per stretch of time, as YARN lists it")
    reservation_id: str = Field(alias="reservation-id")
    reservation_definition: dict[str, AnyType] = Field(alias="reservation-definition")
    rdl: str | None = Field(None, description="ours: the reservation as RDL when YARN's form cannot express it")


class YarnClusterInfo(YarnModel):
    """YARN's ClusterInfo, the fields a client probes at start-up (which RM is active, which version)."""

    id: int = Field(description="the server's start, epoch ms (YARN: the cluster timestamp)")
    startedOn: int  # YARN's field names from here on
    state: str
    haState: str
    rmStateStoreName: str
    resourceManagerVersion: str
    resourceManagerBuildVersion: str
    resourceManagerVersionBuiltOn: str
    hadoopVersion: str
    hadoopBuildVersion: str
    hadoopVersionBuiltOn: str
    haZooKeeperConnectionState: str


class YarnCluster(YarnModel):
    clusterInfo: YarnClusterInfo


class YarnList(YarnModel):
    reservations: list[YarnReservationInfo]
    total: int | None = Field(None, description="ours: how many reservations match in all")
    next_offset: int | None = Field(None, alias="next-offset",
                                    description="ours: the `offset` of the next page, when there is one")


REQUEST_MODELS: tuple[type[BaseModel], ...] = (ReservationJSON, YarnSubmission, YarnUpdate, YarnDelete, ReplanRequest,
                                                BatchFiles)
