"""GREE's latest-and-tallest search on the plan's free-capacity tree (planner/core/freetree.py), compiled.

`pack.latest(gang_room(free[:, lo:hi]), length, leases)` computes the room of every step of the window and then walks
it from the end; here the walk asks the tree instead: the leftmost step without room in a lease, the least room over
a lease, and, past a step without room, the last step before it with room. It reads the steps where the answer is,
not the window, and gives the same leases (tests/planner/agents/test_ontree.py).

A `TreeView` is the tree as one placer sees it: on the plan's step axis, or mirrored (step v is step steps-1-v, the
earliest-deadline search's reversed time).
"""

from __future__ import annotations

import numpy as np

from planner.agents.greedy.pack import flattest_of_tiles
from planner.agents.greedy.treecost import pieces
from planner.core.compile import AtomTask
from planner.core.freetree import FreeTree, cap
from planner.core.jit import inline_kernel, kernel
from planner.core.treekernels import (
    BLOCK,
    find_by,
    least_room_into,
    one_value,
    pull_above,
    room_at,
    room_test,
    take_from,
)

Blocks = tuple[np.ndarray, np.ndarray]
# Leases of this many steps and more: GREE-L's tiles from the tree (see TreeView.answers). Every lease, since a tile
# inside a block of one value costs the tree O(1) (measured: a week at 1 s, p99 3.4 ms against 4.0 ms at 128).
FLAT_FROM = 1


@inline_kernel
def _find(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int,
          demand: np.ndarray, gang: int, parallelism: int, bound: int, at_least: bool,
          from_right: bool) -> int:  # pragma: no cover
    """treekernels.find over [lo, hi) of the view's axis."""
    if hi <= lo:
        return -1
    least, fixed = room_test(demand, gang, parallelism, bound, at_least)
    return _find_by(free, mins, maxs, mirrored, lo, hi, least, fixed, at_least, from_right)


@inline_kernel
def _find_by(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int,
             least: np.ndarray, fixed: int, at_least: bool, from_right: bool) -> int:  # pragma: no cover
    """treekernels.find_by over [lo, hi) of the view's axis."""
    if not mirrored:
        return find_by(free, mins, maxs, lo, hi, least, fixed, at_least, from_right)
    steps = free.shape[1]
    found = find_by(free, mins, maxs, steps - hi, steps - lo, least, fixed, at_least, not from_right)
    return -1 if found < 0 else steps - 1 - found


@inline_kernel
def _least(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int,
           demand: np.ndarray, gang: int, parallelism: int, scratch: np.ndarray) -> int:  # pragma: no cover
    """treekernels.least_room over [lo, hi) of the view's axis, its minima in `scratch`."""
    steps = free.shape[1]
    if mirrored:
        lo, hi = steps - hi, steps - lo
    return least_room_into(free, mins, maxs, lo, hi, demand, gang, parallelism, scratch)


@inline_kernel
def _room(free: np.ndarray, mirrored: bool, t: int, demand: np.ndarray, gang: int,
          parallelism: int) -> int:  # pragma: no cover
    return room_at(free[:, free.shape[1] - 1 - t if mirrored else t], demand, gang, parallelism)


