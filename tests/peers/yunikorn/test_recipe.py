"""docs/yunikorn.md's base configuration (placement rules routing labelled pods into root.plan.NAME), with the
follower's documents in it, as yunikorn-core's own validation judges it on the oldest and newest release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from follower.follow import yunikorn
from follower.follow.follower import Follower
from tests.follower.fakes import minute, plan_of
from tests.peers.yunikorn.validator import NEWEST, OLDEST, PeerUnavailable, validate

pytestmark = pytest.mark.peer
PAGE = Path(__file__).resolve().parents[3] / "docs" / "yunikorn.md"


def recipe_base() -> str:
    """The page's first `text` block: the base configuration."""
    match = re.search(r"```text\n(partitions:.*?)```", PAGE.read_text(), re.S)
    assert match is not None, "docs/yunikorn.md has no base configuration"
    return match.group(1)


@pytest.mark.parametrize("core", (OLDEST, NEWEST))
def test_the_recipe_s_base_and_every_document_written_into_it_are_valid(core: str) -> None:
    base = recipe_base()
    # `team.etl` before its first lease (the closed max), holding 5 bundles, then gone; `b` throughout.
    rounds = Follower().rounds(plan_of(("team.etl", 5, 30, [(10, 20, 5)]), ("b", 0, 60, [(0, 60, 3)])),
                               minute(0), minute(40))
    stream = yunikorn.render(rounds, minute(40), yunikorn.load_base(base, "docs/yunikorn.md"))
    assert "name: team_dot_etl" in stream and "max: {memory: 1, vcore: 0, pods: 0}" in stream
    try:
        verdicts = validate("---\n".join([base, stream]), core)
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    assert len(verdicts) == 1 + stream.count("---\n") + 1
    assert all(v.valid for v in verdicts), [v.error for v in verdicts if not v.valid]
