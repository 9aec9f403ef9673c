"""Malleable jobs: the reservation Rayon's job managers would ask for, which always fits its window, and task splits."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from follower.sim.workloads.deadlines import ProductionRule
from follower.sim.workloads.google import GoogleParams, read_google
from follower.sim.workloads.job import NONE, PRODUCTION, Job
from follower.sim.workloads.malleable import even_tasks, lease_steps, task_atom, window_steps
from follower.sim.workloads.synthetic import SyntheticParams, generate_synthetic
from rdl import parse_text, validate
from rdl.errors import RDLErrors
from rdl.nodes import NodeGroup
from rdl.syntax.printer import format_reservation
from rdl.tree import Atom, Resources
from tests.follower.sim.workloads.conftest import START, cluster_of, trace

EXECUTOR = Resources.of({"memory": 4096, "vcores": 2})
NODES = (NodeGroup("worker", 4, Resources.of({"memory": 65536, "vcores": 32})),)


def malleable(**changes: object) -> Job:
    """8 tasks of 5 min on 4 executors: 10 min at full width, declared exactly, due 30 min after submission."""
    job = Job(id="mr", user="alice", submit=60.0, kind=PRODUCTION, driver=NONE, executors=4, executor=EXECUTOR,
              runtime=600.0, declared=600.0, deadline=1860.0, tasks=(300.0,) * 8, malleable=True)
    return replace(job, **changes)  # type: ignore[arg-type]


def atom_of(job: Job, step: float = 60.0) -> Atom:
    atom = job.to_reservation(START, ("memory", "vcores"), step).body
    assert isinstance(atom, Atom)
    return atom


def test_a_malleable_job_reserves_a_lease_per_task_on_up_to_its_executors() -> None:
    atom = atom_of(malleable())
    assert (atom.bundle, atom.gang, atom.parallelism, atom.lease, atom.work) == (EXECUTOR, 1, 4, 300.0, 8 * 300.0)


def test_leases_are_whole_plan_steps_and_each_task_keeps_one() -> None:
    # 4 m 10 s tasks on a one-minute plan: five-minute leases, still one per task (not w / l = 6.7 of them).
    atom = atom_of(malleable(tasks=(250.0,) * 8, runtime=500.0, declared=500.0))
    assert (atom.lease, atom.work) == (300.0, 8 * 300.0)


def test_a_job_declares_its_tasks_in_proportion_to_its_declared_time() -> None:
    atom = atom_of(malleable(declared=720.0))  # declares 20 % more than it runs: 6-minute tasks
    assert (atom.lease, atom.work) == (360.0, 8 * 360.0)


def test_a_window_too_tight_for_whole_task_leases_reserves_the_work_in_shorter_leases() -> None:
    # Tasks of 5 m 30 s round up to 6-minute leases, two in a row: 12 min; the window holds 11 whole minutes.
    job = malleable(tasks=(330.0,) * 8, runtime=660.0, declared=660.0, deadline=60.0 + 660.0 + 30.0)
    atom = atom_of(job)
    assert atom.lease is not None and atom.lease < 360.0
    assert atom.work == pytest.approx(8 * 330.0)
    validate(parse_text(job.to_rdl(START, ("memory", "vcores"), 60.0), "mr.rdl"), cluster_of(NODES))


def test_every_malleable_reservation_fits_its_window_on_an_empty_cluster() -> None:
    rng = random.Random(7)
    cluster = cluster_of(NODES)
    for index in range(300):
        tasks = tuple(float(rng.randint(5, 900)) for _ in range(rng.randint(1, 40)))
        executors = rng.randint(1, 16)
        runtime = float(max(max(tasks), sum(tasks) / min(executors, len(tasks))))
        declared = float(round(runtime * rng.uniform(0.5, 2.0))) or 1.0
        submit = rng.uniform(0, 3600)
        job = malleable(id=f"mr{index}", tasks=tasks, executors=executors, runtime=runtime, declared=declared,
                        submit=submit, deadline=submit + declared + 120.0 + rng.choice((0.0, rng.uniform(0, 3600))))
        validate(parse_text(job.to_rdl(START, ("memory", "vcores"), 60.0), "mr.rdl"), cluster)


def test_a_derived_atom_the_window_could_not_hold_would_be_caught() -> None:
    # The check the property above relies on does fail: a lease per task where only 11 minutes are free.
    job = malleable(tasks=(330.0,) * 8, runtime=660.0, declared=660.0, deadline=60.0 + 660.0 + 30.0)
    reservation = job.to_reservation(START, ("memory", "vcores"), 60.0)
    tall = replace(reservation, body=Atom(bundle=EXECUTOR, work=8 * 360.0, gang=1, parallelism=4, lease=360.0))
    with pytest.raises(RDLErrors, match="needs at least"):
        validate(parse_text(format_reservation(tall), "mr.rdl"), cluster_of(NODES))


def test_a_rigid_job_stays_one_gang() -> None:
    job = malleable(malleable=False, driver=EXECUTOR, executors=3)
    atom = atom_of(job)
    assert (atom.gang, atom.parallelism, atom.lease, atom.work) == (4, 4, 600.0, 4 * 600.0)


def test_a_malleable_job_needs_tasks_executors_and_no_driver() -> None:
    with pytest.raises(ValueError, match="malleable job runs its tasks on its executors alone"):
        malleable(driver=EXECUTOR)
    with pytest.raises(ValueError, match="malleable job"):
        malleable(tasks=())


def test_window_steps_round_inwards() -> None:
    assert window_steps(30.0, 630.0, 60.0) == 9  # [1 m, 10 m)
    assert window_steps(60.0, 660.0, 60.0) == 10


def test_the_lease_is_the_task_unless_the_window_needs_it_shorter() -> None:
    assert lease_steps(5, 10, 10) == 5
    assert lease_steps(6, 11, 11) < 6 and lease_steps(6, 11, 11) * -(-11 // lease_steps(6, 11, 11)) <= 11
    assert lease_steps(6, 11, 10) == 1  # nothing fits: one step (the reservation is then invalid, as it must be)


def test_even_tasks_cut_each_executors_run_into_equal_tasks_of_about_the_length_asked() -> None:
    tasks = even_tasks(1000.0, 3, 300.0)
    assert len(tasks) == 3 * 3 and sum(tasks) == pytest.approx(3 * 1000.0)
    assert even_tasks(100.0, 2, 300.0) == (100.0, 100.0)  # shorter than a task: one task per executor


def test_task_atom_width_is_at_most_the_tasks() -> None:
    atom = task_atom((60.0, 60.0), 8, EXECUTOR, 60.0, 60.0, 10, 60.0)
    assert atom.parallelism == 2


def test_the_synthetic_share_of_malleable_jobs_changes_nothing_else() -> None:
    params = SyntheticParams(jobs=60, production=0.5, executors=(0, 12))
    rigid = generate_synthetic(params, seed=3)
    mixed = generate_synthetic(replace(params, malleable=0.5, task_length=120.0), seed=3)
    assert [(j.id, j.submit, j.kind, j.runtime, j.declared, j.deadline, j.executors) for j in rigid.jobs] == [
        (j.id, j.submit, j.kind, j.runtime, j.declared, j.deadline, j.executors) for j in mixed.jobs]
    made = [job for job in mixed.jobs if job.malleable]
    assert 0 < len(made) < len(mixed.jobs)
    assert all(job.executors and job.driver == NONE and sum(job.tasks) == pytest.approx(job.runtime * job.executors)
               for job in made)
    assert not any(job.malleable for job in rigid.jobs)


@pytest.mark.parametrize("name", ["google_wta_homo.csv", "google_wta_hetero.csv"])
@pytest.mark.parametrize("step", ["1s", "1m"])
def test_malleable_google_workflows_reserve_their_tasks_and_validate(name: str, step: str) -> None:
    params = GoogleParams(file=str(trace(name)), time_scale=15.0, malleable=True,
                          production=ProductionRule(fraction=1.0))
    workload = read_google(params, seed=1)
    assert workload.production and all(job.malleable for job in workload.jobs)
    cluster = cluster_of((NodeGroup("executor", 8, Resources.of({"memory": 4096, "vcores": 4})),), step=step,
                         horizon="2h")
    seconds = float(cluster.step)
    texts = [job.to_rdl(START, cluster.resource_names, seconds) for job in workload.production]
    reservations = parse_text("\n".join(texts), name)
    validate(reservations, cluster)
    assert all(r.body.gang == 1 for r in reservations)  # type: ignore[attr-defined]


def test_google_malleable_jobs_have_no_driver() -> None:
    with pytest.raises(ValueError, match="leave out `driver_memory`"):
        GoogleParams(malleable=True, driver_memory=1024.0)
