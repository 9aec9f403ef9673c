"""`POST /v1/placement`: place one reservation on a free-capacity profile the caller gives, with a chosen agent.

What YARN's ResourceManager asks of our reservation agent (yarn-agent/, docs/yarn.md): the plan is YARN's, not
ours, so the caller sends what is free in it over time (YARN's `getAvailableResourceOverTime`) and the
reservation (YARN's REST submission body, or RDL JSON); the answer is the decision record our agents give on that
profile (decisions.md: allocations, or a rejection with our reason and the earliest deadline that would fit),
with every instant also in epoch milliseconds, YARN's unit. Nothing is stored and the plan store is not read:
the profile is the whole truth. Times are epoch milliseconds; the profile's runs are contiguous, whole plan steps.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any as AnyType

import numpy as np
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from planner.admission import Planner
from planner.agents.base import Agent
from planner.agents.registry import AGENTS, DEFAULT_AGENT, get_agent
from planner.api import bodies
from planner.api.auth import Principal
from planner.api.context import caller
from planner.api.errors import ApiError
from planner.api.jobs import MAX_TIME_LIMIT
from planner.api.models import AllocationOut, DecisionOut, ReasonOut
from planner.api.native import ERRORS
from planner.core.decision import Decision
from planner.core.plan import Allocation
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.forms import jsonform, yarn
from rdl.policy import SharingPolicy
from rdl.registry import UnknownName
from rdl.tree import Reservation, Resources

router = APIRouter(prefix="/v1")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_STEPS = 500_000  # plan steps in one profile (about 6 days at YARN's one-second step)
MAX_RUNS = 100_000  # runs of the profile
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the last instant a datetime holds
DEFAULT_MILP_SECONDS = 5.0
WHERE = "reservation"  # how messages name the request's reservation
CONSEQUENCE = "nothing was placed"


class Run(BaseModel):
    """What is free over [start, end) (epoch ms), per resource (memory in MiB)."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=0, le=MAX_MS, description="epoch milliseconds")
    end: int = Field(ge=0, le=MAX_MS, description="epoch milliseconds, after `start`")
    resources: dict[str, float] = Field(description="free quantity per resource, e.g. {memory: MiB, vcores: n}")


class Limits(BaseModel):
    """The plan's per-user sharing policy (YARN's CapacityOverTimePolicy; our cluster file's `policies:
    user_limits`): shares of `capacity` the reservation's user may hold at any step and averaged over `window`."""

    model_config = ConfigDict(extra="forbid")

    instantaneous: float | None = Field(None, ge=0, le=1, description="share at any instant")
    average: float | None = Field(None, ge=0, le=1, description="share averaged over any `window`")
    window: int | None = Field(None, ge=1, le=MAX_MS, description="milliseconds; taken as whole plan steps, "
                               "rounded up")


class PlacementRequest(BaseModel):
    """A reservation to place on a free-capacity profile (YARN's plan as its agent sees it)."""

    model_config = ConfigDict(extra="forbid")

    reservation: dict[str, AnyType] = Field(description="YARN's REST submission body (`reservation-definition`, "
                                            "`queue`, ...) or one reservation in RDL JSON")
    free: list[Run] = Field(min_length=1, max_length=MAX_RUNS,
                            description="contiguous runs from the plan's origin, each whole plan steps")
    step: int = Field(1000, ge=1000, description="milliseconds per plan step: whole seconds")
    now: int | None = Field(None, ge=0, le=MAX_MS, description="the plan's clock, epoch ms (default: the "
                            "profile's start); nothing is placed before it")
    capacity: dict[str, float] | None = Field(None, description="the whole plan's capacity (YARN's "
                                              "getTotalCapacity): a reservation larger is bad input; default: the "
                                              "most the profile has free")
    agent: str = Field(DEFAULT_AGENT, description="gree, gree-l or milp")
    time_limit: float | None = Field(None, ge=0.5, le=MAX_TIME_LIMIT, description="milp only: seconds the solver "
                                     f"may take (default {DEFAULT_MILP_SECONDS:g})")
    explain: bool = Field(True, description="on a capacity rejection, search the earliest deadline that would fit")
    limits: Limits | None = Field(None, description="the user's sharing policy; with it, `capacity` is what the "
                                  "shares are of")
    user_use: list[Run] | None = Field(None, max_length=MAX_RUNS, description="what the reservation's user already "
                                       "holds (YARN's getConsumptionForUserOverTime): contiguous runs on the "
                                       "profile's steps, which may reach a window before and after it")


class PlacedAllocation(AllocationOut):
    """An allocation, with its times also in epoch milliseconds."""

    start_ms: int
    end_ms: int


class PlacedReason(ReasonOut):
    earliest_deadline_ms: int | None = None


class PlacementAnswer(DecisionOut):
    """The decision on the profile (nothing stored): accepted with allocations, or rejected with our reason."""

    allocations: list[PlacedAllocation] | None = None  # type: ignore[assignment]
    reason: PlacedReason | None = None  # type: ignore[assignment]
    step: int


