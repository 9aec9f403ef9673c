"""A submission checked against the plan as a server last read it (`Store.submit(validated_on=)`, the API's hot path
with no read of its own) is validated again when the plan its batch decides on is another."""

from __future__ import annotations

from pathlib import Path

from planner.store.facade import Store, plan_key
from rdl import parse_text
from tests.planner.support import at, cluster_text

GPU_JOB = f"reservation g {{ window(s={at(0)}, e={at(60)}, atom(b={{vcores: 1, gpu: 1}}, l=10m, w=10m)) }}"


def test_a_submission_validated_on_a_plan_since_replaced_is_validated_again(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as server, Store.open(state) as operator:
        server.init(cluster_text({"vcores": 8, "gpu": 2}, steps=120), "gpus.yaml")
        seen = plan_key(server.recent_meta())  # what the server checked the submission against: GPUs exist
        operator.init(cluster_text({"vcores": 8}, steps=120), "cpus.yaml", force=True)  # replaced under it
        (reservation,) = parse_text(GPU_JOB)
        decision = server.submit(reservation, validated=True, validated_on=seen)
        assert not decision.accepted and decision.reason is not None and decision.reason.code == "invalid"
        assert "gpu" in decision.reason.message


def test_a_submission_validated_on_the_current_plan_is_not_validated_twice(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(cluster_text({"vcores": 8}, steps=120), "cpus.yaml")
        (reservation,) = parse_text(GPU_JOB)  # invalid here, but the caller vouches for it on this very plan
        decision = store.submit(reservation, validated=True, validated_on=plan_key(store.recent_meta()))
        assert decision.reason is None or decision.reason.code != "invalid"
