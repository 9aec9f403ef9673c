"""The job model: what a job may be, and the reservation a production job submits."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from follower.sim.workloads.job import BEST_EFFORT, NONE, PRODUCTION, Job, Workload, node_capacity, node_names
from rdl import parse_text, validate
from rdl.nodes import NodeGroup
from rdl.tree import Absolute, Atom, Resources
from tests.follower.sim.workloads.conftest import START, cluster_of

CORE = Resources.of({"memory": 2048, "vcores": 1})
BIG = Resources.of({"memory": 8192, "vcores": 4})
NODES = (NodeGroup("worker", 4, Resources.of({"memory": 32768, "vcores": 16})),)


def production(**changes: object) -> Job:
    job = Job(id="etl", user="alice", submit=60.0, kind=PRODUCTION, driver=CORE, executors=3, executor=CORE,
              runtime=500.0, declared=600.0, deadline=3600.0, queue="production")
    return replace(job, **changes)  # type: ignore[arg-type]


def test_identical_containers_reserve_one_gang_for_the_declared_duration() -> None:
    reservation = production().to_reservation(START, ("memory", "vcores"))
    atom = reservation.body
    assert isinstance(atom, Atom)
    assert (atom.bundle, atom.gang, atom.parallelism, atom.lease, atom.work) == (CORE, 4, 4, 600.0, 2400.0)
    assert reservation.arrival == Absolute(START + timedelta(seconds=60))
    assert reservation.deadline == Absolute(START + timedelta(seconds=3600))
    assert (reservation.user, reservation.queue) == ("alice", "production")


def test_a_driver_unlike_its_executors_reserves_one_bundle_of_them_all() -> None:
    atom = production(executor=BIG).to_reservation(START, ("memory", "vcores")).body
    assert isinstance(atom, Atom)
    assert atom.bundle == Resources.of({"memory": 2048 + 3 * 8192, "vcores": 13})
    assert (atom.gang, atom.lease, atom.work) == (1, 600.0, 600.0)


def test_a_job_without_a_driver_reserves_its_executors_alone() -> None:
    atom = production(driver=NONE, executors=5).to_reservation(START, ("memory", "vcores")).body
    assert isinstance(atom, Atom)
    assert (atom.bundle, atom.gang) == (CORE, 5)


def test_the_rdl_text_parses_back_to_the_same_reservation_and_validates() -> None:
    job = production(declared=599.5)
    text = job.to_rdl(START, ("memory", "vcores"))
    [parsed] = parse_text(text)
    assert parsed == job.to_reservation(START, ("memory", "vcores"))
    assert parsed.body.lease == 600.0  # type: ignore[union-attr]  # whole seconds, rounded up
    validate([parsed], cluster_of(NODES))


def test_zero_quantities_are_left_out_of_the_bundle() -> None:
    job = production(driver=Resources.of({"gpu": 0.0, "memory": 2048, "vcores": 1}), executors=0)
    assert "gpu" not in job.to_rdl(START, ("memory", "vcores"))


def test_a_resource_the_cluster_lacks_is_an_error() -> None:
    job = production(executor=Resources.of({"gpu": 1.0, "memory": 2048, "vcores": 1}))
    with pytest.raises(ValueError, match="needs gpu"):
        job.to_rdl(START, ("memory", "vcores"))


def test_a_best_effort_job_has_no_reservation() -> None:
    job = production(kind=BEST_EFFORT, deadline=None)
    with pytest.raises(ValueError, match="best effort"):
        job.to_reservation(START, ("memory", "vcores"))


@pytest.mark.parametrize(("changes", "message"), [
    ({"deadline": None}, "needs a deadline"),
    ({"deadline": 30.0}, "after submission"),
    ({"runtime": 0.0}, "positive"),
    ({"executors": -1}, "0 or more"),
    ({"submit": -5.0}, "submit"),
    ({"id": "9lives"}, "must be a name"),
    ({"kind": "batch"}, "kind must be one of"),
    ({"driver": NONE, "executor": NONE}, "executors need resources"),
    ({"driver": NONE, "executors": 0}, "at least one container"),
])
def test_an_impossible_job_is_refused_with_the_reason(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        production(**changes)


def test_totals_and_containers() -> None:
    job = production(executor=BIG)
    assert job.containers == 4
    assert job.total == Resources.of({"memory": 2048 + 3 * 8192, "vcores": 13})
    assert production(driver=NONE).containers == 3


def test_a_workload_sorts_its_jobs_by_submission_then_id() -> None:
    late, early_b, early_a = production(id="late", submit=90.0), production(id="b"), production(id="a")
    workload = Workload.of("w", [late, early_b, early_a])
    assert [job.id for job in workload.jobs] == ["a", "b", "late"]
    assert workload.end == 90.0 and workload.users == ("alice",)


def test_a_workload_refuses_a_job_id_used_twice() -> None:
    with pytest.raises(ValueError, match="`a` is used twice"):
        Workload.of("w", [production(id="a"), production(id="a", submit=5.0)])


def test_node_names_and_capacity() -> None:
    groups = (NodeGroup("gpu", 2, BIG), NodeGroup("cpu", 1, CORE))
    assert [name for name, _ in node_names(groups)] == ["gpu-0", "gpu-1", "cpu-0"]
    assert node_capacity(groups) == Resources.of({"memory": 2 * 8192 + 2048, "vcores": 9})
