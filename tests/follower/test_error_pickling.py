"""Every product error survives pickling (the evaluation's process pool sends them between processes)."""

from __future__ import annotations

import pickle

import pytest

from follower.follow.configmap import KubernetesError
from follower.follow.follower import FollowerError
from follower.scheduler.errors import (
    ConfigError,
    PlacementRejected,
    Problem,
    QueueError,
    SchedulerError,
    UnknownError,
)
from follower.sim.spark.scenario import SparkScenarioError
from follower.sim.workloads.report import LineIssue, TraceError
from planner.api.auth import TokenError
from planner.plot import PlotError
from planner.store.errors import StoreError
from rdl.errors import EXIT_INTERNAL, Interrupted, RayonError, RDLError, RDLErrors, Reported, Span
from rdl.lint import RDLWarning
from rdl.registry import UnknownName

AT = Span("etl.rdl", 3, 7)
SAMPLES: list[RayonError] = [
    RayonError("disk full", code="io", hint="free some space", place="out/", exit_code=EXIT_INTERNAL),
    Reported(),
    RDLError(AT, "unknown resource `gpu`", expected="vcores or memory", hint="did you mean `vcores`?"),
    RDLErrors([RDLError(AT, "bad"), RDLError(Span("a.json", json_path="$.expr"), "worse")], {"etl.rdl": "x\n"}),
    StoreError("database", "the store is locked", hint="retry"),
    SchedulerError("the scheduler is stuck"),
    ConfigError([Problem("scheduler.queues.etl.policy", "unknown policy `fifx`")]),
    PlacementRejected("app-1", "no queue accepts user `bob`"),
    QueueError("root.etl", "is a parent"),
    UnknownError("node", "n7"),
    FollowerError("the plan does not cover 2030", hint="advance the plan"),
    KubernetesError("cannot reach the Kubernetes API server", "is the cluster up?", EXIT_INTERNAL),
    TraceError(LineIssue("ricc.swf", 12, "malformed", "7 fields, expected 18")),
    SparkScenarioError("unknown key `clasess`", place="examples/spark/s.yaml"),
    UnknownName("agent", "gree-k", ("gree", "gree-l", "milp")),
    TokenError("tokens.txt:2", "not a hash"),
    PlotError("unknown resource `gpu`"),
    RDLWarning(AT, "`memory: 2` is 2 MiB", hint="did you mean 2GiB?"),
    Interrupted("interrupted: 2 of 3 submitted", hint="run it again with --skip-existing"),
]


def subclasses(kind: type) -> set[type]:
    return {kind} | {sub for direct in kind.__subclasses__() for sub in subclasses(direct)}


def test_every_error_class_is_sampled() -> None:
    assert {type(error) for error in SAMPLES} >= {kind for kind in subclasses(RayonError)
                                                  if kind.__module__.split(".")[0] in ("rdl", "planner", "follower")}


@pytest.mark.parametrize("error", SAMPLES, ids=lambda error: type(error).__name__)
def test_pickling_keeps_type_message_code_exit_status_and_place(error: RayonError) -> None:
    error.then("nothing was simulated")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.message, copy.code, copy.exit_code, copy.place, copy.hint) == \
           (error.message, error.code, error.exit_code, error.place, error.hint)
    assert (str(copy), copy.render(), copy.args, copy.consequences) == \
           (str(error), error.render(), error.args, error.consequences)
    assert getattr(copy, "span", None) == getattr(error, "span", None)


def test_a_list_of_errors_keeps_each_error_and_its_source() -> None:
    error = SAMPLES[3]
    assert isinstance(error, RDLErrors)
    copy = pickle.loads(pickle.dumps(error))
    assert [(e.span, e.message) for e in copy.errors] == [(e.span, e.message) for e in error.errors]
    assert copy.sources == error.sources
