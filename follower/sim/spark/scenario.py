"""Spark-model scenarios: the UWFQ tool's workload configs as small YAML files (examples/spark/).

A scenario names its cluster, its job classes (core-seconds of work in the scan stage) and its
streams: a user submits `count` jobs of a class from `start` seconds on, all at once or Poisson
(`mode: para`, `per_minute`), or each after the previous one ends (`mode: seq`), as the tool's
`Workload` threads do. A `trace:` CSV (`user, submit, work` per row) adds one job per row, as
the tool's macro configs do. Every job is a scan stage (cut into tasks by `partition.py`) followed
by a one-task result stage (the tool's `agg(...).take(10)`).
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from follower.sim.spark.model import Cluster, JobSpec, StageSpec
from follower.sim.spark.partition import Partitioning, stage_tasks
from rdl import config
from rdl.errors import RayonError

KEYS = ("name", "about", "cluster", "classes", "streams", "trace", "input_tasks", "result_task", "skew", "small")
STREAM_KEYS = ("user", "class", "count", "start", "mode", "per_minute")


class SparkScenarioError(RayonError):
    """A Spark-model scenario file that cannot be read."""

    code = "spark_scenario"


@dataclass(frozen=True, slots=True)
class Stream:
    """`count` jobs of class `job` from user `user`, from `start` seconds, `para` or `seq`."""

    user: str
    job: str
    count: int = 1
    start: float = 0.0
    mode: str = "para"
    per_minute: float = 0.0


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One row of a macro trace: a job of `work` core-seconds from `user` at `submit` seconds."""

    user: str
    submit: float
    work: float


@dataclass(frozen=True, slots=True)
class Scenario:
    """A whole scenario as read; `jobs(...)` turns it into job specs for one run."""

    name: str
    about: str
    cluster: Cluster
    classes: Mapping[str, float]
    streams: tuple[Stream, ...]
    trace: tuple[TraceJob, ...] = ()
    input_tasks: int = 32
    result_task: float = 0.05
    skew: float = 0.5
    small: float = 0.5

    def jobs(self, runtime_partitioning: bool, seed: int) -> list[JobSpec]:
        """Every job, its tasks cut by run time or by input, task times drawn with `seed`."""
        cut = Partitioning(runtime=runtime_partitioning, input_tasks=self.input_tasks)
        jobs = [job for index, stream in enumerate(self.streams) for job in self._stream(index, stream, cut, seed)]
        jobs += [self._job(f"t{index}", row.user, row.submit, row.work, "trace", cut, seed)
                 for index, row in enumerate(self.trace)]
        return jobs

    def _stream(self, index: int, stream: Stream, cut: Partitioning, seed: int) -> list[JobSpec]:
        waits = random.Random(f"{seed}/waits/{index}")
        rate = stream.per_minute / 60.0
        jobs: list[JobSpec] = []
        submit, previous_wait = stream.start, 0.0
        for number in range(stream.count):
            wait = waits.expovariate(rate) if rate > 0 else 0.0
            job_id = f"{stream.user}/{stream.job}/{index}.{number}"
            job = self._job(job_id, stream.user, submit, self.classes[stream.job], stream.job, cut, seed)
            if stream.mode == "seq" and jobs:
                job = JobSpec(job.id, job.user, previous_wait, job.stages, job.estimate, job.kind, jobs[-1].id)
            jobs.append(job)
            submit, previous_wait = submit + wait, wait
        return jobs

    def _job(self, job_id: str, user: str, submit: float, work: float, kind: str, cut: Partitioning,
             seed: int) -> JobSpec:
        rng = random.Random(f"{seed}/{job_id}")
        scan = StageSpec(stage_tasks(work, cut, self.skew, rng))
        result = StageSpec((self.result_task,), parents=(0,))
        return JobSpec(job_id, user, submit, (scan, result), work + self.result_task, kind)


def load_scenario(file: str | Path) -> Scenario:
    """Read a scenario file (and its trace CSV, relative to it); errors name the file and the key."""
    path = Path(file)
    try:
        data = config.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SparkScenarioError(f"cannot read the scenario: {exc}", place=str(path)) from exc
    if not isinstance(data, dict):
        raise SparkScenarioError("a scenario is a mapping with `name`, `cluster`, `classes`, `streams`",
                                 place=str(path))
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise SparkScenarioError(f"unknown key `{unknown[0]}`; the keys are {', '.join(KEYS)}", place=str(path))
    return _scenario(data, path)


def _scenario(data: dict[str, Any], path: Path) -> Scenario:
    place = str(path)
    classes = {str(name): _number(work, f"classes.{name}", place) for name, work in (data.get("classes") or {}).items()}
    streams = tuple(_stream(entry, classes, place) for entry in data.get("streams") or ())
    trace = _trace(path.parent / str(data["trace"]), place) if data.get("trace") else ()
    if not streams and not trace:
        raise SparkScenarioError("the scenario has no jobs: give `streams` or a `trace`", place=place)
    small = _number(data.get("small", 0.5), "small", place)
    if not 0 < small <= 1:
        raise SparkScenarioError(f"`small` is a quantile of job work, above 0 and at most 1, got {small:g}",
                                 place=place)
    return Scenario(str(data.get("name", path.stem)), str(data.get("about", "")), _cluster(data, place), classes,
                    streams, trace, _count(data.get("input_tasks", 32), "input_tasks", place),
                    _number(data.get("result_task", 0.05), "result_task", place),
                    _number(data.get("skew", 0.5), "skew", place), small)


def _cluster(data: dict[str, Any], place: str) -> Cluster:
    given = data.get("cluster") or {}
    if not isinstance(given, dict) or set(given) - {"executors", "cores"}:
        raise SparkScenarioError(f"`cluster` takes `executors` and `cores`, got {given!r}", place=place)
    return Cluster(**{key: _count(value, f"cluster.{key}", place) for key, value in given.items()})


def _stream(entry: Any, classes: Mapping[str, float], place: str) -> Stream:
    if not isinstance(entry, dict) or set(entry) - set(STREAM_KEYS) or not {"user", "class"} <= set(entry):
        raise SparkScenarioError(f"a stream is a mapping with `user` and `class`, and maybe "
                                 f"{', '.join(STREAM_KEYS[2:])}; got {entry!r}", place=place)
    stream = Stream(str(entry["user"]), str(entry["class"]), _count(entry.get("count", 1), "count", place),
                    _number(entry.get("start", 0.0), "start", place), str(entry.get("mode", "para")),
                    _number(entry.get("per_minute", 0.0), "per_minute", place))
    if stream.job not in classes:
        raise SparkScenarioError(f"stream of `{stream.user}` names class `{stream.job}`, which `classes` does not "
                                 f"list ({', '.join(classes)})", place=place)
    if stream.mode not in ("para", "seq"):
        raise SparkScenarioError(f"stream mode must be `para` or `seq`, got `{stream.mode}`", place=place)
    return stream


def _trace(path: Path, place: str) -> tuple[TraceJob, ...]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise SparkScenarioError(f"cannot read the trace: {exc}", place=place) from exc
    try:
        return tuple(TraceJob(row["user"], float(row["submit"]), float(row["work"])) for row in rows)
    except (KeyError, ValueError) as exc:
        raise SparkScenarioError(f"trace rows need `user, submit, work` numbers: {exc}", place=str(path)) from exc


def _number(value: Any, what: str, place: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise SparkScenarioError(f"`{what}` must be a number of at least 0, got {value!r}", place=place)
    return float(value)


def _count(value: Any, what: str, place: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SparkScenarioError(f"`{what}` must be a whole number of at least 1, got {value!r}", place=place)
    return value