@router.post("/placement", response_model=PlacementAnswer, tags=["placement"], responses=ERRORS)
async def place(request: PlacementRequest, _: Principal = Depends(caller)) -> JSONResponse:
    """Place one reservation on the given free-capacity profile with the chosen agent; stores nothing.

    200 with `accepted` and the allocations, or `accepted: false` and the reason (decisions.md);
    422 for input that does not hold up (the message names the field)."""
    return JSONResponse(await run_in_threadpool(decide, request))  # arrays and agents: off the event loop


def decide(request: PlacementRequest) -> dict[str, AnyType]:
    """The decision record of the request's reservation on its profile."""
    agent = chosen_agent(request.agent, request.time_limit)
    reservation = read_reservation(request.reservation)
    planner, origin = profile_planner(request)
    if request.limits is not None or request.user_use is not None:
        planner, origin = limited_planner(request, planner, origin, reservation.user)
    text = json.dumps(request.reservation, indent=1)
    bodies.validated(reservation, planner.plan.cluster, planner.plan.now, text, CONSEQUENCE)
    decision = planner.submit(reservation, agent, planner.plan.now, dry_run=True, validated=True,
                              explain=request.explain)
    return answer_json(decision, planner, origin, request.step)


def chosen_agent(name: str, time_limit: float | None) -> Agent:
    """The agent by name (a MILP with its time limit); 422 for an unknown name or a limit for a greedy agent."""
    try:
        AGENTS.check(name)
    except UnknownName as unknown:
        raise ApiError(422, "input", f"agent: {unknown.message}", unknown.hint) from None
    if name != "milp":
        if time_limit is not None:
            raise ApiError(422, "input", f"time_limit: agent `{name}` is greedy and takes no time limit",
                           "leave `time_limit` out, or choose agent milp")
        return get_agent(name)
    from planner.agents.milp.agent import MilpAgent  # the modeller loads only when the MILP is asked for

    return MilpAgent(time_limit=time_limit or DEFAULT_MILP_SECONDS)


