"""Group commit: callers hand in work one item each; one of them at a time runs every item waiting as one batch.

A decision is committed before it is answered, and a commit is a flush to disk: one per decision caps a
store at the disk's flushes per second. Here the first caller to arrive leads: it takes every item
waiting, runs them as one batch (one transaction, one flush) and hands each caller its own outcome,
while the items that arrive meanwhile wait for the next leader. Nobody waits for a batch to fill: a
lone caller is a batch of one, and batches grow only when callers already queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

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


@dataclass
class Batches(Generic[Item, Outcome]):
    """Runs items in batches through `run`, which returns one outcome or exception per item, in order (an
    exception raised by `run` itself is every item's); `sizes` counts the batches run, by size.

    Each waiting caller sleeps on its own event and is woken once, with its outcome or to lead: a batch's end
    wakes its own callers and the next leader, not every caller waiting."""

    run: Callable[[Sequence[Item]], Sequence[Outcome | BaseException]]
    sizes: dict[int, int] = field(default_factory=dict)
    on_batch: Callable[[int], None] | None = None  # told each batch's size as it starts
    _waiting: list[_Slot[Item, Outcome]] = field(default_factory=list)
    _leading: bool = False
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, item: Item) -> Outcome:
        """Run `item` in the next batch and return its outcome (or raise its exception)."""
        slot: _Slot[Item, Outcome] = _Slot(item)
        with self._guard:
            self._waiting.append(slot)
            leads, self._leading = not self._leading, True
        if not leads:
            slot.woken.wait()  # a batch ran it, or the batch before it ended and it leads the next one
        if not slot.done:
            self._lead()
        if slot.error is not None:
            raise slot.error
        return slot.outcome  # type: ignore[return-value]  # set with done, unless an error was

    def _lead(self) -> None:
        """Run every item waiting as one batch (the leader's own among them), then hand the lead on."""
        with self._guard:
            batch, self._waiting = self._waiting, []
        try:
            self._run(batch)
        finally:
            with self._guard:
                if self._waiting:
                    self._waiting[0].woken.set()  # not done: it leads next
                else:
                    self._leading = False

    def _run(self, batch: list[_Slot[Item, Outcome]]) -> None:
        """Run one batch and give each slot its outcome; nothing escapes, so every waiting caller is answered."""
        self.sizes[len(batch)] = self.sizes.get(len(batch), 0) + 1
        try:
            if self.on_batch is not None:
                self.on_batch(len(batch))
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
            slot.woken.set()
