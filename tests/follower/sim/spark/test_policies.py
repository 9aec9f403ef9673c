"""Each Spark-model policy's choice on tiny cases where the right answer is plain."""

from __future__ import annotations

from follower.sim.spark.engine import RunResult, simulate
from follower.sim.spark.model import Cluster, JobSpec, StageSpec
from follower.sim.spark.policies import POLICIES, UserFair, Uwfq
from follower.sim.spark.runtime import JobRun, StageRun
from tests.follower.sim.spark.support import one_stage

ONE_SLOT = Cluster(executors=1, cores=1)
TWO_SLOTS = Cluster(executors=1, cores=2)


def first_start(result: RunResult, job: str) -> float:
    return min(task.start for task in result.tasks if task.job == job)


def ends(result: RunResult) -> dict[str, float]:
    return {job.id: job.end for job in result.jobs}


def test_fair_gives_a_freed_slot_to_the_job_with_fewer_running_tasks() -> None:
    jobs = [one_stage("a", "u", 0.0, [1.0, 3.0, 1.0, 1.0]), one_stage("b", "u", 0.5, [1.0])]
    result = simulate(jobs, POLICIES.get("fair")(2), TWO_SLOTS)
    assert first_start(result, "b") == 1.0


def test_userfair_is_fifo_within_a_user() -> None:
    jobs = [one_stage("a", "u", 0.0, [1.0, 3.0, 1.0, 1.0]), one_stage("b", "u", 0.5, [1.0])]
    result = simulate(jobs, POLICIES.get("userfair")(2), TWO_SLOTS)
    assert first_start(result, "b") == 3.0  # a's last task took the slot freed at 2.0 too


def test_userfair_within_fair_shares_a_user_s_pool_between_its_task_sets() -> None:
    jobs = [one_stage("a", "u", 0.0, [1.0, 3.0, 1.0, 1.0]), one_stage("b", "u", 0.5, [1.0])]
    result = simulate(jobs, UserFair(2, within="fair"), TWO_SLOTS)
    assert first_start(result, "b") == 1.0


def test_userfair_shares_between_users_not_jobs() -> None:
    # u has three jobs and v one: v's pool gets half the slots under userfair, a quarter under fair.
    jobs = [*(one_stage(f"u{i}", "u", 0.0, [1.0] * 4) for i in range(3)), one_stage("v1", "v", 0.0, [1.0] * 4)]
    assert ends(simulate(jobs, POLICIES.get("userfair")(2), TWO_SLOTS))["v1"] == 5.0
    assert ends(simulate(jobs, POLICIES.get("fair")(2), TWO_SLOTS))["v1"] == 8.0


def test_jobfq_serves_the_job_with_the_earliest_virtual_finish() -> None:
    # Both slots went to `big` when it arrived; once they free, both go to `small` (tag 2 < 10).
    jobs = [one_stage("big", "u", 0.0, [1.0] * 10), one_stage("small", "v", 0.0, [1.0] * 2)]
    assert ends(simulate(jobs, POLICIES.get("jobfq")(2), TWO_SLOTS)) == {"big": 6.0, "small": 2.0}


def test_fair_shares_freed_slots_by_running_tasks() -> None:
    # At 1 s the first freed slot goes to `small` (0 running against 1), the second to `big` (0 against 1).
    jobs = [one_stage("big", "u", 0.0, [1.0] * 10), one_stage("small", "v", 0.0, [1.0] * 2)]
    assert ends(simulate(jobs, POLICIES.get("fair")(2), TWO_SLOTS))["small"] == 3.0


def test_fair_on_one_slot_is_fifo_as_in_spark() -> None:
    # When the only slot frees, every job runs 0 tasks: the tie goes to the earlier task set.
    jobs = [one_stage("big", "u", 0.0, [1.0] * 10), one_stage("small", "v", 0.0, [1.0] * 2)]
    assert ends(simulate(jobs, POLICIES.get("fair")(1), ONE_SLOT))["small"] == 12.0


def test_uwfq_puts_a_light_user_s_job_before_a_heavy_user_s_backlog() -> None:
    heavy = [one_stage(f"h{i}", "heavy", 0.0, [1.0] * 4) for i in range(5)]
    light = one_stage("light", "light", 0.1, [1.0] * 4)
    uwfq = ends(simulate([*heavy, light], POLICIES.get("uwfq")(1), ONE_SLOT))
    jobfq = ends(simulate([*heavy, light], POLICIES.get("jobfq")(1), ONE_SLOT))
    assert uwfq["light"] == 8.0  # after the heavy user's first job only
    assert jobfq["light"] == 24.0  # every heavy job had an earlier virtual finish


def test_uwfq_chains_a_user_s_jobs_in_user_deadline_order() -> None:
    # Both arrive at user virtual time 0: b (deadline 1) is chained before a (deadline 3).
    policy = Uwfq(1)
    first, second = _stage(policy, "a", "u", 0, estimate=3.0), _stage(policy, "b", "u", 1, estimate=1.0)
    assert (policy.virtual_deadline(first), policy.virtual_deadline(second)) == (4.0, 1.0)


def test_uwfq_a_later_stage_of_a_virtually_finished_job_keeps_deadline_zero() -> None:
    policy = Uwfq(2)
    job = JobSpec("j", "u", 0.0, (StageSpec((1.0,)), StageSpec((1.0,), parents=(0,))), estimate=1.0)
    run = JobRun(job, 0, 0.0)
    policy.stage_submitted(StageRun(run, 0, 0, 0.0), 0.0)
    _stage(policy, "w", "w", 1, estimate=100.0, now=0.0)
    late = StageRun(run, 1, 2, 5.0)
    policy.stage_submitted(late, 5.0)
    assert policy.virtual_deadline(late) == 0.0


def test_uwfq_grace_period_keeps_a_returning_user_s_place_only_within_it() -> None:
    # u's one-core-second job finishes virtually at V = 1 (t = 1 s, two users on two slots), then only
    # w is active and V grows 2 per second; the grace is 3 s × 2 slots / 2 = 3 in V's units.
    for now, kept in ((2.0, True), (3.0, False)):
        policy = Uwfq(2)
        _stage(policy, "j", "u", 0, estimate=1.0, now=0.0)
        _stage(policy, "w", "w", 1, estimate=100.0, now=0.0)
        _stage(policy, "j", "u", 2, estimate=1.0, now=now)
        assert (policy.active["u"].start == 1.0) is kept, now


def _stage(policy: Uwfq, job_id: str, user: str, seq: int, estimate: float, now: float = 0.0) -> StageRun:
    stage = StageRun(JobRun(JobSpec(job_id, user, now, (StageSpec((estimate,)),), estimate), seq, now), 0, seq, now)
    policy.stage_submitted(stage, now)
    return stage


def test_fifo_serves_the_earliest_job_first_whatever_its_size() -> None:
    jobs = [one_stage("big", "u", 0.0, [1.0] * 10), one_stage("small", "v", 0.5, [1.0] * 2)]
    assert ends(simulate(jobs, POLICIES.get("fifo")(2), TWO_SLOTS)) == {"big": 5.0, "small": 6.0}
