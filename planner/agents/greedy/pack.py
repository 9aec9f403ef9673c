"""Vectorised kernels that lay one atom's leases over free capacity.

`room` is the number of gangs that fit at each step of a window. A placement is a list
of `(offset, gangs)` blocks, each `gangs` leases starting at `offset` and held for the
lease length. The fast paths tile the window from its end in lease-length blocks
(what "tallest, rightmost" and "flattest" mean on a step grid); the exact path
slides lease by lease and is used only when tiling cannot find room that exists. On windows of
`COMPILED_FROM` steps and more, and on every window once those have loaded the compiler (`compiled_for`), room, the
exact path and the flattest level run compiled.
"""

from __future__ import annotations

import sys

import numpy as np

EPSILON = 1e-9
# Windows of this many steps and more go to the compiled kernels (planner/agents/greedy/compiled.py) and load them;
# shorter ones stay in numpy until something has. Loading numba costs a process about a quarter to half a second
# once, but any request without a deadline (a window to the horizon) already pays it at minute steps; from an hour
# of minute steps on, the compiled room and latest cut GREE's decisions by a third (measured: benchmarks/admission.py
# --sweep).
COMPILED_FROM = 64
# Once loaded, windows from this many steps on run compiled too: the kernels decide the same as numpy to the bit
# (tests/planner/agents/test_compiled.py) and cost a fifth to a tenth of its time at every length (2 us against 13
# for a window's room, 3 against 10-27 for the latest leases), so only a process that never needs them keeps numpy
# (a command line's one short request). Stages of minutes in windows of an hour or two are most of what it saves.
LOADED_FROM = 1
_KERNELS = "planner.agents.greedy.compiled"


def compiled_for(size: int) -> bool:
    """Whether a window of `size` steps runs compiled: long enough to load the kernels, or they are loaded."""
    return size >= COMPILED_FROM or (size >= LOADED_FROM and _KERNELS in sys.modules)


# Windows of this many steps and more are searched on the plan's free-capacity tree (ontree.py) instead of a copy:
# below it, reading the window is cheaper than the tree's bookkeeping (measured: a week at minute steps, whose
# 10,080 steps stay below it, decides faster on copies). On a plan that long or longer (seconds-long steps), windows
# from TREE_WINDOW steps on go to the tree too: the tree is there already and a copy of hours of seconds costs more.
TREE_FROM = 16_384
TREE_WINDOW = 2_048


def on_tree(window: int, steps: int) -> bool:
    """Whether a window of `window` steps on a plan of `steps` steps is searched on the plan's tree."""
    return window >= TREE_FROM or (steps >= TREE_FROM and window >= TREE_WINDOW)
Blocks = tuple[np.ndarray, np.ndarray]  # lease start offsets, and how many gangs start at each


def gang_room(free: np.ndarray, demand: np.ndarray, gang: int, parallelism: int | None) -> np.ndarray:
    """Gangs of `gang` bundles of `demand` that fit at each step of `free` (resources × steps), within `h`."""
    if compiled_for(free.shape[1]):
        from planner.agents.greedy import compiled  # the compiler loads only for the windows that need it

        return compiled.room_kernel(free, demand, gang, compiled.NO_CAP if parallelism is None else parallelism)
    needed = demand > 0
    if not needed.any():
        bundles = np.full(free.shape[1], 2**40, dtype=np.int64)
    else:
        ratios = free[needed] / demand[needed, None]
        bundles = np.floor(ratios.min(axis=0) + EPSILON).astype(np.int64)
    if parallelism is not None:
        np.minimum(bundles, parallelism, out=bundles)
    np.maximum(bundles, 0, out=bundles)
    return bundles // gang


def tile_room(room: np.ndarray, length: int) -> np.ndarray:
    """Room of each lease-length tile, tiles aligned to the window's end; tile 0 is the last one."""
    tiles = room.shape[0] // length
    if tiles == 0:
        return np.zeros(0, dtype=room.dtype)
    tail = room[room.shape[0] - tiles * length:]
    return tail.reshape(tiles, length).min(axis=1)[::-1]


def _tile_blocks(amounts: np.ndarray, size: int, length: int) -> Blocks:
    """Blocks for per-tile amounts (tile 0 last in the window)."""
    used = np.flatnonzero(amounts > 0)
    return size - (used + 1) * length, amounts[used].astype(np.int64)


