"""Every queue configuration the follower writes, judged by YuniKorn's own validation (tests/peers/yunikorn/validate,
yunikorn-core's `configs.ParseAndValidateConfig`) on the oldest and the newest core release served here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from follower.follow import yunikorn
from follower.follow.follower import Follower, queue_name
from tests.follower.fakes import GiB, minute, plan_of
from tests.peers.yunikorn.validator import NEWEST, OLDEST, PeerUnavailable, validate

pytestmark = pytest.mark.peer
ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
VERSIONS = (OLDEST, NEWEST)

# A cluster's own configuration: best-effort queues, placement rules, a node sort policy; the plan queue goes in.
BASE = """\
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent: {name: fixed, value: root.besteffort}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: besteffort
            parent: true
            resources: {max: {memory: 400Gi, vcore: 100}}
          - name: plan
            queues:
              - name: stale
"""


@pytest.fixture(scope="module", params=VERSIONS)
def core(request: pytest.FixtureRequest) -> str:
    """A yunikorn-core release whose validator builds here (else the test is skipped, saying why)."""
    try:
        validate("", request.param)
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    return str(request.param)


def test_the_validator_is_yunikorn_s_and_refuses_what_yunikorn_refuses(core: str) -> None:
    stream = yunikorn.render(Follower().rounds(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(0), minute(20)),
                             minute(20))
    good = stream.split("---\n")[0]
    bad = good.replace("name: plan\n", "name: plan.queue\n", 1)  # a dot: no queue name YuniKorn allows
    over = good.replace("vcore: 95}", "vcore: 9995}")  # the default queue guaranteed more than its parent
    assert bad != good and over != good
    verdicts = validate("---\n".join([stream, bad, over]), core)
    assert [v.valid for v in verdicts] == [True, True, False, False] and {v.core for v in verdicts} == {f"v{core}"}
    assert "plan.queue" in (verdicts[2].error or "") or "queue name" in (verdicts[2].error or "")
    assert "guaranteed" in (verdicts[3].error or "")


def test_every_document_rayon_follow_writes_for_the_examples_is_valid(core: str, tmp_path: Path) -> None:
    state = str(tmp_path / "plan.db")

    def rayon(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "follower.cli", *args, "--state", state], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        return done.stdout

    rayon("init", "--cluster", str(EXAMPLES / "cluster.yaml"))
    rayon("submit", *map(str, sorted(EXAMPLES.glob("*.rdl"))), str(EXAMPLES / "yarn_spark_pipeline.json"))
    (tmp_path / "base.yaml").write_text(BASE)
    streams = [rayon("follow", "--format", "yunikorn", "--to", "+3d"),
               rayon("follow", "--format", "yunikorn", "--to", "+3d", "--sort-policy", "fair", "--max-policy", "plan",
                     "--base", str(tmp_path / "base.yaml"))]
    for stream in streams:
        verdicts = validate(stream, core)
        assert len(verdicts) == stream.count("# rayon follow:") > 1
        assert [v.error for v in verdicts if not v.valid] == []


# Names whose queue name is longer than YuniKorn allows are refused by the export itself (test_yunikorn.py).
NAMES = st.text(alphabet="abcxyz019_-.", min_size=1, max_size=40).filter(
    lambda n: n[0].isalpha() and len(queue_name(n)) <= 64)
LEASES = st.lists(st.tuples(st.integers(0, 100), st.integers(1, 20), st.integers(0, 60)), max_size=4)


@st.composite
def plans(draw: st.DrawFn) -> tuple[str, ...]:
    """A YAML stream of documents over a random plan: many reservations, long names, dots, zero allocations, lost
    capacity, a base configuration or none, either sort policy, any max policy."""
    names = draw(st.lists(NAMES, min_size=0, max_size=12, unique_by=lambda n: n.replace(".", "_dot_")))
    reservations = []
    for name in names:
        lo = draw(st.integers(0, 90))
        hi = draw(st.integers(lo + 1, 120))
        leases = [(max(lo, s), min(hi, max(lo, s) + length), n) for s, length, n in draw(LEASES)
                  if max(lo, s) < min(hi, max(lo, s) + length)]
        reservations.append((name, lo, hi, leases))
    plan = plan_of(*reservations)
    follower = Follower(max_policy=draw(st.sampled_from(["strict", "plan", "unlimited"])),
                        round_steps=draw(st.sampled_from([1, 5, 15])))
    lost = draw(st.sampled_from([None, {"memory": 333 * GiB, "vcores": 77.5}]))
    rounds = follower.rounds(plan, minute(0), minute(120), lost)
    base = yunikorn.load_base(BASE, "base.yaml") if draw(st.booleans()) else None
    return (yunikorn.render(rounds, minute(120), base, sort_policy=draw(st.sampled_from(yunikorn.SORT_POLICIES))),)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=plans())
def test_generated_plans_make_documents_yunikorn_accepts(stream: tuple[str, ...]) -> None:
    for version in VERSIONS:
        try:
            verdicts = validate(stream[0], version)
        except PeerUnavailable as exc:
            pytest.skip(str(exc))
        assert [v.error for v in verdicts if not v.valid] == [], stream[0][:2000]


def test_stateaware_documents_for_the_old_core_are_valid_there(core: str) -> None:
    rounds = Follower().rounds(plan_of(("a", 0, 30, [(0, 10, 5)])), minute(0), minute(20))
    policy, _ = yunikorn.sort_policy_for("stateaware", core)
    stream = yunikorn.render(rounds, minute(20), sort_policy=policy)
    assert (policy == "stateaware") == (core == OLDEST)
    assert all(v.valid for v in validate(stream, core))