@kernel
def tree_latest(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int,
                length: int, leases: int, demand: np.ndarray, gang: int, parallelism: int,
                starts: np.ndarray, counts: np.ndarray) -> int:  # pragma: no cover
    """compiled.latest_kernel over the room of [lo, hi), asking the tree; the blocks written (offsets from lo) or -1.

    The leases already laid lower what is left: each began above the current start and covers every step from its
    start to past the current lease's end, so within a lease they weigh on its last steps only, constant between two
    of their starts. Those pieces are the room there against what the leases laid hold. A piece between two laid
    starts keeps its least room, and every lease laid after it (lower) adds the same to what it holds: so its room
    left, offset by the gangs laid before it, is fixed, and a queue of those keeps their least as the lease slides
    down (a sliding-window minimum). Each start then asks the tree twice: the steps below the lowest laid start, and
    the highest piece, cut at the lease's end. A lease no laid one reaches into (most starts of a walk through a
    full plan) asks first for a step without room, and for its least room only when it has none.
    """
    size = starts.shape[0]
    before = np.zeros(size + 1, dtype=np.int64)  # gangs laid before lease i: `before[i]`
    keys = np.empty(size, dtype=np.int64)  # piece i = [start i, start i - 1): its least room + before[i]
    queue = np.empty(size, dtype=np.int64)  # pieces in the lease, keys rising
    head, tail, written, first, remaining = 0, 0, 0, 0, leases
    none_least, none_fixed = room_test(demand, gang, parallelism, 0, False)  # a step without room
    some_least, some_fixed = room_test(demand, gang, parallelism, 1, True)  # a step with room
    scratch = np.empty(free.shape[0])  # each least room's minima
    start = hi - length
    while start >= lo:
        end = start + length
        while first < written and starts[first] + lo >= end:  # the leases laid that reach into [start, end)
            first += 1
        while head < tail and queue[head] <= first:  # the highest piece is cut at the end: asked on its own
            head += 1
        total = before[written]
        blocked, below = -1, -1  # `below`: the least room of [start, the lowest laid start), once asked
        if written == first:  # no laid lease reaches into this one: one question finds a step without room, if any
            blocked = _find_by(free, mins, maxs, mirrored, start, end, none_least, none_fixed, False, False)
            fit = 0 if blocked >= 0 else _least(free, mins, maxs, mirrored, start, end, demand, gang, parallelism,
                                                scratch)
        else:
            below = _least(free, mins, maxs, mirrored, start, starts[written - 1] + lo, demand, gang, parallelism,
                          scratch)
            fit = below
            top = _least(free, mins, maxs, mirrored, starts[first] + lo, end, demand, gang, parallelism, scratch)
            fit = min(fit, top - (total - before[first]))
            if head < tail:
                fit = min(fit, keys[queue[head]] - total)
        if fit <= 0:
            # A step in the lease has no room left: every start whose lease reaches a step between the last one
            # with room left below the leftmost such step and that step has no fit. Go straight below them.
            if blocked < 0:
                blocked = _leftmost_blocked(free, mins, maxs, mirrored, lo, start, end, demand, gang, parallelism,
                                            starts, before, first, written)
            if first == written:
                found = _find_by(free, mins, maxs, mirrored, lo, blocked, some_least, some_fixed, True, True)
            else:
                found = _last_with_room(free, mins, maxs, mirrored, lo, blocked, demand, gang, parallelism,
                                        starts, counts, first, written)
            if found < 0:
                return -1
            start = found - length + 1
            continue
        take = fit if fit < remaining else remaining
        starts[written] = start - lo
        counts[written] = take
        if written > 0:  # the piece from this start to the one above it
            if below < 0:
                below = _least(free, mins, maxs, mirrored, start, starts[written - 1] + lo, demand, gang, parallelism,
                          scratch)
            key = below + before[written]
            while tail > head and keys[queue[tail - 1]] >= key:
                tail -= 1
            keys[written] = key
            queue[tail] = written
            tail += 1
        before[written + 1] = total + take
        written += 1
        remaining -= take
        if remaining == 0:
            return written
        start -= 1
    return -1


@kernel
def _leftmost_blocked(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, start: int,
                      end: int, demand: np.ndarray, gang: int, parallelism: int, starts: np.ndarray,
                      before: np.ndarray, first: int, written: int) -> int:  # pragma: no cover
    """The leftmost step of [start, end) whose room is at most what the laid leases `first`..`written` - 1 hold
    there (piece by piece from the left), or -1."""
    piece_lo = start
    for index in range(written, first - 1, -1):
        piece_hi = starts[index - 1] + lo if index > first else end
        if piece_hi > piece_lo:
            held = before[written] - before[index]
            blocked = _find(free, mins, maxs, mirrored, piece_lo, piece_hi, demand, gang, parallelism, held,
                            False, False)
            if blocked >= 0:
                return blocked
        piece_lo = piece_hi
    return -1


@kernel
def _last_with_room(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, below: int,
                    demand: np.ndarray, gang: int, parallelism: int, starts: np.ndarray, counts: np.ndarray,
                    first: int, written: int) -> int:  # pragma: no cover
    """The last step of [lo, below) with room left after the laid leases `first`..`written` - 1, or -1."""
    held = 0
    for index in range(first, written):
        held += counts[index]
    piece_hi = below
    for index in range(first, written + 1):  # pieces from the right: the highest laid start's first
        piece_lo = starts[index] + lo if index < written else lo
        if piece_lo < piece_hi:
            found = _find(free, mins, maxs, mirrored, piece_lo, piece_hi, demand, gang, parallelism, held + 1,
                          True, True)
            if found >= 0:
                return found
            piece_hi = piece_lo
        if index < written:
            held -= counts[index]
    return -1