def latest(room: np.ndarray, length: int, leases: int) -> Blocks | None:
    """Tallest, rightmost: from the end of the window, each lease start as high as it goes; None if no room.

    With one-step leases the steps are the tiles and one vectorised pass does it; longer
    leases slide start by start, which finds room that fixed tiles would miss.
    """
    if int(room.sum()) < leases * length:
        return None  # not even the bundle-time is there
    if length > 1:
        return exact_latest(room, length, leases)
    tiles = room[::-1]
    before = np.concatenate(([0], np.cumsum(tiles)[:-1]))
    amounts = np.clip(leases - before, 0, tiles)
    return _tile_blocks(amounts, room.shape[0], length)


def flattest(room: np.ndarray, length: int, leases: int) -> Blocks | None:
    """Flattest: the lowest level that holds every lease across the tiles, so use changes as little as it can."""
    return flattest_of_tiles(tile_room(room, length), room.shape[0], length, leases)


def flattest_of_tiles(tiles: np.ndarray, size: int, length: int, leases: int) -> Blocks | None:
    """`flattest` from the tiles' room (tile_room's, over a window of `size` steps)."""
    if compiled_for(size):
        from planner.agents.greedy import compiled

        starts, counts = np.empty(tiles.shape[0], dtype=np.int64), np.empty(tiles.shape[0], dtype=np.int64)
        written = compiled.flattest_kernel(tiles, size, length, leases, starts, counts)
        return None if written < 0 else (starts[:written], counts[:written])
    if tiles.sum() < leases:
        return None
    low, high = 1, int(tiles.max())
    while low < high:
        level = (low + high) // 2
        if np.minimum(tiles, level).sum() >= leases:
            high = level
        else:
            low = level + 1
    amounts = np.minimum(tiles, low)
    excess = int(amounts.sum()) - leases
    if excess:
        # Trim one lease from the earliest tiles at the level, keeping later tiles level.
        at_level = np.flatnonzero(amounts == low)[::-1][:excess]
        amounts[at_level] -= 1
    return _tile_blocks(amounts, size, length)


def exact_latest(room: np.ndarray, length: int, leases: int) -> Blocks | None:
    """Lease by lease from the end, each start as high as it goes: finds room that tiling misses."""
    if compiled_for(room.shape[0]):
        return _compiled_latest(room, length, leases)
    left = room.astype(np.int64).copy()
    starts: list[int] = []
    counts: list[int] = []
    remaining = leases
    # Only starts whose whole lease has room can take one; placing lowers room, so re-check each.
    possible = np.flatnonzero(sliding_min(left, length) > 0)
    index = possible.size - 1
    while index >= 0:
        start = int(possible[index])
        lease = left[start:start + length]
        fit = int(lease.min())
        if fit <= 0:
            # Every start down to the one just past the leftmost step left without room covers that step too.
            blocked = start + int(np.argmax(lease <= 0))
            index = int(np.searchsorted(possible, blocked - length, side="right")) - 1
            continue
        take = min(fit, remaining)
        lease -= take
        starts.append(start)
        counts.append(take)
        remaining -= take
        if remaining == 0:
            return np.array(starts, dtype=np.int64), np.array(counts, dtype=np.int64)
        index -= 1
    return None


def _compiled_latest(room: np.ndarray, length: int, leases: int) -> Blocks | None:
    from planner.agents.greedy import compiled

    size = max(0, min(leases, room.shape[0] - length + 1))
    starts, counts = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    written = compiled.latest_kernel(np.ascontiguousarray(room, dtype=np.int64), length, leases, starts, counts)
    return None if written < 0 else (starts[:written], counts[:written])


def open_starts(room: np.ndarray, length: int, count: int) -> np.ndarray:
    """The latest `count` starts in a window whose lease has a gang's room at every step, latest first (offsets)."""
    return np.flatnonzero(sliding_min(room.astype(np.int64, copy=False), length) > 0)[::-1][:count]


def sliding_min(values: np.ndarray, length: int) -> np.ndarray:
    """`min(values[i:i + length])` for every i (van Herk/Gil-Werman, linear time)."""
    size = values.shape[0]
    if length == 1:
        return values.copy()
    count = size - length + 1
    if count <= 0:
        return np.zeros(0, dtype=values.dtype)
    padded_size = -(-size // length) * length
    padded = np.full(padded_size, np.iinfo(np.int64).max, dtype=np.int64)
    padded[:size] = values
    blocks = padded.reshape(-1, length)
    prefix = np.minimum.accumulate(blocks, axis=1).ravel()
    suffix = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    return np.minimum(suffix[:count], prefix[length - 1:length - 1 + count])
