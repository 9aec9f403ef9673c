"""The job model the simulator consumes: a Spark-like application, and a workload of them.

A job is a driver container and `executors` identical executor containers. Once all its
containers run it takes `runtime` seconds (the truth); it declared `declared` seconds (the
estimate a reservation asks for). A production job also has a deadline and submits a
reservation inside `[submit, deadline]` before it starts: a rigid job one gang for its declared
duration, a malleable one its tasks' work on as many executors as the plan gives it
(`follower.sim.workloads.malleable`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from follower.sim.workloads.malleable import task_atom, window_steps
from follower.sim.workloads.report import ImportReport
from rdl.cluster import DEFAULT_STEP
from rdl.nodes import NodeGroup
from rdl.syntax.printer import format_reservation
from rdl.tree import Absolute, Atom, Reservation, Resources

Kind = Literal["production", "best_effort"]
PRODUCTION: Literal["production"] = "production"
BEST_EFFORT: Literal["best_effort"] = "best_effort"
KINDS: tuple[Kind, ...] = (PRODUCTION, BEST_EFFORT)
NONE = Resources()
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")  # an RDL name: a production job's id names its reservation


def add(a: Mapping[str, float], b: Mapping[str, float], times: float = 1.0) -> Resources:
    """`a + times × b`, name by name."""
    total = dict(a)
    for name, value in b.items():
        total[name] = total.get(name, 0.0) + times * value
    return Resources.of(total)


@dataclass(frozen=True, slots=True)
class Job:
    """One application: who, when, its container shape, how long it truly runs and what it declared."""

    id: str
    user: str
    submit: float  # seconds after the scenario's start
    kind: Kind
    driver: Resources
    executors: int
    executor: Resources
    runtime: float  # actual seconds once its containers run
    declared: float  # declared (estimated) seconds: what a reservation asks for
    deadline: float | None = None  # absolute seconds after the scenario's start; production jobs only
    queue: str = "default"
    tags: tuple[tuple[str, str], ...] = ()
    tasks: tuple[float, ...] = ()  # per-task seconds, when the trace has them; executors take them in order
    malleable: bool = False  # reserves its tasks' work rather than one gang (needs tasks, no driver container)
    gang: bool = False  # runs only with every container (an MPI job's ranks); losing one loses the unsaved work

    def __post_init__(self) -> None:
        problem = next(self._problems(), None)
        if problem is not None:
            raise ValueError(f"job `{self.id}`: {problem}")

    def _problems(self) -> Iterator[str]:
        if not NAME.fullmatch(self.id):
            yield "the id must be a name (a letter or `_`, then letters, digits, `_.-`)"
        if self.kind not in KINDS:
            yield f"kind must be one of {', '.join(KINDS)}, got `{self.kind}`"
        if self.executors < 0:
            yield f"executors must be 0 or more, got {self.executors}"
        if not self.runtime > 0 or not self.declared > 0:
            yield "runtime and declared must be positive"
        if not (math.isfinite(self.submit) and self.submit >= 0):
            yield f"submit must be a time of 0 or later, got {self.submit}"
        if self.kind == PRODUCTION and self.deadline is None:
            yield "a production job needs a deadline"
        if self.deadline is not None and self.deadline <= self.submit:
            yield "the deadline must come after submission"
        if self.executors and not any(v > 0 for v in self.executor.values()):
            yield "executors need resources: give `executor`"
        if self.containers == 0:
            yield "a job needs at least one container with resources"
        if self.gang and (self.malleable or self.tasks):
            yield "a gang job runs as one piece: it has no tasks and is not malleable"
        if self.malleable and (not self.tasks or not self.executors or self.containers > self.executors):
            yield "a malleable job runs its tasks on its executors alone: give it tasks, executors and no driver"

    @property
    def is_production(self) -> bool:
        return self.kind == PRODUCTION

    @property
    def containers(self) -> int:
        """Containers it runs: the driver (unless it has no resources) and the executors."""
        return self.executors + (1 if any(v > 0 for v in self.driver.values()) else 0)

    @property
    def total(self) -> Resources:
        """What it holds while it runs: the driver plus every executor."""
        return add(self.driver, self.executor, self.executors)

    def tag(self, name: str, default: str | None = None) -> str | None:
        """The value of one tag (trace fields kept for reference: raw user, queue number, ...)."""
        return dict(self.tags).get(name, default)

    def to_reservation(self, start: datetime, resource_names: Iterable[str],
                       step: float = DEFAULT_STEP) -> Reservation:
        """The reservation this production job submits by its deadline, on a plan of `step` seconds from `start`."""
        if self.deadline is None:
            raise ValueError(f"job `{self.id}` is best effort: it has no deadline to reserve for")
        names = set(resource_names)
        missing = sorted(n for n, v in self.total.items() if v > 0 and n not in names)
        if missing:
            raise ValueError(f"job `{self.id}` needs {', '.join(missing)}, which the cluster does not have")
        arrival = start + timedelta(seconds=self.submit)
        return Reservation(name=self.id, body=self.atom(names, step), user=self.user, queue=self.queue,
                           arrival=Absolute(arrival), deadline=Absolute(start + timedelta(seconds=self.deadline)))

    def atom(self, names: set[str], step: float = DEFAULT_STEP) -> Atom:
        """A malleable job's tasks (see `task_atom`); otherwise one lease for the declared duration: a gang of
        identical containers, or one bundle of them all."""
        if self.malleable:
            if self.deadline is None:
                raise ValueError(f"job `{self.id}` is best effort: a malleable job's leases need its deadline")
            return task_atom(self.tasks, self.executors, _only(self.executor, names), self.declared, self.runtime,
                             window_steps(self.submit, self.deadline, step), step)
        lease = float(math.ceil(self.declared))
        shapes = {shape for shape in (self.driver, self.executor) if any(v > 0 for v in shape.values())}
        if self.executors == 0:
            shapes = {self.driver}
        if len(shapes) == 1:
            bundle = _only(next(iter(shapes)), names)
            gang = self.containers
        else:
            bundle, gang = _only(self.total, names), 1
        return Atom(bundle=bundle, work=gang * lease, gang=gang, parallelism=gang, lease=lease)

    def to_rdl(self, start: datetime, resource_names: Iterable[str], step: float = DEFAULT_STEP) -> str:
        """The reservation as RDL text (see `to_reservation`)."""
        return format_reservation(self.to_reservation(start, resource_names, step))


def _only(bundle: Resources, names: set[str]) -> Resources:
    """The bundle without zero entries (RDL quantities are positive) and without resources the cluster lacks."""
    return Resources.of({n: v for n, v in bundle.items() if v > 0 and n in names})


def sort_key(job: Job) -> tuple[float, str]:
    return (job.submit, job.id)


@dataclass(frozen=True)
class Workload:
    """Jobs sorted by submission time then id, a name, and the nodes the source implies (if it does)."""

    name: str
    jobs: tuple[Job, ...]
    nodes: tuple[NodeGroup, ...] = ()
    report: ImportReport | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.jobs, key=sort_key))
        twice = [name for name, count in Counter(job.id for job in ordered).items() if count > 1]
        if twice:
            raise ValueError(f"workload `{self.name}`: job id `{twice[0]}` is used twice")
        object.__setattr__(self, "jobs", ordered)

    @staticmethod
    def of(name: str, jobs: Iterable[Job], nodes: Sequence[NodeGroup] = (),
           report: ImportReport | None = None) -> Workload:
        return Workload(name, tuple(jobs), tuple(nodes), report)

    @property
    def production(self) -> tuple[Job, ...]:
        return tuple(job for job in self.jobs if job.is_production)

    @property
    def users(self) -> tuple[str, ...]:
        """Users in order of their first submission."""
        return tuple(dict.fromkeys(job.user for job in self.jobs))

    @property
    def end(self) -> float:
        """When the last job is submitted (0 for an empty workload)."""
        return self.jobs[-1].submit if self.jobs else 0.0


def node_capacity(nodes: Iterable[NodeGroup]) -> Resources:
    """The summed capacity of node groups."""
    total = Resources()
    for group in nodes:
        total = add(total, group.size, group.count)
    return total


def node_names(nodes: Iterable[NodeGroup]) -> list[tuple[str, Resources]]:
    """Every node with its name (`<group>-<index>`, from 0) and size, group by group."""
    return [(f"{group.name}-{index}", group.size) for group in nodes for index in range(group.count)]
