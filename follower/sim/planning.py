"""The planner as the simulator drives it: admission at each production job's arrival, repair when nodes
fail or return. Everything goes through the Planner's own seam (`submit`, `advance`, `adapt`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from follower.scheduler.config import load_config
from follower.sim.scenario import Scenario
from follower.sim.setup import scheduler_config
from follower.sim.workloads.job import Job, Workload
from planner.admission import Planner
from planner.agents.base import Agent
from planner.agents.registry import DEFAULT_AGENT, get_agent
from planner.core.compile import Clock
from planner.core.decision import Decision
from planner.core.plan import Accepted, Allocation, Plan, capacity_over_time, shifted
from planner.replan.adapt import Adaptation
from rdl.cluster import Cluster
from rdl.shape import step_ceil, step_floor
from rdl.tree import Reservation

MILP_TIME_LIMIT = 2.0  # seconds the `milp` agent may spend on one arrival's decision (greedy start included)


def job_reservation(job: Job, cluster: Cluster, start: datetime, preemption_delay: float) -> Reservation:
    """The reservation a production job submits on arrival: its declared run time padded by the scheduler's
    preemption delay (see follower.sim.engine), on the plan's step grid."""
    padded = dataclasses.replace(job, declared=job.declared + preemption_delay)
    return padded.to_reservation(start, cluster.resource_names, float(cluster.step))


def production_reservations(scenario: Scenario, workload: Workload) -> list[Reservation]:
    """Every reservation the simulator's production jobs will submit, in arrival order (the order the simulator
    submits them in): for agents that decide a whole stream up front (planner.agents.replay)."""
    cluster = scenario.plan_cluster(workload)
    delay = load_config(scheduler_config(scenario)).preemption_delay
    return [job_reservation(job, cluster, scenario.start, delay) for job in workload.production]


def simulation_agent(name: str, time_limit: float = MILP_TIME_LIMIT) -> Agent:
    """The agent by name; an agent with a time limit (the MILP) decides each arrival within `time_limit` seconds
    (admission is online here)."""
    agent = get_agent(name)
    if dataclasses.is_dataclass(agent) and hasattr(agent, "time_limit"):
        agent = dataclasses.replace(agent, time_limit=time_limit)  # type: ignore[type-var]
    return agent


class SimulatedPlanner:
    """A Planner with the nodes' capacity it may count on, its agent, and its reservations in order of acceptance.

    Its plan rolls with the simulated clock exactly as the store's does (`Planner.advance`): steps fall off the
    back and new ones come in at the front with the cluster file's capacity, capped by what the nodes have now
    while some are down (the planner cannot know when they return)."""

    def __init__(self, cluster: Cluster, start: datetime, agent: Agent | None):
        self.planner = Planner(cluster, start)
        self.agent = agent
        self.cap: np.ndarray | None = None  # what the nodes have now, per resource, while it is below the plan
        self.first_clock = self.planner.plan.clock
        # Every reservation accepted in the run, as accepted, on `first_clock` (the plan rolls and expires them).
        self.decided: dict[str, Accepted] = {}

    @property
    def plan(self) -> Plan:
        return self.planner.plan

    def advance(self, now: datetime) -> int:
        """Move the plan's clock (and window) to `now`; the steps the window moved. Reservations whose every lease
        ended before the new window leave the plan, as the store expires them (lifecycle.expire)."""
        moved = self.planner.advance(now)
        if not moved:
            return 0
        if self.cap is not None:  # the new steps came in with the file's capacity: the nodes' cap holds
            self._capped(self.plan.capacity, now)
        ended = [name for name, accepted in self.plan.accepted.items()
                 if all(allocation.end <= 0 for allocation in accepted.allocations)]
        for name in ended:
            self.plan.remove(name)
        return moved

    @property
    def acceptance(self) -> list[str]:
        """The reservations the plan holds, in the order they were accepted (adapt's tie-break)."""
        return [name for name in self.decided if name in self.plan.accepted]

    def reserve(self, reservation: Reservation, now: datetime) -> Decision:
        """Decide a reservation submitted now (the plan's clock moved to it first)."""
        assert self.agent is not None
        self.advance(now)
        decision = self.planner.submit(reservation, self.agent, submitted=now, explain=False)
        if decision.accepted:
            rolled = step_floor(self.first_clock.origin, self.plan.clock.origin, self.first_clock.step)
            self.decided[reservation.name] = Accepted(reservation, now, shifted(list(decision.allocations), rolled))
        return decision

    def adapt(self, now: datetime, real: Mapping[str, float]) -> Adaptation:
        """Re-plan onto what the nodes really have from now on (the planned capacity before now)."""
        self.advance(now)
        return self.planner.adapt(self.capacity_from(now, real), self.acceptance, self.agent or DEFAULT_AGENT)

    def capacity_from(self, now: datetime, real: Mapping[str, float]) -> np.ndarray:
        """The planned capacity (the cluster file's, on the plan's current window), capped from the current step on
        by what the nodes have now (the planner cannot know when failed nodes return, so it assumes they stay away)."""
        have = np.array([real.get(name) for name in self.plan.resources], dtype=np.float64)
        planned = capacity_over_time(self.plan.cluster, self.plan.clock)
        self.cap = None if bool(np.all(have[:, None] >= planned)) else have
        return self._capped(planned, now) if self.cap is not None else planned

    def _capped(self, capacity: np.ndarray, now: datetime) -> np.ndarray:
        """`capacity` (changed in place) held to the nodes' cap from the step of `now` on."""
        assert self.cap is not None
        clock = self.plan.clock
        now_step = min(clock.steps, max(0, step_ceil(clock.origin, now, clock.step)))
        capacity[:, now_step:] = np.minimum(capacity[:, now_step:], self.cap[:, None])
        return capacity


def planned_leases(allocations: Sequence[Allocation], clock: Clock,
                   start: datetime) -> tuple[tuple[float, float, float], ...]:
    """Leases as (start, end) in seconds from the simulation's `start` with the vcores they hold (the plan-shape
    figure's data)."""
    return tuple(((clock.at(a.start) - start).total_seconds(), (clock.at(a.end) - start).total_seconds(),
                  a.bundles * (a.bundle.get("vcores") or 0.0)) for a in allocations)
