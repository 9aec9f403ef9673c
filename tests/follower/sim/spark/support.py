"""Small hand-made jobs for the Spark-model tests."""

from __future__ import annotations

from collections.abc import Sequence

from follower.sim.spark.model import JobSpec, StageSpec


def one_stage(job_id: str, user: str, submit: float, tasks: Sequence[float], estimate: float | None = None) -> JobSpec:
    """A job of one stage with these task times; its estimate is its work unless given."""
    return JobSpec(job_id, user, submit, (StageSpec(tuple(tasks)),), sum(tasks) if estimate is None else estimate)
