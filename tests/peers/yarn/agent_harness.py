"""YARN's own reservation agents beside ours: build the Java peer (`agents/`, Maven), run streams through it, and
read its answers back as our decision records, so that every one of them goes through our plan checker.

The peer uses YARN's classes as a library: an `InMemoryPlan` laid over our cluster file's facts, and
`GreedyReservationAgent` (YARN's default: allocate left), the same allocating right, and
`AlignedPlannerWithGreedy` (the ReservationSystem's default agent). It reads reservations in YARN's REST form
(`rdl.forms.yarn.to_yarn`) and answers, per decision, what each stage allocator gave each stage, or YARN's
exception text, and the agent's time inside the JVM after a warm-up pass.

A YARN stage answer is a resource profile over time (the aligned allocator sums its gangs); `leases` takes it
apart into the leases of `l` steps and whole gangs our records hold. A profile that is no such sum is kept as it
is, one allocation per run, and the checker says what is wrong with it.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any as AnyType

import numpy as np

from planner.admission import Planner
from planner.agents.registry import get_agent
from planner.core.compile import Clock
from planner.core.decision import Decision, Reason
from planner.core.plan import Allocation, capacity_over_time
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.forms.yarn import from_yarn, to_yarn
from rdl.forms.yarn_body import EPOCH
from rdl.policy import parse_policy
from rdl.shape import lease_steps
from rdl.tree import Atom, Reservation, labelled_atoms
from rdl.validate import validate

AGENTS_DIR = Path(__file__).resolve().parent / "agents"
TARGET = AGENTS_DIR / "target"
YARN_AGENTS = ("greedy", "greedy-right", "aligned")
MEMORY, VCORES = "memory", "vcores"


class PeerUnavailable(RuntimeError):
    """The peer cannot run here (no java or mvn, or Maven could not resolve or build it); the message says why."""


# -- building ------------------------------------------------------------------------------------------------------


def missing_tools() -> str | None:
    """Which of java and mvn is not on PATH, or None when both are."""
    absent = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not found on PATH" if absent else None


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([AGENTS_DIR / "pom.xml", *(AGENTS_DIR / "src").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(AGENTS_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> list[str]:
    """The class path of the built peer, building it once per change of its sources (offline first, then with
    downloads); PeerUnavailable when it cannot be built here."""
    problem = missing_tools()
    if problem is not None:
        raise PeerUnavailable(problem)
    TARGET.mkdir(exist_ok=True)
    stamp, jar, classpath = TARGET / "sources.sha256", TARGET / "yarn-agents.jar", TARGET / "classpath.txt"
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a test run and a benchmark may ask at once
        digest = _sources_digest()
        fresh = stamp.exists() and stamp.read_text() == digest and jar.exists() and classpath.exists()
        if not fresh:
            _maven_package()
            stamp.write_text(digest)
    return [str(jar), *classpath.read_text().strip().split(os.pathsep)]


def _maven_package() -> None:
    failures = []
    for offline in (True, False):
        command = ["mvn", "-B", "-q", *(["-o"] if offline else []), "-f", str(AGENTS_DIR / "pom.xml"), "package"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if done.returncode == 0:
            return
        failures.append(f"$ {' '.join(command)}\n{(done.stdout + done.stderr)[-2000:]}")
    raise PeerUnavailable("Maven could not build the YARN peer:\n" + "\n".join(failures))


# -- the plan and the stream as the peer reads them ----------------------------------------------------------------


def _ms(instant: datetime) -> int:
    return round((instant - EPOCH) / timedelta(milliseconds=1))


def plan_facts(cluster: Cluster, calculator: str = "dominant") -> dict[str, AnyType]:
    """Our cluster file as the peer's plan facts (see Plans.java); ValueError for what YARN's plan cannot hold."""
    if set(cluster.resource_names) != {MEMORY, VCORES}:
        raise ValueError(f"YARN plans memory and vcores, the cluster has {', '.join(cluster.resource_names)}")
    start, step = _ms(cluster.start), cluster.step * 1000
    if start % step:
        raise ValueError("YARN's plan steps count from the epoch: the cluster's start must fall on a whole step")
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    capacity = capacity_over_time(cluster, clock)
    memory, vcores = (capacity[cluster.resource_names.index(name)] for name in (MEMORY, VCORES))
    most = {MEMORY: float(memory.max()), VCORES: float(vcores.max())}
    if any(value != int(value) for column in (memory, vcores) for value in np.unique(column)):
        raise ValueError("YARN counts whole MB and whole vcores: the cluster's capacity must be whole numbers")
    lower = []
    for first, last in _runs(np.stack([memory, vcores])):
        if memory[first] < most[MEMORY] or vcores[first] < most[VCORES]:
            lower.append([start + first * step, start + last * step, int(memory[first]), int(vcores[first])])
    return {"queue": "dedicated", "start": start, "end": start + cluster.steps * step, "step": step,
            "capacity": {MEMORY: int(most[MEMORY]), VCORES: int(most[VCORES])}, "lower": lower,
            "calculator": calculator, "policy": _policy(cluster)}


def _runs(columns: np.ndarray) -> Iterable[tuple[int, int]]:
    """[first, last) of each run of equal columns."""
    changes = np.flatnonzero(np.any(columns[:, 1:] != columns[:, :-1], axis=0)) + 1
    bounds = [0, *changes.tolist(), columns.shape[1]]
    return itertools.pairwise(bounds)


def _policy(cluster: Cluster) -> dict[str, float]:
    """YARN's CapacityOverTimePolicy settings (percent, window in ms) for our user limits; one limit for all."""
    policy = parse_policy(cluster.policies, cluster.step)
    if policy.users:
        raise ValueError("YARN's CapacityOverTimePolicy holds every user to one limit: per-user overrides have no "
                         "YARN form")
    found: dict[str, float] = {}
    if policy.instantaneous is not None:
        found["instantaneous"] = policy.instantaneous * 100
    if policy.average is not None and policy.window is not None:
        found["average"], found["window"] = policy.average * 100, policy.window * cluster.step * 1000
    return found


