"""The simulator checked against the real control plane (vs_sim.py plays tests/peers/k8s/vs_sim.yaml on both): told
that the cluster runs YuniKorn (`preemption.model: yunikorn`), the simulator says which production jobs meet their
deadlines, in which order they start, and when each starts within vs_sim.TOLERANCE (one YuniKorn retry plus what
the model leaves out; docs/kubernetes.md). `python benchmarks/k8s_vs_sim.py` prints the same comparison."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.peers.k8s.controlplane import ControlPlane
from tests.peers.k8s.scenario import clear
from tests.peers.k8s.vs_sim import (
    EARLY,
    TOLERANCE,
    Row,
    Side,
    close_to_deadline,
    compare,
    play,
    scenario,
    simulate,
    table,
)

pytestmark = pytest.mark.cluster

SIM, REAL = "simulator (yunikorn)", "control plane"


@pytest.fixture(scope="module")
def sides(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> list[Side]:
    work: Path = tmp_path_factory.mktemp("vs-sim")
    real = play(control_plane, work)
    clear(control_plane.client())
    found = [simulate("yarn"), simulate("yunikorn"), real]
    print("\n" + table(found))
    return found


@pytest.fixture(scope="module")
def rows(sides: list[Side]) -> list[Row]:
    return compare(sides)


def test_both_sides_plan_the_same_leases(rows: list[Row]) -> None:
    # the simulator submits each reservation when its job arrives, the store had them all at the start (each with
    # its arrival): the same agent places them the same
    assert all(row.lease[SIM] is not None and row.lease[SIM] == row.lease[REAL] for row in rows), rows


def test_every_production_job_ran_on_both(rows: list[Row]) -> None:
    assert all(row.start[side] is not None and row.finish[side] is not None for row in rows for side in (SIM, REAL))


def test_each_job_starts_when_the_yunikorn_model_says(rows: list[Row]) -> None:
    for row in rows:
        sim, real = row.start[SIM], row.start[REAL]
        assert sim is not None and real is not None
        assert -EARLY <= real - sim <= TOLERANCE, (row.job, sim, real)


def test_the_order_of_starts_agrees(rows: list[Row]) -> None:
    for a, b in itertools.permutations(rows, 2):
        sim_a, sim_b, real_a, real_b = a.start[SIM], b.start[SIM], a.start[REAL], b.start[REAL]
        assert sim_a is not None and sim_b is not None and real_a is not None and real_b is not None
        if sim_b - sim_a > TOLERANCE + EARLY:  # apart by more than the model's tolerance: the order is the model's
            assert real_a < real_b, (a.job, b.job, sim_a, sim_b, real_a, real_b)


def test_the_same_jobs_meet_their_deadlines(rows: list[Row]) -> None:
    decided = [row for row in rows if not close_to_deadline(row, SIM)]
    assert decided  # the scenario has jobs well clear of their deadlines, both ways
    assert {row.job for row in decided if row.met[SIM]} == {row.job for row in decided if row.met[REAL]}
    assert {row.job for row in decided if not row.met[SIM]} == {row.job for row in decided if not row.met[REAL]}


def test_a_job_outliving_its_lease_runs_to_its_end_on_both(rows: list[Row]) -> None:
    # p11 runs longer than it declared: `on_expiry: move` keeps it running after its queue is retired, and on
    # Kubernetes nothing stops it either (YuniKorn drains a queue that leaves its configuration)
    job = next(job for job in scenario().load_workload().production if job.id == "p11")
    assert job.runtime > job.declared
    row = next(row for row in rows if row.job == job.id)
    for side in (SIM, REAL):
        start, finish, lease = row.start[side], row.finish[side], row.lease[side]
        assert start is not None and finish is not None and lease is not None
        assert finish - start >= job.runtime - EARLY
        assert finish > lease + job.declared + 30  # its lease: what it declared and the 30 s preemption pad


def test_best_effort_gives_way_on_both(sides: list[Side]) -> None:
    by_name = {side.name: side for side in sides}
    # the model takes exactly the room the asks need; YuniKorn may take more (room made for a pod that then found
    # room elsewhere stays empty: docs/yunikorn.md), never less while best effort fills the nodes
    assert by_name[SIM].preempted > 0 and by_name[REAL].preempted >= by_name[SIM].preempted