@kernel
def tree_open_starts(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int,
                     length: int, demand: np.ndarray, gang: int, parallelism: int,
                     out: np.ndarray) -> int:  # pragma: no cover
    """pack.open_starts over the room of [lo, hi): the latest starts whose lease has a gang's room at every step,
    latest first, as many as `out` holds; how many it wrote. Past a step without room, the next start tried is
    the one whose lease ends at the last step with room before it (tree_latest's jump: a stretch without room is
    crossed in one question, not a step at a time)."""
    none_least, none_fixed = room_test(demand, gang, parallelism, 0, False)
    some_least, some_fixed = room_test(demand, gang, parallelism, 1, True)
    found, start = 0, hi - length
    while start >= lo and found < out.shape[0]:
        blocked = _find_by(free, mins, maxs, mirrored, start, start + length, none_least, none_fixed, False, False)
        if blocked >= 0:
            before = _find_by(free, mins, maxs, mirrored, lo, blocked, some_least, some_fixed, True, True)
            if before < 0:
                break
            start = before - length + 1
            continue
        out[found] = start
        found += 1
        start -= 1
    return found


@kernel
def tree_lay(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, starts: np.ndarray,
             gangs: np.ndarray, length: int, gang: int, signed: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Placer.apply on the tree: free -= signed demand x bundles held per step (the same float operations as the
    placer's np.outer), then the tree over the steps written; the runs written, [lo, hi) rows on the plan's axis.

    It walks the leases' starts and ends in order and writes only where the placement holds something: a placement
    spread thin over a long span costs its leases' steps, not the span (the placer's zero rows change nothing)."""
    los, his, held = pieces(starts, gangs, length)
    runs = np.empty((los.shape[0], 2), dtype=np.int64)
    amounts = np.empty(free.shape[0])
    steps, written = free.shape[1], 0
    for k in range(los.shape[0]):
        here, there, bundles = los[k], his[k], float(held[k] * gang)
        for r in range(free.shape[0]):
            amounts[r] = signed[r] * bundles
        take_from(free, mins, maxs, steps - there if mirrored else here, steps - here if mirrored else there, amounts)
        if written > 0 and runs[written - 1, 1] == here:
            runs[written - 1, 1] = there
        else:
            runs[written, 0], runs[written, 1] = here, there
            written += 1
    out = runs[:written].copy()
    for k in range(written):
        lo, hi = out[k, 0], out[k, 1]
        if mirrored:
            lo, hi = steps - hi, steps - lo
            out[k, 0], out[k, 1] = lo, hi
        pull_above(mins, maxs, lo, hi)
    return out


@kernel
def tree_tiles(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, mirrored: bool, lo: int, hi: int, length: int,
               demand: np.ndarray, gang: int, parallelism: int, enough: int) -> np.ndarray:  # pragma: no cover
    """pack.tile_room over the room of [lo, hi): each lease-length tile's least room, tile 0 the last; only the
    last ones, once `enough` of them have room (0: all).

    Flattest (pack.flattest_of_tiles) with that many leases then stops at the lowest level, one a tile, and keeps the
    latest tiles with room: the tiles before them take nothing, so they are not asked (a probe's window of days at
    one-second steps holds thousands of tiles; its few hundred leases fill the last few hundred). Each tile is read
    block by block: the blocks inside it from their leaves, the block at either end from its leaf if the tile
    covers it or it holds one value, else step by step; a window is read at most once a block, however long its
    leases. The reading is written out here, in the loop over tiles, rather than done by treekernels.least_free_into
    (the same minima): a kernel called per tile cost as much again (tiles of a minute over five days of a loaded week
    at one-second steps: 1.25 -> 0.44 ms), and least_free_into, though compiled in, reads a part of a block step by
    step across the resources, 0.8-1.2 ms there (it is faster on tiles of many blocks, which it climbs the tree for:
    half an hour, 0.10 -> 0.03 ms; short tiles are the ones a probe has thousands of)."""
    tiles = (hi - lo) // length
    out = np.empty(tiles, dtype=np.int64)
    least = np.empty(free.shape[0])
    steps, size, resources = free.shape[1], mins.shape[1] // 2, free.shape[0]
    with_room = 0
    for tile in range(tiles):
        if enough > 0 and with_room >= enough:
            return out[:tile]
        a, b = hi - (tile + 1) * length, hi - tile * length
        if mirrored:
            a, b = steps - b, steps - a
        head, tail = a // BLOCK, (b - 1) // BLOCK
        for r in range(resources):
            least[r] = np.inf
        for block in (head, tail):
            leaf = size + block
            start, end = max(a, block * BLOCK), min(b, (block + 1) * BLOCK)
            if (start == block * BLOCK and end == min((block + 1) * BLOCK, steps)) or one_value(mins, maxs, leaf):
                for r in range(resources):
                    least[r] = min(least[r], mins[r, leaf])
            else:
                for r in range(resources):
                    value = least[r]
                    for step in range(start, end):
                        value = min(value, free[r, step])
                    least[r] = value
            if head == tail:
                break
        for block in range(head + 1, tail):
            for r in range(resources):
                least[r] = min(least[r], mins[r, size + block])
        out[tile] = room_at(least, demand, gang, parallelism)
        with_room += out[tile] > 0
    return out


class TreeView:
    """The plan's free-capacity tree as one placer sees it: its axis, or the mirrored one."""

    def __init__(self, tree: FreeTree, mirrored: bool = False):
        self.tree, self.mirrored = tree, mirrored
        self.free = tree.free[:, ::-1] if mirrored else tree.free  # the placer's scratch: a view, not a copy

    def touched(self, lo: int, hi: int) -> None:
        """Steps [lo, hi) of the view were written in place."""
        steps = self.tree.steps
        self.tree.touched(*((steps - hi, steps - lo) if self.mirrored else (lo, hi)))

    def lay(self, starts: np.ndarray, gangs: np.ndarray, task: AtomTask, sign: int) -> None:
        """Lay one atom's placement on the view (take it back with sign -1), on the view's axis."""
        tree = self.tree
        runs = tree_lay(tree.free, tree.mins, tree.maxs, self.mirrored, starts, gangs, task.length, task.gang,
                        task.demand * sign)
        tree.written(runs)

    def answers(self, spread: bool, length: int) -> bool:
        """Whether the tree answers this search: GREE's always; GREE-L's flat one for leases of FLAT_FROM steps and
        more (shorter ones read the window)."""
        return not spread or length >= FLAT_FROM

    def blocks(self, spread: bool, task: AtomTask, lo: int, hi: int) -> Blocks | None:
        """The atom's leases inside [lo, hi), flattest or latest (pack.flattest, pack.latest), or None; the same
        question on the same tree is answered once (FreeTree.answer), each caller given its own arrays."""
        key = (self.mirrored, spread, lo, hi, task.length, task.leases, task.demand.tobytes(), task.gang,
               task.parallelism)
        found = self.tree.answer(key, lambda: self._blocks(spread, task, lo, hi))
        return None if found is None else (found[0].copy(), found[1].copy())

    def _blocks(self, spread: bool, task: AtomTask, lo: int, hi: int) -> Blocks | None:
        demand, gang, parallelism = task.demand, task.gang, task.parallelism
        if not spread:
            return self.latest(demand, gang, parallelism, lo, hi, task.length, task.leases)
        tree = self.tree
        tiles = tree_tiles(tree.free, tree.mins, tree.maxs, self.mirrored, lo, hi, task.length, demand, gang,
                           cap(parallelism), task.leases)
        return flattest_of_tiles(tiles, hi - lo, task.length, task.leases)

    def open_starts(self, task: AtomTask, lo: int, hi: int, count: int) -> np.ndarray:
        """pack.open_starts over the room of [lo, hi), as steps of the view (not offsets)."""
        out = np.empty(max(0, count), dtype=np.int64)
        tree = self.tree
        written = tree_open_starts(tree.free, tree.mins, tree.maxs, self.mirrored, lo, hi, task.length, task.demand,
                                   task.gang, cap(task.parallelism), out)
        return out[:written]

    def latest(self, demand: np.ndarray, gang: int, parallelism: int | None, lo: int, hi: int, length: int,
               leases: int) -> Blocks | None:
        """pack.latest over the room of [lo, hi): lease start offsets from lo and gangs at each, or None."""
        size = max(0, min(leases, hi - lo - length + 1))
        starts, counts = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        tree = self.tree
        written = tree_latest(tree.free, tree.mins, tree.maxs, self.mirrored, lo, hi, length, leases, demand, gang,
                              cap(parallelism), starts, counts)
        return None if written < 0 else (starts[:written], counts[:written])
