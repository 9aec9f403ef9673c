"""The Spark model's event loop: jobs arrive, stages become task sets, tasks take slots, a policy decides.

One heap of `(time, order, seq, event)` (at one instant, task ends before arrivals). After each
event, one round of offers gives the free slots to the task sets in the policy's order, sorted once
for the round, as Spark's `TaskSchedulerImpl.resourceOffers` does when a finished task frees its
executor's cores or a new task set revives offers. Deterministic: no clock, no randomness.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from follower.sim.spark.model import Cluster, JobSpec
from follower.sim.spark.policies.base import Policy
from follower.sim.spark.runtime import JobRun, StageRun

TASK_END, JOB_SUBMIT = 0, 1


@dataclass(frozen=True, slots=True)
class TaskRun:
    """One task as it ran: which stage, which slot, from when to when."""

    job: str
    stage: int
    task: int
    slot: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class JobResult:
    """One job as it ran: submitted, ended, its work (as run and as estimated) and critical path."""

    id: str
    user: str
    kind: str
    submit: float
    end: float
    work: float
    estimate: float
    critical_path: float

    @property
    def response(self) -> float:
        """Seconds from submission to the end of its last task."""
        return self.end - self.submit


@dataclass(frozen=True, slots=True)
class RunResult:
    """Every job and every task of one run, and how many scheduling rounds it took."""

    jobs: tuple[JobResult, ...]
    tasks: tuple[TaskRun, ...]
    rounds: int


@dataclass
class _Engine:
    specs: dict[str, JobSpec]
    policy: Policy
    cluster: Cluster
    heap: list[tuple[float, int, int, object]] = field(default_factory=list)
    seq: int = 0
    free: list[int] = field(default_factory=list)
    queue: list[StageRun] = field(default_factory=list)
    followers: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    jobs: dict[str, JobRun] = field(default_factory=dict)
    started: dict[tuple[str, int, int], tuple[int, float]] = field(default_factory=dict)
    tasks: list[TaskRun] = field(default_factory=list)
    rounds: int = 0

    def push(self, time: float, order: int, event: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, order, self.seq, event))

    def run(self) -> RunResult:
        self.free = list(range(self.cluster.slots))
        for spec in self.specs.values():
            if spec.follows is None:
                self.push(spec.submit, JOB_SUBMIT, spec.id)
            else:
                self.followers[spec.follows].append(spec.id)
        while self.heap:
            now, order, _, event = heapq.heappop(self.heap)
            if order == TASK_END:
                self.end_task(event, now)  # type: ignore[arg-type]
            else:
                self.submit_job(str(event), now)
            self.offer(now)
        return RunResult(tuple(self.result(job) for job in self.jobs.values()), tuple(self.tasks), self.rounds)

    def submit_job(self, job_id: str, now: float) -> None:
        job = self.jobs[job_id] = JobRun(self.specs[job_id], len(self.jobs), now)
        for index, stage in enumerate(job.spec.stages):
            if not stage.parents:
                self.submit_stage(job, index, now)

    def submit_stage(self, job: JobRun, index: int, now: float) -> None:
        stage = StageRun(job, index, self.seq, now)
        self.seq += 1
        self.queue.append(stage)
        self.policy.stage_submitted(stage, now)

    def offer(self, now: float) -> None:
        """One round of offers: the waiting task sets in the policy's order take the free slots."""
        waiting = [stage for stage in self.queue if stage.pending]
        if not self.free or not waiting:
            return
        self.rounds += 1
        for stage in sorted(waiting, key=lambda stage: self.policy.key(stage, now)):
            while self.free and stage.pending:
                self.launch(stage, now)
            if not self.free:
                return

    def launch(self, stage: StageRun, now: float) -> None:
        slot = heapq.heappop(self.free)
        task = stage.next_task
        stage.next_task += 1
        stage.running += 1
        stage.job.running += 1
        self.started[(stage.job.spec.id, stage.index, task)] = (slot, now)
        self.policy.task_started(stage, now)
        self.push(now + stage.spec.tasks[task], TASK_END, (stage, task))

    def end_task(self, event: tuple[StageRun, int], now: float) -> None:
        stage, task = event
        slot, start = self.started.pop((stage.job.spec.id, stage.index, task))
        heapq.heappush(self.free, slot)
        self.tasks.append(TaskRun(stage.job.spec.id, stage.index, task, slot, start, now))
        stage.running -= 1
        stage.done += 1
        stage.job.running -= 1
        self.policy.task_finished(stage, now)
        if stage.finished:
            self.end_stage(stage, now)

    def end_stage(self, stage: StageRun, now: float) -> None:
        self.queue.remove(stage)
        job = stage.job
        job.stages_done.add(stage.index)
        if len(job.stages_done) == len(job.spec.stages):
            job.finished = now
            self.policy.job_finished(job, now)
            for follower in self.followers.pop(job.spec.id, []):
                self.push(max(job.submitted + self.specs[follower].submit, now), JOB_SUBMIT, follower)
            return
        for index, spec in enumerate(job.spec.stages):
            if stage.index in spec.parents and set(spec.parents) <= job.stages_done:
                self.submit_stage(job, index, now)

    @staticmethod
    def result(job: JobRun) -> JobResult:
        spec = job.spec
        end = job.finished if job.finished is not None else float("nan")
        return JobResult(spec.id, spec.user, spec.kind, job.submitted, end, spec.work, spec.estimate,
                         spec.critical_path)


def simulate(jobs: Sequence[JobSpec], policy: Policy, cluster: Cluster) -> RunResult:
    """Run the jobs on the cluster's slots under the policy, to the end of the last task."""
    return _Engine({job.id: job for job in jobs}, policy, cluster).run()
