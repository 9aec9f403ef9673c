"""Golden tests over `examples/`: every example checks, prints back to the same tree, and plans cleanly.

Every example is accepted on `examples/cluster.yaml` by every registered agent, except an
example that says it demonstrates a rejection with a leading comment line containing
`expect: rejected`: that one must be rejected with a reason (and, when the reason offers an
earliest deadline, be accepted with it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner.agents.registry import AGENTS
from rdl.cluster import load_cluster
from rdl.forms.jsonform import from_json
from rdl.syntax.parser import parse_text
from tests.test_cli import (
    CLUSTER,
    EXAMPLES,
    REASON_CODES,
    assert_plan_ok,
    plan_json,
    rayon,
    reservations_of,
    with_deadline,
)

AGENT_NAMES = list(AGENTS)
EXAMPLE_FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".rdl", ".json"))
EXPECT_REJECTED = re.compile(r"expect:\s*rejected", re.I)


def expects_rejection(path: Path) -> bool:
    """Whether the file's leading comment lines say `expect: rejected`."""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            return False
        if EXPECT_REJECTED.search(stripped):
            return True
    return False


def ids(path: Path) -> str:
    return path.name


def test_there_are_examples() -> None:
    assert CLUSTER.exists()
    assert len(EXAMPLE_FILES) >= 5
    assert any(p.suffix == ".json" for p in EXAMPLE_FILES), "a YARN JSON example"


def test_the_whole_folder_checks() -> None:
    result = rayon("check", "--json", EXAMPLES)
    assert result.exit_code == 0, result.stdout
    document = json.loads(result.stdout)
    assert document["valid"] is True
    assert all(f["valid"] for f in document["files"])


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=ids)
def test_example_checks(path: Path) -> None:
    result = rayon("check", "--cluster", CLUSTER, path)
    assert result.exit_code == 0, result.stderr
    for reservation in reservations_of([path], load_cluster(CLUSTER)):
        assert reservation.name in result.stdout


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=ids)
def test_example_prints_back_to_the_same_tree(path: Path) -> None:
    original = reservations_of([path], load_cluster(CLUSTER))
    text = rayon("fmt", path)
    assert text.exit_code == 0, text.stderr
    assert parse_text(text.stdout, "<fmt>") == original
    as_json = rayon("fmt", "--json", path)
    assert as_json.exit_code == 0, as_json.stderr
    assert from_json(json.loads(as_json.stdout)) == original


@pytest.mark.parametrize("agent", AGENT_NAMES)
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=ids)
def test_example_plans_alone(path: Path, agent: str, tmp_path: Path) -> None:
    decisions = assert_plan_ok(plan_json(path, agent=agent), [path], agent=agent)
    for name, decision in decisions.items():
        if not expects_rejection(path):
            assert decision["accepted"], f"{name}: {decision.get('reason')}"
            continue
        assert decision["accepted"] is False, f"{name} is meant to be rejected"
        reason = decision["reason"]
        assert reason["code"] in REASON_CODES and reason["message"]
        if "earliest_deadline" in reason:  # the deadline offered works
            [reservation] = [r for r in reservations_of([path], load_cluster(CLUSTER)) if r.name == name]
            retry = tmp_path / f"{name}.rdl"
            retry.write_text(with_deadline(reservation, reason["earliest_deadline"]))
            again = assert_plan_ok(plan_json(retry, agent=agent), [retry], agent=agent)
            assert again[name]["accepted"], again[name]


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_examples_plan_together(agent: str) -> None:
    decisions = assert_plan_ok(plan_json(EXAMPLES, agent=agent), [EXAMPLES], agent=agent)
    rejected_by_design = {r.name for p in EXAMPLE_FILES if expects_rejection(p)
                          for r in reservations_of([p], load_cluster(CLUSTER))}
    for name, decision in decisions.items():
        assert decision["accepted"] is (name not in rejected_by_design), f"{name}: {decision.get('reason')}"
