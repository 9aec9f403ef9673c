"""Our YARN dialect against YARN's real ResourceManager (tests/peers/yarn/rm): the same requests, nothing unexplained.

The peer tier (`pytest -m peer`): it needs a JDK 17 and Maven (and, the first time, Maven Central), and skips
saying why when it cannot have them. `python -m tests.peers.yarn.conformance` prints the same comparison.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any as AnyType

import pytest

from tests.peers.yarn.conformance import DELIBERATE, SCRIPT, Difference, Step, conformance, exchanges
from tests.peers.yarn.oracle import Unavailable

pytestmark = pytest.mark.peer

Answers = list[tuple[Step, tuple[int, AnyType], tuple[int, AnyType]]]


@pytest.fixture(scope="module")
def answers() -> Iterator[Answers]:
    try:
        yield exchanges()
    except Unavailable as why:
        pytest.skip(f"the real YARN ResourceManager cannot run here: {why}")


def by_step(answers: Answers) -> dict[str, tuple[tuple[int, AnyType], tuple[int, AnyType]]]:
    return {step.name: (yarn, ours) for step, yarn, ours in answers}


def test_every_difference_from_the_real_rm_is_a_deliberate_one(answers: Answers) -> None:
    unexplained = [d.line() for d in conformance(answers) if not d.reason]
    assert not unexplained, "\n".join(unexplained)


def test_every_deliberate_difference_is_still_seen(answers: Answers) -> None:
    """A listed difference that no longer shows has been fixed: take it off the list (and docs/api.md)."""
    seen = {d.reason for d in conformance(answers) if d.reason}
    stale = [f"{key}: {reason}" for key, reason in DELIBERATE.items() if reason not in seen and reason != "the same"]
    assert not stale, "\n".join(stale)


def test_both_servers_answered_every_step_with_json(answers: Answers) -> None:
    assert len(answers) == len(SCRIPT)
    texts = [step.name for step, yarn, ours in answers if "<text>" in ours[1]]
    assert not texts, texts


def test_the_statuses_agree_on_the_main_path(answers: Answers) -> None:
    """The lifecycle a client walks (new, submit with every interpreter, list, update, delete) by status alone."""
    found = by_step(answers)
    main = ["cluster", "cluster info", "new int0", "submit int0", "submit int3", "submit R_ORDER",
            "submit several requests, no interpreter", "submit again, same definition", "list the queue",
            "list by id", "update to a smaller definition", "delete", "delete again"]
    assert {name: (found[name][0][0], found[name][1][0]) for name in main} == \
        {name: (found[name][0][0], found[name][0][0]) for name in main}


def test_a_difference_names_its_step_and_path() -> None:
    difference = Difference("list by id", "$.reservations[<id:int2>].user", "value", "alice", "bob")
    assert difference.line() == "list by id: value at $.reservations[<id:int2>].user: yarn alice, ours bob"