@dataclass(frozen=True)
class Stream:
    """A stream as both sides see it: the YARN bodies and, read back from them, the trees both sides plan (with
    each reservation's user and value, which YARN's form does not carry)."""

    bodies: tuple[dict[str, AnyType], ...]
    reservations: tuple[Reservation, ...]
    users: tuple[str, ...]
    values: tuple[float, ...]

    @classmethod
    def of(cls, reservations: Sequence[Reservation]) -> Stream:
        """YARN-shaped reservations (see rdl.forms.yarn.to_yarn) through YARN's JSON form and back."""
        bodies = tuple(to_yarn(r) for r in reservations)
        return cls(bodies, tuple(from_yarn(b) for b in bodies), tuple(r.user or "user" for r in reservations),
                   tuple(r.value for r in reservations))

    @classmethod
    def of_bodies(cls, bodies: Sequence[dict[str, AnyType]]) -> Stream:
        """YARN REST submission bodies as they are (one user, value 1 each)."""
        return cls(tuple(bodies), tuple(from_yarn(b) for b in bodies), ("user",) * len(bodies), (1.0,) * len(bodies))


# -- running the peer ----------------------------------------------------------------------------------------------


@dataclass
class YarnAnswer:
    """One line of the peer's output (see Main.java)."""

    agent: str
    index: int
    name: str
    accepted: bool
    nanos: int
    stages: list[dict[str, AnyType]] = field(default_factory=list)
    matches_plan: bool = True
    exception: str = ""
    message: str = ""
    crashed: bool = False
    proposed: list[dict[str, AnyType]] = field(default_factory=list)  # stages the plan refused, when rejected
    deterministic: bool = True  # every timed pass decided it alike

    @property
    def seconds(self) -> float:
        return self.nanos / 1e9