def instant_ms(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def ms_of(instant: datetime) -> int:
    return round((instant - EPOCH) / timedelta(milliseconds=1))


def profile_planner(request: PlacementRequest) -> tuple[Planner, int]:
    """A planner whose plan's free capacity is the profile (nothing promised in it), and the origin in ms."""
    step, runs = request.step, request.free
    if step % 1000:
        raise ApiError(422, "input", f"step: {step} ms is not whole seconds", "our plan steps are whole seconds")
    origin = runs[0].start
    if origin % step:
        raise ApiError(422, "input", f"free[0].start: {origin} is not on a plan step ({step} ms from the epoch)",
                       "YARN's plan steps count from the epoch: floor the profile's start to a step")
    names = tuple(runs[0].resources)
    steps = check_runs(runs, step, names)
    capacity = request.capacity or {n: max(r.resources[n] for r in runs) for n in names}
    if set(capacity) != set(names):
        raise ApiError(422, "input", f"capacity: names {', '.join(sorted(capacity))}, the profile "
                       f"{', '.join(sorted(names))}", "give the same resources in both")
    bad = [n for n, v in capacity.items() if not 0 <= v < float("inf")]
    if bad:
        raise ApiError(422, "input", f"capacity.{bad[0]}: {capacity[bad[0]]} is not a finite quantity >= 0")
    free = np.empty((len(names), steps), dtype=np.float64)
    for run in runs:
        first, last = (run.start - origin) // step, (run.end - origin) // step
        free[:, first:last] = np.array([run.resources[n] for n in names])[:, None]
    over = [n for i, n in enumerate(names) if free[i].max() > capacity[n]]
    if over:
        raise ApiError(422, "input", f"free: more {over[0]} free ({free[names.index(over[0])].max():g}) than the "
                       f"capacity ({capacity[over[0]]:g})")
    now = origin if request.now is None else request.now
    if not origin <= now < origin + steps * step:
        raise ApiError(422, "input", f"now: {now} is outside the profile [{origin}, {origin + steps * step})")
    cluster = Cluster(start=instant_ms(origin), capacity=Resources.of({n: capacity[n] for n in names}),
                      step=step // 1000, horizon=steps * step // 1000)
    planner = Planner(cluster, instant_ms(now))
    planner.plan.capacity = free  # what is free is all there is: nothing is promised on this plan
    return planner, origin


def limited_planner(request: PlacementRequest, free_only: Planner, origin: int,
                    user: str | None) -> tuple[Planner, int]:
    """The profile's planner held to the user's sharing policy (planner.core.policy, as a cluster file's
    `policies: user_limits`), the user's use counted: its plan reaches over `user_use` too, capacity is the
    request's, what is not free is held, and where the profile says nothing nothing is free."""
    limits = request.limits or Limits(instantaneous=None, average=None, window=None)
    if request.user_use is None:
        raise ApiError(422, "input", "user_use: missing; `limits` count the user's use", "send the user's use, "
                       "[] if it holds nothing")
    if limits.average is not None and limits.window is None:
        raise ApiError(422, "input", "limits.window: missing; an `average` holds over a window")
    step, names = request.step, free_only.plan.resources
    use = request.user_use
    if use:
        check_runs(use, step, names, "user_use")
        if use[0].start % step:
            raise ApiError(422, "input", f"user_use[0].start: {use[0].start} is not on a plan step ({step} ms "
                           "from the epoch)")
    steps = free_only.plan.clock.steps
    first = min(origin, use[0].start if use else origin)
    last = max(origin + steps * step, use[-1].end if use else origin)
    if (last - first) // step > MAX_STEPS:
        raise ApiError(422, "input", f"user_use: the profile and the use span {(last - first) // step} plan "
                       f"steps, more than {MAX_STEPS}", "send the use over a window before and after the profile")
    window = None if limits.window is None else -(-limits.window // step)
    if window is not None and window > MAX_STEPS:
        raise ApiError(422, "input", f"limits.window: {window} plan steps is more than {MAX_STEPS}")
    policy = SharingPolicy(limits.instantaneous, limits.average, window)
    capacity = free_only.plan.cluster.capacity
    cluster = Cluster(start=instant_ms(first), capacity=capacity, step=step // 1000, horizon=(last - first) // 1000)
    planner = Planner(cluster, free_only.plan.now)
    plan = planner.plan
    offset = (origin - first) // step
    plan.used = plan.capacity.copy()  # nothing is free outside the profile
    plan.used[:, offset:offset + steps] = np.maximum(plan.capacity[:, offset:offset + steps]
                                                     - free_only.plan.capacity, 0.0)
    plan.policy = policy
    held = np.zeros_like(plan.capacity)
    for run in use:
        held[:, (run.start - first) // step:(run.end - first) // step] = \
            np.array([run.resources[n] for n in names])[:, None]
    plan.user_used = {user: held}
    return planner, first


def check_runs(runs: list[Run], step: int, names: tuple[str, ...], field: str = "free") -> int:
    """The profile's length in steps, once its runs are contiguous whole steps with the same finite resources."""
    for i, run in enumerate(runs):
        if i and run.start != runs[i - 1].end:
            raise ApiError(422, "input", f"{field}[{i}].start: {run.start} is not where {field}[{i - 1}] ends "
                           f"({runs[i - 1].end})", "send contiguous runs in time order")
        if run.end <= run.start or (run.end - run.start) % step:
            raise ApiError(422, "input", f"{field}[{i}]: [{run.start}, {run.end}) is not a whole number of "
                           f"{step} ms steps")
        if set(run.resources) != set(names) or not names:
            given = ", ".join(sorted(run.resources)) or "none"
            raise ApiError(422, "input", f"{field}[{i}].resources: names {given}; the profile names "
                           f"{', '.join(sorted(names)) or 'none'}", "name the same resources in each run")
        bad = [n for n, v in run.resources.items() if not 0 <= v < float("inf")]
        if bad:
            raise ApiError(422, "input", f"{field}[{i}].resources.{bad[0]}: {run.resources[bad[0]]} is not a finite "
                           "quantity >= 0")
    steps = (runs[-1].end - runs[0].start) // step
    if steps > MAX_STEPS:
        raise ApiError(422, "input", f"{field}: {steps} plan steps is more than {MAX_STEPS}",
                       "send a shorter profile, or a longer `step`")
    return steps


def read_reservation(data: dict[str, AnyType]) -> Reservation:
    """The request's reservation, from YARN's submission body or RDL JSON; 422 naming what does not read."""
    try:
        if yarn.looks_like_yarn(data):
            return yarn.from_yarn(data, WHERE)
        found = jsonform.from_json(data, WHERE)
    except RDLErrors as errors:
        raise ApiError.from_rdl(422, errors, CONSEQUENCE) from None
    return bodies.only_one(found, CONSEQUENCE)


def answer_json(decision: Decision, planner: Planner, origin: int, step: int) -> dict[str, AnyType]:
    """The decision record, with epoch milliseconds beside each instant."""
    data = decision.to_json(planner.plan.clock)
    data["step"] = step
    if decision.accepted:
        data["allocations"] = [allocation_ms(entry, a, origin, step)
                               for entry, a in zip(data["allocations"], decision.allocations, strict=True)]
    reason = decision.reason
    if reason is not None and reason.earliest_deadline is not None:
        data["reason"]["earliest_deadline_ms"] = ms_of(reason.earliest_deadline)
    return data


def allocation_ms(entry: dict[str, AnyType], allocation: Allocation, origin: int, step: int) -> dict[str, AnyType]:
    return {**entry, "start_ms": origin + allocation.start * step, "end_ms": origin + allocation.end * step}

