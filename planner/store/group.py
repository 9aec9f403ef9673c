"""Group commit: callers hand in work one item each; one of them at a time runs every item waiting as one batch.

A decision is committed before it is answered, and a commit is a flush to disk: one per decision caps a
store at the disk's flushes per second. Here the first caller to arrive leads: it takes every item
waiting, runs them as one batch (one transaction, one flush) and hands each caller its own outcome,
while the items that arrive meanwhile wait for the next leader. Nobody waits for a batch to fill: a
lone caller is a batch of one, and batches grow only when callers already queue.

A caller on an event loop (`run_async`) cannot lead, as that would block its loop: when its item is first in
line, the batches' own runner thread leads instead, and the caller's coroutine is resumed on its loop when its
outcome is there. The HTTP server submits that way, so a submission costs no worker thread of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

RUNNER_IDLE = 2.0  # seconds the runner thread waits for a batch to lead before it ends

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


@dataclass
class _Slot(Generic[Item, Outcome]):
    """One caller's item, its outcome once a batch has run it, and the event that wakes its caller: when the
    outcome is there, or when its turn to lead the next batch has come."""

    item: Item
    done: bool = False
    outcome: Outcome | None = None
    error: BaseException | None = None
    woken: threading.Event = field(default_factory=threading.Event)
    wake: Callable[[], None] | None = None  # an async caller's: called once its outcome is there (not to lead)

    def result(self) -> Outcome:
        """The outcome, or raise the error the batch gave this item."""
        if self.error is not None:
            raise self.error
        return self.outcome  # type: ignore[return-value]  # set with done, unless an error was

    def settle(self) -> None:
        """Tell the caller its outcome is there."""
        if self.wake is None:
            self.woken.set()
        else:
            self.wake()


@dataclass
class Batches(Generic[Item, Outcome]):
    """Runs items in batches through `run`, which returns one outcome or exception per item, in order (an
    exception raised by `run` itself is every item's); `sizes` counts the batches run, by size.

    Each waiting caller sleeps on its own event and is woken once, with its outcome or to lead: a batch's end
    wakes its own callers and the next leader, not every caller waiting."""

    run: Callable[[Sequence[Item]], Sequence[Outcome | BaseException]]
    sizes: dict[int, int] = field(default_factory=dict)
    _waiting: list[_Slot[Item, Outcome]] = field(default_factory=list)
    _leading: bool = False
    _guard: threading.Lock = field(default_factory=threading.Lock)
    _runner: threading.Thread | None = None
    _runner_wanted: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def __call__(self, item: Item) -> Outcome:
        """Run `item` in the next batch and return its outcome (or raise its exception)."""
        slot: _Slot[Item, Outcome] = _Slot(item)
        if not self._enqueue(slot):
            slot.woken.wait()  # a batch ran it, or the batch before it ended and it leads the next one
        if not slot.done:
            self._lead()
        return slot.result()

    def run_many(self, items: Sequence[Item]) -> list[Outcome | BaseException]:
        """Run `items` together, in order, in the next batch (with whatever else is waiting): each one's outcome,
        or the exception that refused it (returned, not raised). A batch another process forwarded comes here."""
        slots: list[_Slot[Item, Outcome]] = [_Slot(item) for item in items]
        if not slots:
            return []
        with self._guard:
            self._waiting.extend(slots)  # together: the batch that takes the first takes them all
            leads, self._leading = not self._leading, True
        if not leads:
            slots[0].woken.wait()  # a batch ran them, or the batch before ended and this caller leads the next
        if not slots[0].done:
            self._lead()
        return [slot.error if slot.error is not None else slot.outcome for slot in slots]  # type: ignore[misc]

    async def run_async(self, item: Item) -> Outcome:
        """`self(item)` for a coroutine: the same batches, led by the runner thread when this item is first."""
        loop = asyncio.get_running_loop()
        arrived = loop.create_future()

        def arrive() -> None:
            if not arrived.done():
                arrived.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody is left to answer
                loop.call_soon_threadsafe(arrive)

        slot: _Slot[Item, Outcome] = _Slot(item, wake=wake)
        if self._enqueue(slot):
            self._hand_to_runner()
        await asyncio.shield(arrived)  # cancelled or not, the batch it is in runs to its end
        return slot.result()

    def _enqueue(self, slot: _Slot[Item, Outcome]) -> bool:
        """Queue `slot`; whether its caller (or the runner, for an async one) must lead the next batch."""
        with self._guard:
            self._waiting.append(slot)
            leads, self._leading = not self._leading, True
        return leads

    def _lead(self) -> None:
        """Run every item waiting as one batch (the leader's own among them), then hand the lead on."""
        with self._guard:
            batch, self._waiting = self._waiting, []
        try:
            self._run(batch)
        finally:
            with self._guard:
                first = self._waiting[0] if self._waiting else None
                if first is None:
                    self._leading = False
            if first is not None and first.wake is None:
                first.woken.set()  # not done: it leads next
            elif first is not None:
                self._hand_to_runner()  # an async caller's item: the runner leads for it

    def _hand_to_runner(self) -> None:
        """Have the runner thread lead the next batch (started when there is none: it ends after RUNNER_IDLE
        seconds with nothing to lead, so an idle store holds no thread)."""
        with self._guard:
            if self._runner is None:
                self._runner = threading.Thread(target=self._runner_loop, name="rayon-batches", daemon=True)
                self._runner.start()
            self._runner_wanted.release()

    def _runner_loop(self) -> None:
        while True:
            if not self._runner_wanted.acquire(timeout=RUNNER_IDLE):
                with self._guard:  # a hand-off releases inside the guard: none is missed between these two
                    if not self._runner_wanted.acquire(blocking=False):
                        self._runner = None
                        return
            self._lead()

    def _run(self, batch: list[_Slot[Item, Outcome]]) -> None:
        """Run one batch and give each slot its outcome; nothing escapes, so every waiting caller is answered."""
        self.sizes[len(batch)] = self.sizes.get(len(batch), 0) + 1
        try:
            outcomes: Sequence[Outcome | BaseException] = self.run([slot.item for slot in batch])
        except BaseException as error:  # handed to every caller of the batch, who raises it
            outcomes = [error] * len(batch)
        if len(outcomes) != len(batch):
            outcomes = [RuntimeError(f"a batch of {len(batch)} gave {len(outcomes)} outcomes")] * len(batch)
        for slot, outcome in zip(batch, outcomes, strict=True):  # the lengths were checked: nothing escapes
            if isinstance(outcome, BaseException):
                slot.error = outcome
            else:
                slot.outcome = outcome
            slot.done = True
            slot.settle()
