"""A ranked set: items kept best-first by a key, re-ranked in O(log n) when one item's key changes.

Every ordering in the scheduler (children of a parent queue, applications of a leaf, nodes) is one of
these. Re-ranking pushes a fresh entry and leaves the old one to be dropped when it surfaces (lazy
deletion), so a change costs one heap push, and a full rebuild happens only when an input shared by
every key changes (a queue's guarantee, the cluster's capacity).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Ranked(Generic[T]):
    """Items ranked by `key` (smallest first, ties by `ident`); `alive` items only are offered."""

    __slots__ = ("_alive", "_dirty", "_heap", "_ident", "_items", "_key", "_parked", "_stamp", "_version")

    def __init__(self, key: Callable[[T], Any], ident: Callable[[T], str],
                 alive: Callable[[T], bool] = lambda item: True) -> None:
        self._key = key
        self._ident = ident
        self._alive = alive
        self._heap: list[tuple[Any, str, int]] = []
        self._items: dict[str, T] = {}
        self._version: dict[str, int] = {}  # each item's live entry; a stamp is never reused, so old entries stay stale
        self._stamp = 0
        self._parked: list[tuple[Any, str, int]] = []  # heap entries `first` set aside, pushed back by `unpark`
        self._dirty = False

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item: T) -> bool:
        return self._ident(item) in self._items

    def items(self) -> list[T]:
        """Every held item, in no particular order."""
        return list(self._items.values())

    def put(self, item: T) -> None:
        """Add `item`, or re-rank it after its key or liveness changed."""
        name = self._ident(item)
        self._items[name] = item
        self._stamp = version = self._stamp + 1
        self._version[name] = version
        if not self._dirty:
            heapq.heappush(self._heap, (self._key(item), name, version))
            if len(self._heap) > 2 * len(self._items) + 64:
                self._compact()

    def discard(self, item: T) -> None:
        """Remove `item` if held."""
        name = self._ident(item)
        self._items.pop(name, None)
        self._version.pop(name, None)

    def invalidate(self) -> None:
        """Every key may have changed: rebuild before the next look."""
        self._dirty = True

    def first(self, accept: Callable[[T], bool] | None = None) -> T | None:
        """The best alive item that `accept` takes; items it refuses are parked until `unpark`."""
        if self._dirty:
            self._rebuild()
        heap = self._heap
        while heap:
            _, name, version = heap[0]
            if self._version.get(name) != version:
                heapq.heappop(heap)
                continue
            item = self._items[name]
            if not self._alive(item):
                heapq.heappop(heap)  # put() brings it back when it comes alive again
                continue
            if accept is not None and not accept(item):
                self._parked.append(heapq.heappop(heap))
                continue
            return item
        return None

    def ordered(self) -> list[T]:
        """Every alive item, best first (for inspection and tests; O(n log n))."""
        if self._dirty:
            self._rebuild()
        live = [(self._key(item), name) for name, item in self._items.items() if self._alive(item)]
        return [self._items[name] for _, name in sorted(live)]

    def unpark(self) -> None:
        """Put back every item `first` parked (its entry as it was, unless the item was put or discarded since)."""
        parked, self._parked = self._parked, []
        version = self._version
        heap = self._heap
        for entry in parked:
            if version.get(entry[1]) == entry[2]:
                heapq.heappush(heap, entry)

    def rebuild(self, items: Iterable[T] | None = None) -> None:
        """Re-rank everything now (optionally replacing the held items)."""
        if items is not None:
            self._items = {self._ident(item): item for item in items}
            self._version = {}
        self._rebuild()

    def _compact(self) -> None:
        """Drop stale entries (parked entries are not in the heap, so they stay parked)."""
        version = self._version
        self._heap = [entry for entry in self._heap if version.get(entry[1]) == entry[2]]
        heapq.heapify(self._heap)

    def _rebuild(self) -> None:
        self._dirty = False
        self._parked.clear()
        entries = []
        for name, item in self._items.items():
            self._stamp = version = self._stamp + 1
            self._version[name] = version
            entries.append((self._key(item), name, version))
        heapq.heapify(entries)
        self._heap = entries
