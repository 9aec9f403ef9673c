"""Group commit's batching (planner/store/group.py): each caller, on a thread or an event loop, gets its own outcome;
none is lost or hangs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from planner.store import group
from planner.store.group import Batches


class HeldFirst:
    """A batch's run that holds the batch with item 0 until released (so others queue behind it), seeing each
    batch; odd items fail, even ones give ten times themselves."""

    def __init__(self) -> None:
        self.running, self.release = threading.Event(), threading.Event()
        self.seen: list[list[int]] = []

    def __call__(self, items: Sequence[int]) -> list[int | BaseException]:
        self.seen.append(list(items))
        if items[0] == 0:
            self.running.set()
            assert self.release.wait(30)
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


def test_each_caller_gets_its_own_outcome_or_error_and_batches_form_while_one_runs() -> None:
    run = HeldFirst()
    running, release, seen = run.running, run.release, run.seen
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


def fails_on_boom(items: Sequence[str]) -> list[str | BaseException]:
    """A batch's run that fails whole when `boom` is in it."""
    if "boom" in items:
        raise RuntimeError("the transaction failed")
    return [item.upper() for item in items]


def test_a_batch_that_fails_whole_fails_every_caller_and_the_next_one_runs() -> None:
    batches: Batches[str, str] = Batches(fails_on_boom)
    with pytest.raises(RuntimeError, match="the transaction failed"):
        batches("boom")
    assert batches("fine") == "FINE"


def test_a_run_that_answers_the_wrong_number_of_outcomes_is_an_error_for_each() -> None:
    batches: Batches[int, int] = Batches(lambda items: [])
    with pytest.raises(RuntimeError, match="a batch of 1 gave 0 outcomes"):
        batches(1)


# -- callers on an event loop ----------------------------------------------------------------------------------------


def test_async_callers_are_batched_by_the_runner_thread_beside_thread_callers() -> None:
    running, release = threading.Event(), threading.Event()
    threads_seen: list[str] = []

    def run(items: Sequence[int]) -> list[int | BaseException]:
        threads_seen.append(threading.current_thread().name)
        if items[0] == 0:
            running.set()
            assert release.wait(30)
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]

    batches: Batches[int, int] = Batches(run)

    async def one(i: int) -> object:
        try:
            return await batches.run_async(i)
        except ValueError as error:
            return str(error)

    async def many() -> list[object]:
        first = asyncio.ensure_future(one(0))
        await asyncio.get_running_loop().run_in_executor(None, running.wait, 30)
        rest = [asyncio.ensure_future(one(i)) for i in range(1, 6)]
        while len(batches._waiting) < 5:  # the coroutines queue first: the next batch is theirs to hand over
            await asyncio.sleep(0.005)
        by_thread = asyncio.get_running_loop().run_in_executor(None, batches, 6)  # a thread caller among them
        while len(batches._waiting) < 6:
            await asyncio.sleep(0.005)
        release.set()
        return [*(await asyncio.gather(first, *rest)), await by_thread]

    assert asyncio.run(many()) == [0, "odd 1", 20, "odd 3", 40, "odd 5", 60]
    assert batches.sizes == {1: 1, 6: 1}
    assert threads_seen == ["rayon-batches", "rayon-batches"]  # no coroutine's loop ever ran a batch


def test_a_failed_batch_reaches_its_async_callers_and_the_idle_runner_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group, "RUNNER_IDLE", 0.05)
    batches: Batches[str, str] = Batches(fails_on_boom)
    with pytest.raises(RuntimeError, match="the transaction failed"):
        asyncio.run(batches.run_async("boom"))
    assert asyncio.run(batches.run_async("fine")) == "FINE"
    runner = batches._runner
    assert runner is not None
    runner.join(5)
    assert not runner.is_alive() and batches._runner is None  # idle: no thread left behind
    assert asyncio.run(batches.run_async("again")) == "AGAIN"  # a new runner starts when one is needed


def test_items_run_together_join_the_next_batch_whole_and_get_their_outcomes_back() -> None:
    run = HeldFirst()
    running, release, seen = run.running, run.release, run.seen
    batches: Batches[int, int] = Batches(run)
    first = threading.Thread(target=batches, args=(0,))
    first.start()
    assert running.wait(30)
    got: list[object] = []
    many = threading.Thread(target=lambda: got.extend(batches.run_many([1, 2, 4])))
    many.start()
    while len(batches._waiting) < 3:
        threading.Event().wait(0.005)
    release.set()
    for thread in (first, many):
        thread.join(30)
    assert [str(x) if isinstance(x, ValueError) else x for x in got] == ["odd 1", 20, 40]
    assert seen == [[0], [1, 2, 4]] and batches.run_many([]) == []
