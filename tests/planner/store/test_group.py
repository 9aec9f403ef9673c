"""Group commit's batching (planner/store/group.py): each caller gets its own outcome, none is lost or hangs."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from planner.store.group import Batches


def test_each_caller_gets_its_own_outcome_or_error_and_batches_form_while_one_runs() -> None:
    running, release = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def run(items: Sequence[int]) -> list[int | BaseException]:
        seen.append(list(items))
        if items[0] == 0:
            running.set()
            assert release.wait(30)
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]

    batches: Batches[int, int] = Batches(run)
    answers: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            answers[i] = batches(i)
        except ValueError as error:
            answers[i] = str(error)

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert running.wait(30)
    others = [threading.Thread(target=call, args=(i,)) for i in range(1, 7)]
    for thread in others:
        thread.start()
    while len(batches._waiting) < 6:
        threading.Event().wait(0.005)
    release.set()
    for thread in [first, *others]:
        thread.join(30)
    assert answers == {0: 0, 1: "odd 1", 2: 20, 3: "odd 3", 4: 40, 5: "odd 5", 6: 60}
    assert seen[0] == [0] and sorted(seen[1]) == [1, 2, 3, 4, 5, 6] and batches.sizes == {1: 1, 6: 1}


def test_a_batch_that_fails_whole_fails_every_caller_and_the_next_one_runs() -> None:
    def run(items: Sequence[str]) -> list[str | BaseException]:
        if "boom" in items:
            raise RuntimeError("the transaction failed")
        return [item.upper() for item in items]

    batches: Batches[str, str] = Batches(run)
    with pytest.raises(RuntimeError, match="the transaction failed"):
        batches("boom")
    assert batches("fine") == "FINE"


def test_a_run_that_answers_the_wrong_number_of_outcomes_is_an_error_for_each() -> None:
    batches: Batches[int, int] = Batches(lambda items: [])
    with pytest.raises(RuntimeError, match="a batch of 1 gave 0 outcomes"):
        batches(1)
