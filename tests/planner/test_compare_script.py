"""benchmarks/compare.py's own Python: a run decides what `Planner.submit` decides, runs of one side merge to each
decision's least time, and the report says whether two sides decided the same."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from planner.admission import Planner
from planner.agents.registry import get_agent
from tests.peers.yarn import streams

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare", ROOT / "benchmarks" / "compare.py")
assert spec is not None and spec.loader is not None
compare = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = compare
spec.loader.exec_module(compare)

COUNTS = {"count": 12, "mixed": 20, "week": 20}


def test_a_run_decides_what_submit_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # a run puts its checkout's folders first
    run = compare.work(ROOT, ["gree"], ["gangs"], COUNTS, repeat=2, warmup=0, explain=True)
    cluster, stream = streams.gangs(12, 7 + 6)
    planner, agent = Planner(cluster), get_agent("gree")
    assert run["gangs gree"]["accepted"] == [planner.submit(r, agent).accepted for r in stream.reservations]
    assert len(run["gangs gree"]["seconds"]) == 12
    assert run["_planner"].startswith(str(ROOT))
    again = compare.work(ROOT, ["gree"], ["gangs"], COUNTS, repeat=1, warmup=1, explain=True)
    assert again["gangs gree"]["records"] == run["gangs gree"]["records"]


def test_a_stream_at_a_step_is_planned_at_that_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    made = {name: (cluster, reservations) for name, cluster, reservations, _ in compare._streams(
        ROOT, ["yarn", "yarn@1m"], COUNTS)}
    (fine, drawn), (coarse, same) = made["yarn"], made["yarn@1m"]
    assert fine.step == 1 and coarse == streams.at_step(fine, streams.Stream.of(drawn), "1m")[0] and same == drawn


def result(seconds: list[float], accepted: list[bool], records: str = "r") -> dict:  # type: ignore[type-arg]
    return {"seconds": seconds, "accepted": accepted, "records": records}


def test_runs_merge_to_each_decisions_least_time_and_refuse_a_changed_decision() -> None:
    kept = compare.merge(None, {"s a": result([3.0, 1.0], [True, False])})
    kept = compare.merge(kept, {"s a": result([2.0, 4.0], [True, False])})
    assert kept["s a"]["seconds"] == [2.0, 1.0]
    with pytest.raises(SystemExit, match="not deterministic"):
        compare.merge(kept, {"s a": result([1.0, 1.0], [True, True], records="other")})


@pytest.mark.parametrize(("head", "said"), [
    (result([0.002, 0.001], [True, False]), "same records"),
    (result([0.002, 0.001], [True, False], records="other"), "same accept/reject, other records"),
    (result([0.002, 0.001], [True, True], records="other"), "DIFFERENT (1 decisions)"),
])
def test_the_report_says_whether_the_sides_decided_the_same(head: dict, said: str,  # type: ignore[type-arg]
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    base = result([0.004, 0.001], [True, False])
    compare.report({"base": {"gangs gree": base}, "head": {"gangs gree": head}}, {"base": "b", "head": "h"})
    out = capsys.readouterr().out
    assert f"decisions: {said}" in out
    assert "0.50x" in out  # head's p99 (about 2 ms) over base's (about 4 ms)


def test_this_checkout_is_compared_as_it_was_when_the_comparison_started(tmp_path: Path) -> None:
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    (repo / "kept.py").write_text("committed\n")
    (repo / "gone.py").write_text("committed\n")
    (repo / ".gitignore").write_text("ignored.txt\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (repo / "kept.py").write_text("edited, not committed\n")
    (repo / "gone.py").unlink()
    (repo / "pkg").mkdir()
    (repo / "pkg" / "new.py").write_text("new, not added\n")
    (repo / "ignored.txt").write_text("ignored\n")
    assert compare.snapshot(repo, copy) == copy
    (repo / "kept.py").write_text("edited while the comparison runs\n")
    assert (copy / "kept.py").read_text() == "edited, not committed\n"
    assert (copy / "pkg" / "new.py").read_text() == "new, not added\n"
    assert not (copy / "gone.py").exists() and not (copy / "ignored.txt").exists()
