"""The cluster simulator: one SimPy environment drives the planner, the plan follower and the queue scheduler.

In simulated seconds from the scenario's start:
- a job arrives; a production job first submits its reservation (RDL, `follower.sim.planning`) with the chosen
  agent; accepted, its application goes to the reservation's queue once the follower has opened it; rejected, or
  under a baseline (`follower.sim.baselines`: none, priority, capacity, static), it runs as an ordinary
  application; another system's agent (YARN's) decides the stream up front and its answers are replayed;
- every `round_steps` plan steps the plan's clock moves (it rolls as a served plan does) and the follower turns
  the plan into queue capacities; reservations over the nodes left are scaled down and the plan adapted;
- the scheduler runs a cycle whenever something changed (coalesced per instant) and when its own clock says so;
  preempted or lost containers are asked for again and charged as a real cluster charges them
  (`follower.sim.running`: a task starts over, a gang only runs whole);
- a reservation asks for the job's declared run time plus the scheduler's preemption delay, the time it takes to
  hand back capacity lent out when the lease starts;
- nodes fail and come back (`follower.sim.failures`).
docs/workloads.md says what the model forgives.

Determinism: no wall clock, no globals, one `random.Random(seed)`; events at one instant run in
the order they were scheduled; the same scenario and seed give the same trace, byte for byte.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TextIO

import simpy

from follower.follow.follower import Follower, PlanView, queue_name
from follower.scheduler.applications import Allocation, Preemption
from follower.scheduler.config import YARN
from follower.scheduler.errors import PlacementRejected
from follower.scheduler.scheduler import Scheduler
from follower.sim.baselines import CAPACITY, is_baseline, split_for
from follower.sim.failures import schedule_failures
from follower.sim.metrics import JobRecord, Result, Usage, level_changes, summarize
from follower.sim.planning import SimulatedPlanner, job_reservation, planned_leases, simulation_agent
from follower.sim.running import RunningJob, estimated_work
from follower.sim.scenario import Scenario
from follower.sim.setup import SIMULATION_POLICIES, STATIC_QUEUE, follower_from, scheduler_config
from follower.sim.tracing import EventLog
from follower.sim.workloads.job import Job, Workload, node_names
from planner.agents.base import Agent
from planner.agents.replay import ReplayAgent, replay_summary

DRIVER_PRIORITY, EXECUTOR_PRIORITY = 1, 0  # a driver before its executors
PREEMPTION_INTERVAL = 3.0  # seconds between preemption passes (YARN's preemption monitor interval)


class Simulation:
    """One run of a scenario with an agent and a policy; `run()` returns its Result."""

    def __init__(self, scenario: Scenario, workload: Workload | None = None, trace: TextIO | None = None,
                 progress: Callable[[float], None] | None = None, agent: Agent | None = None):
        self.scenario = scenario
        self.workload = workload if workload is not None else scenario.load_workload()
        self.env = simpy.Environment()
        self.rng = random.Random(scenario.seed)
        self._trace = EventLog(trace).write
        self.progress = progress
        self.start: datetime = scenario.start
        cluster = scenario.plan_cluster(self.workload)
        self.step = float(cluster.step.total_seconds()) if isinstance(cluster.step, timedelta) else float(cluster.step)
        self.planning = agent is not None or not is_baseline(scenario.agent)
        self.planner = SimulatedPlanner(cluster, self.start,
                                        agent or (simulation_agent(scenario.agent) if self.planning else None))
        self.view = PlanView(self.planner.plan)
        sizing = scenario.sizing_workload() if scenario.agent == CAPACITY else None
        self.split = None if self.planning else split_for(scenario.agent, self.workload,
                                                          dict(cluster.peak_capacity().items()), sizing)
        self.scheduler = Scheduler(scheduler_config(scenario, self.split))
        self.follower: Follower = follower_from(scenario, replan=self._replan)
        self.resource_names = tuple(cluster.resource_names)
        self.nodes = dict(node_names(scenario.node_groups(self.workload)))
        self.down: set[str] = set()
        self.jobs: dict[str, RunningJob] = {}
        self.waiting_for_queue: list[str] = []
        self.usage = Usage()
        self.events = 0
        self._cycle_due = False
        self._last_usage = 0.0
        self._wake_at: float | None = None
        self._next_preemption = 0.0
        self._ended = 0

    # ---- running ---------------------------------------------------------------------------------

    def run(self) -> Result:
        """Simulate until every job ended (or the scenario's duration); then summarise."""
        began = time.perf_counter()
        for name, size in self.nodes.items():
            self.scheduler.add_node(name, size, 0.0)
        self._round()
        for job in self.workload.jobs:
            self._at(job.submit, partial(self._arrive, job))
        schedule_failures(self.scenario.cluster.failures, self.rng, lambda: self.env.now, self._at, self._fail,
                          lambda: set(self.nodes) - self.down, self._running)
        limit = self.scenario.duration
        self.env.process(self._rounds())
        self.env.run(until=self._all_done() if limit is None else self._all_done() | self.env.timeout(limit))
        self._account(self.env.now)
        summary = summarize((run.record for run in self.jobs.values()), self.usage, self.scheduler.preemptions,
                            float(self.env.now), limit)
        if isinstance(self.planner.agent, ReplayAgent):  # answers decided up front: say how often they misfit
            summary["replayed"] = replay_summary(self.planner.agent)
        return Result(self.scenario.name, self.scenario.agent, self.scenario.policy, self.scenario.seed, summary,
                      [run.record for run in self.jobs.values()], self.events, float(self.env.now),
                      time.perf_counter() - began)

    def _all_done(self) -> simpy.Event:
        self._done = self.env.event()
        if not self.workload.jobs:
            self._done.succeed()
        return self._done

    def _at(self, when: float, action: Callable[[], None]) -> None:
        """Run `action` at simulated time `when` (now, if that has passed)."""
        event = self.env.timeout(max(0.0, when - self.env.now))
        event.callbacks.append(lambda _: self._event(action))

    def _event(self, action: Callable[[], None]) -> None:
        self.events += 1
        self._account(self.env.now)
        action()

    def _rounds(self) -> Any:
        """The follower's rounds, every `round_steps` plan steps, on step boundaries."""
        every = self.step * self.follower.round_steps
        while True:
            yield self.env.timeout(every - (self.env.now % every) if self.env.now % every else every)
            self.events += 1
            self._account(self.env.now)
            self._round()
            if self.progress is not None:
                self.progress(self.env.now)

    def _account(self, now: float) -> None:
        """Add the use since the last event to the utilisation totals."""
        if now > self._last_usage:
            used = self.scheduler.tree.root.used
            capacity = self.scheduler.capacity()
            self.usage.add(dict(used.items()), dict(capacity.items()), now - self._last_usage)
            self._last_usage = now

    # ---- the follower and the planner ------------------------------------------------------------

    def _round(self) -> None:
        """One follower round at now: queue capacities from the plan, then waiting applications in."""
        now = self.env.now
        self._advance()
        capacity = {name: self.scheduler.capacity().get(name) for name in self.resource_names}
        round_ = self.follower.round(self.view, self._datetime(now), capacity)
        self.scheduler.advance(now)  # moves and kills below are stamped with this round's time
        for action in self.follower.apply(round_, self.scheduler):
            if action.kind in ("move", "kill", "scale", "replan"):
                self._trace(now, action.application, action.kind, action.queue, detail=action.detail)
            if action.kind == "kill" and action.application is not None:
                run = self.jobs[action.application]
                run.record.killed = True
                self._end(run)
        self._admit_waiting()
        self._kick()

    def _advance(self) -> None:
        """Move the plan's clock to now; it rolls as a served plan does (one clock), and the view follows it."""
        if self.planning and self.planner.advance(self._datetime(self.env.now)):
            self.view = PlanView(self.planner.plan, self.view)

    def _replan(self, _round: Any) -> None:
        """The follower saw reservations over what the nodes have: adapt the plan to it from now on."""
        if not self.planning or self.planner.agent is None:
            return
        self._advance()
        report = self.planner.adapt(self._datetime(self.env.now), self.scheduler.capacity())
        self.view = PlanView(self.planner.plan, self.view)
        for name in report.dropped:
            self.jobs[name].record.dropped = True
            self._trace(self.env.now, name, "reservation_dropped", f"{self.follower.plan_queue}.{queue_name(name)}")

    def _restore(self) -> None:
        """A node came back: what the plan may count on from now is the planned capacity again (up to the nodes)."""
        self._advance()
        self.planner.adapt(self._datetime(self.env.now), self.scheduler.capacity())
        self.view = PlanView(self.planner.plan, self.view)

    # ---- jobs ------------------------------------------------------------------------------------

    def _arrive(self, job: Job) -> None:
        work = job.runtime * job.executors if job.executors else job.runtime
        record = JobRecord(job.id, job.user, job.kind, job.submit, job.runtime, job.deadline,
                           work_s=job.runtime * job.containers)
        run = self.jobs[job.id] = RunningJob(job, record, work, since=self.env.now, pending=deque(job.tasks))
        if job.is_production and self.planning and self._reserve(job, record):
            self.waiting_for_queue.append(job.id)
            self._round()
            return
        self._submit(run, reservation=None)

    def _reserve(self, job: Job, record: JobRecord) -> bool:
        """Submit the job's reservation to the planner; True when accepted."""
        reservation = job_reservation(job, self.planner.plan.cluster, self.start,
                                      self.scheduler.config.preemption_delay)
        self._advance()
        decision = self.planner.reserve(reservation, self._datetime(self.env.now))
        record.reservation = job.id
        record.accepted = decision.accepted
        if not decision.accepted:
            record.rejection = decision.reason.code if decision.reason is not None else "capacity"
        self._trace(self.env.now, job.id, "accepted" if decision.accepted else "rejected",
                    f"{self.follower.plan_queue}.{queue_name(job.id)}",
                    detail=None if decision.accepted or decision.reason is None else decision.reason.code)
        if decision.accepted:
            self.view = PlanView(self.planner.plan, self.view)
            record.plan_changes = level_changes(decision.allocations or [])
            record.planned = planned_leases(decision.allocations, self.planner.plan.clock, self.start)
        return decision.accepted

    def _admit_waiting(self) -> None:
        """Submit the accepted jobs whose reservation queue is open now; ended ones go best effort."""
        still = []
        for job_id in self.waiting_for_queue:
            run = self.jobs[job_id]
            path = f"{self.follower.plan_queue}.{queue_name(job_id)}"
            if self.scheduler.tree.find(path) is not None:
                self._submit(run, reservation=job_id)
            elif job_id not in self.planner.plan.accepted or (run.job.deadline is not None
                                                              and self.env.now >= run.job.deadline):
                self._submit(run, reservation=None)
            else:
                still.append(job_id)
        self.waiting_for_queue = still

    def _submit(self, run: RunningJob, reservation: str | None) -> None:
        job = run.job
        try:  # without a reservation, the placement rules choose (by default: the best-effort queue)
            split = self.split if job.is_production else None  # a baseline's production queue
            edf = split is not None and split.earliest_deadline_first and job.deadline is not None
            path = self.scheduler.submit(job.id, job.user, self.env.now, reservation=reservation,
                                         queue=STATIC_QUEUE if split is not None else None,
                                         priority=-round(job.deadline or 0.0) if edf else 0,
                                         estimated_work=estimated_work(job), job=job.id, tags=dict(job.tags))
        except PlacementRejected as refused:
            self._trace(self.env.now, job.id, "refused", None, detail=refused.reason)
            run.record.refused = True
            self._end(run)
            return
        self._trace(self.env.now, job.id, "submit", path)
        if run.needs_driver:
            self._ask(run, "driver", job.driver, 1, DRIVER_PRIORITY)
        else:
            self._ask_executors(run)
        self._kick()

    def _ask(self, run: RunningJob, kind: str, resources: Mapping[str, float], count: int, priority: int) -> None:
        run.asks += 1
        wanted = {name: value for name, value in resources.items() if value > 0}
        self.scheduler.add_ask(run.job.id, f"{kind}-{run.asks}", wanted, self.env.now, count=count,
                               priority=priority)

    def _ask_executors(self, run: RunningJob) -> None:
        """Ask for every executor at once, after the driver (Spark's order); once per job."""
        run.executors_asked = True
        if run.job.executors:
            self._ask(run, "executor", run.job.executor, run.job.executors, EXECUTOR_PRIORITY)

    # ---- scheduling ------------------------------------------------------------------------------

    def _kick(self) -> None:
        """Ask for one scheduling cycle at this instant (several changes share one)."""
        if not self._cycle_due:
            self._cycle_due = True
            self._at(self.env.now, self._cycle)

    def _cycle(self) -> None:
        self._cycle_due = False
        now = self.env.now
        for preemption in self._preempt(now):
            run = self.jobs[preemption.app_id]
            self._trace(now, preemption.app_id, "preempt", preemption.victim_queue, preemption.node,
                        preemption.resources, detail=f"for {preemption.for_queue}", container=preemption.container_id)
            run.record.preempted += 1
            self._lose(run, preemption.container_id)
        allocations = self.scheduler.schedule(now)
        for allocation in allocations:
            self._allocated(allocation)
        if allocations:  # a driver that just started asks for its executors: serve them at this instant
            self._kick()
        wake = self.scheduler.next_event_time()
        if wake is not None and wake > now and (self._wake_at is None or wake < self._wake_at or self._wake_at <= now):
            self._wake_at = wake
            self._at(wake, self._kick)

    def _preempt(self, now: float) -> list[Preemption]:
        """YARN's preemption monitor runs every PREEMPTION_INTERVAL (3 s), not at every event (a starved queue no victim
        can satisfy would be re-planned each time); the `yunikorn` model has none: each ask tries at its own times."""
        if self.scheduler.config.preemption_model == YARN and now < self._next_preemption:
            return []
        self._next_preemption = now + PREEMPTION_INTERVAL
        return self.scheduler.preempt(now)

    def _allocated(self, allocation: Allocation) -> None:
        run = self.jobs[allocation.app_id]
        now = self.env.now
        run.progress(self.env.now)
        if run.record.start is None:
            run.record.start = now
        self._trace(now, allocation.app_id, "allocate", allocation.queue, allocation.node, allocation.resources,
                    container=allocation.container_id)
        if allocation.ask_id.startswith("driver"):
            run.driver = allocation.container_id
            if not run.executors_asked:
                self._ask_executors(run)
        else:
            run.executors.add(allocation.container_id)
        self._reschedule(run)

    def _lose(self, run: RunningJob, container_id: str) -> None:
        """A container of `run` went (preempted or its node failed): ask for it again, and charge the work it
        loses (follower.sim.running): a task starts over, a gang goes back to its last saved state."""
        run.progress(self.env.now)
        lost = run.lose(container_id, self.env.now, self.scenario.checkpoint)
        run.record.lost_work_s += lost
        if container_id == run.driver:
            run.driver = None
            self._ask(run, "driver", run.job.driver, 1, DRIVER_PRIORITY)
        elif container_id in run.executors:
            run.executors.discard(container_id)
            run.running.pop(container_id, None)
            self._ask(run, "executor", run.job.executor, 1, EXECUTOR_PRIORITY)
        self._reschedule(run)
        self._kick()

    def _reschedule(self, run: RunningJob) -> None:
        """Predict the job's end at its new rate (older predictions become stale by version)."""
        if run.by_task:
            self._start_tasks(run)
            return
        run.rate = run.speed()
        run.version += 1
        if run.rate > 0:
            version = run.version
            self._at(self.env.now + max(0.0, run.work) / run.rate, lambda: self._maybe_finish(run, version))

    def _start_tasks(self, run: RunningJob) -> None:
        """Every idle executor (with the driver up) takes the next task; a job with none left and none running ends."""
        if run.needs_driver and run.driver is None:
            return
        for executor in sorted(run.executors - run.running.keys()):
            if not run.pending:
                break
            seconds = run.pending.popleft()
            run.version += 1
            run.running[executor] = (seconds, run.version, self.env.now)
            self._at(self.env.now + seconds, partial(self._task_done, run, executor, run.version))
        if not run.pending and not run.running:
            self._maybe_finish(run, run.version)
        elif not run.pending and run.job.malleable:
            self._release_idle(run)

    def _release_idle(self, run: RunningJob) -> None:
        """A malleable job with no task left to start gives back its idle executors and asks for no more."""
        now = self.env.now
        idle = sorted(run.executors - run.running.keys())
        for executor in idle:
            container = self.scheduler.containers[executor]
            self._trace(now, run.job.id, "release", container.queue, container.node, container.resources,
                        container=executor)
            run.executors.discard(executor)
            self.scheduler.release(executor, now)
        asks = [ask for ask in self.scheduler.application(run.job.id).asks if ask.startswith("executor")]
        for ask_id in asks:
            self.scheduler.remove_ask(run.job.id, ask_id, now)
        if idle or asks:
            self._kick()

    def _task_done(self, run: RunningJob, executor: str, token: int) -> None:
        if run.ended or run.running.get(executor, (0.0, -1, 0.0))[1] != token:
            return  # the executor was lost meanwhile: its task went back to the queue
        run.done.append(run.running.pop(executor)[0])
        self._start_tasks(run)

    def _maybe_finish(self, run: RunningJob, version: int) -> None:
        if version != run.version or run.ended:
            return
        run.progress(self.env.now)
        now = self.env.now
        app = self.scheduler.application(run.job.id)
        if not app.state.finished:
            self.scheduler.complete_application(run.job.id, now)
        self._trace(now, run.job.id, "finish", app.queue)
        run.record.finish = now
        self._end(run)
        self._kick()

    def _end(self, run: RunningJob) -> None:
        """The job is over (finished, refused or killed): stale predictions die, and the run may be done."""
        run.ended, run.rate, run.version = True, 0.0, run.version + 1
        self._ended += 1
        if self._ended == len(self.workload.jobs) and not self._done.triggered:
            self._done.succeed()

    # ---- nodes -----------------------------------------------------------------------------------

    def _fail(self, node: str, repair: float) -> None:
        if node in self.down or node not in self.nodes:
            return
        self.down.add(node)
        now = self.env.now
        self._trace(now, None, "node_down", None, node, self.nodes[node])
        for container in self.scheduler.remove_node(node, now):
            run = self.jobs[container.app_id]
            run.record.lost += 1
            self._trace(now, container.app_id, "lost", container.queue, node, container.resources,
                        container=container.id)
            self._lose(run, container.id)
        self._at(now + repair, lambda: self._repair(node))
        self._round()

    def _repair(self, node: str) -> None:
        self.down.discard(node)
        self.scheduler.add_node(node, self.nodes[node], self.env.now)
        self._trace(self.env.now, None, "node_up", None, node, self.nodes[node])
        if self.planning:
            self._restore()
        self._round()

    def _running(self) -> bool:
        return self._ended < len(self.workload.jobs)

    def _datetime(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)


def simulate(scenario: Scenario, agent: str | None = None, policy: str | None = None, seed: int | None = None,
             trace: TextIO | None = None, progress: Callable[[float], None] | None = None,
             workload: Workload | None = None, planning_agent: Agent | None = None) -> Result:
    """Run `scenario` (options override its defaults; `workload`, if given, is its already loaded jobs;
    `planning_agent`, if given, plans instead of the named agent, and names the run: a ReplayAgent, say)."""
    chosen = scenario.with_options(agent=agent, policy=policy, seed=seed, policies=SIMULATION_POLICIES)
    if planning_agent is not None:
        chosen = replace(chosen, agent=planning_agent.name)
    if workload is not None and seed is not None and seed != scenario.seed:
        workload = None  # generated with the scenario's seed: load again with the new one
    return Simulation(chosen, workload=workload, trace=trace, progress=progress, agent=planning_agent).run()