def run_yarn(cluster: Cluster, stream: Stream, agents: Sequence[str] = YARN_AGENTS, warmup: int = 1,
             repeat: int = 1, calculator: str = "dominant", timeout: float = 3600) -> dict[str, list[YarnAnswer]]:
    """Each YARN agent's answers to the stream, in order, on a fresh plan of its own; each decision's time the
    least over `repeat` timed passes, after `warmup` passes."""
    classpath = build()
    job = {"plan": plan_facts(cluster, calculator), "agents": list(agents), "warmup": warmup, "repeat": repeat,
           "submissions": [{"user": u, "body": b} for u, b in zip(stream.users, stream.bodies, strict=True)]}
    with tempfile.TemporaryDirectory(prefix="rayon-yarn-") as scratch:
        job_path, out_path = Path(scratch) / "job.json", Path(scratch) / "answers.jsonl"
        job_path.write_text(json.dumps(job))
        command = ["java", "-cp", os.pathsep.join(classpath), "rayon.peers.yarn.Main", str(job_path), str(out_path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"the YARN peer failed ({done.returncode}):\n{done.stderr[-4000:]}")
        lines = out_path.read_text().splitlines()
    found: dict[str, list[YarnAnswer]] = {name: [] for name in agents}
    for line in lines:
        answer = YarnAnswer(**json.loads(line))
        found[answer.agent].append(answer)
    return found


# -- YARN's answers as our decision records ------------------------------------------------------------------------


def decision(answer: YarnAnswer, reservation: Reservation, cluster: Cluster) -> tuple[Decision, list[str]]:
    """A YARN answer as our Decision, with what the conversion itself found wrong (it never hides a problem: what
    cannot be read as leases is kept as it is, for the checker to judge)."""
    extra = {"agent": f"yarn-{answer.agent}"}
    if not answer.accepted:
        text = f"{answer.exception.rsplit('.', 1)[-1] or 'rejected'}: {answer.message}"
        return Decision(reservation.name, False, reason=Reason(_code(answer), text), extra=extra), []
    problems = [] if answer.matches_plan else [f"{reservation.name}: the stages' answers differ from the plan's"]
    allocations: list[Allocation] = []
    stages = {atom.name: (label, atom) for _, label, atom in labelled_atoms(reservation.expr)}
    for stage in answer.stages:
        label, atom = stages[f"stage{stage['stage']}"]
        found, trouble = leases(stage["intervals"], atom, label, cluster)
        allocations += found
        problems += [f"{reservation.name}/{label}: {t}" for t in trouble]
    return Decision(reservation.name, True, tuple(allocations), extra=extra), problems


def _code(answer: YarnAnswer) -> str:
    name = answer.exception.rsplit(".", 1)[-1]
    if answer.crashed or name == "ContractValidationException":
        return "invalid"
    return "policy" if name == "PlanningQuotaException" else "capacity"


def leases(intervals: Sequence[Sequence[int]], atom: Atom, label: str,
           cluster: Cluster) -> tuple[list[Allocation], list[str]]:
    """One stage's answer ([from ms, to ms, MB, vcores] ...) as leases of whole gangs held `l` (in steps)."""
    start, step = _ms(cluster.start), cluster.step * 1000
    gang = {MEMORY: atom.bundle[MEMORY] * atom.gang, VCORES: atom.bundle[VCORES] * atom.gang}
    problems: list[str] = []
    runs = []
    for begin, end, memory, vcores in intervals:
        count = memory / gang[MEMORY]
        if (begin - start) % step or (end - start) % step:
            problems.append(f"interval {begin}-{end} ms is off the plan's steps")
        if count != int(count) or vcores != count * gang[VCORES]:
            problems.append(f"<{memory} MB, {vcores} vcores> is not a whole number of gangs")
        if memory:
            runs.append(((begin - start) // step, (end - start) // step, int(count)))
    if problems or not runs:
        return [], problems
    first, last = min(r[0] for r in runs), max(r[1] for r in runs)
    profile = np.zeros(last - first, dtype=np.int64)
    for begin, end, count in runs:
        profile[begin - first:end - first] += count
    length = lease_steps(atom, cluster.step)
    taken = _decompose(profile, length)
    if taken is None:  # not a sum of leases of this length: keep the runs, the checker says what is wrong
        return [Allocation(label, b, e, c * atom.gang, atom.bundle) for b, e, c in runs], problems
    return [Allocation(label, first + at, first + at + length, n * atom.gang, atom.bundle) for at, n in taken], problems


def _decompose(profile: np.ndarray, length: int) -> list[tuple[int, int]] | None:
    """(start, gangs) of leases `length` steps long that sum to `profile` exactly; None when there are none.

    Such a decomposition is unique: at each step the leases that must start are what the profile holds beyond
    the leases started in the `length - 1` steps before."""
    ending = np.zeros(len(profile) + length + 1, dtype=np.int64)
    running, taken = 0, []
    for at, wanted in enumerate(profile.tolist()):
        running -= int(ending[at])
        starting = wanted - running
        if starting < 0:
            return None
        if starting:
            taken.append((at, starting))
            ending[at + length] += starting
            running += starting
    return taken if int(ending[len(profile) + 1:].sum()) == 0 else None


def decision_records(answers: Sequence[YarnAnswer], stream: Stream,
                     cluster: Cluster) -> tuple[list[dict[str, AnyType]], list[str]]:
    """Every answer of one agent as our decision JSON (decisions.md), with the conversion's problems."""
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    records, problems = [], []
    for answer in answers:
        made, trouble = decision(answer, stream.reservations[answer.index], cluster)
        records.append(made.to_json(clock))
        problems += trouble
    return records, problems


# -- our agents on the same stream ---------------------------------------------------------------------------------


@dataclass
class OurRun:
    """Our agent's decision records for a stream, with each decision's time in seconds."""

    records: list[dict[str, AnyType]]
    seconds: list[float]
    validating: list[float]  # each reservation's validation, before its decision and not in `seconds`


def run_ours(cluster: Cluster, stream: Stream, agent: str, explain: bool = True, repeat: int = 1) -> OurRun:
    """The stream through one of our agents, in order, on a fresh plan, each decision timed in this process (the
    least over `repeat` passes, each on a fresh plan; they must decide alike).

    Each reservation is validated first and timed apart, as `rayon serve` validates a request before it takes the
    plan's write lock and YARN's ResourceManager runs its ReservationInputValidator before the agent's
    createReservation (which is all YARN's side times); one that fails is decided unvalidated, so its time is the
    rejection's, validation included."""
    best: OurRun | None = None
    for _ in range(max(1, repeat)):
        planner = Planner(cluster)
        chosen = get_agent(agent)
        records, seconds, validating = [], [], []
        for reservation in stream.reservations:
            began = time.perf_counter()
            valid = _valid(reservation, cluster, planner.plan.now)
            validating.append(time.perf_counter() - began)
            began = time.perf_counter()
            made = planner.submit(reservation, chosen, explain=explain, validated=valid)
            seconds.append(time.perf_counter() - began)
            records.append(made.to_json(planner.plan.clock))
        if best is None:
            best = OurRun(records, seconds, validating)
            continue
        if records != best.records:
            raise RuntimeError(f"{agent} decided the same stream differently on a second pass")
        best.seconds = [min(a, b) for a, b in zip(best.seconds, seconds, strict=True)]
        best.validating = [min(a, b) for a, b in zip(best.validating, validating, strict=True)]
    assert best is not None
    return best


def _valid(reservation: Reservation, cluster: Cluster, now: datetime) -> bool:
    try:
        validate([reservation], cluster, now)
    except RDLErrors:
        return False
    return True
