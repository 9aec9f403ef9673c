"""The greedy kernels, compiled by numba: room per step, lease-by-lease latest, and the flattest level over tiles.

Each computes what its numpy formulation in pack.py computes (the same float operations in the same order), so a
decision does not depend on which ran; tests/planner/agents/test_compiled.py compares them. Compiled on first use
and cached on disk (`cache=True`): a later process loads the machine code instead of compiling it again.
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.jit import kernel
from planner.core.treekernels import EPSILON, NO_CAP, UNBOUNDED

__all__ = ["NO_CAP", "UNBOUNDED", "flattest_kernel", "latest_kernel", "room_kernel"]


@kernel
def room_kernel(free: np.ndarray, demand: np.ndarray, gang: int, parallelism: int) -> np.ndarray:  # pragma: no cover
    """Gangs that fit at each step of `free` (resources × steps): floor(min over needed resources of free/demand).

    The arithmetic of the tree's `room_at` at each step, but read resource by resource along each row (contiguous
    memory, no view per step): 3-4x faster on long windows than calling `room_at` step by step."""
    resources, steps = free.shape
    lowest = np.full(steps, math.inf)
    needed = False
    for r in range(resources):
        share = demand[r]
        if share > 0:
            needed = True
            row = free[r]
            for t in range(steps):
                ratio = row[t] / share
                if ratio < lowest[t]:
                    lowest[t] = ratio
    out = np.empty(steps, dtype=np.int64)
    for t in range(steps):
        bundles = math.floor(lowest[t] + EPSILON) if needed else UNBOUNDED
        if parallelism != NO_CAP and bundles > parallelism:
            bundles = parallelism
        if bundles < 0:
            bundles = 0
        out[t] = bundles // gang
    return out


@kernel
def latest_kernel(room: np.ndarray, length: int, leases: int,
                  starts: np.ndarray, counts: np.ndarray) -> int:  # pragma: no cover
    """Lease by lease from the end, each start as high as it goes; the blocks written, or -1 if they do not fit.

    Walks starts from the last down, as the loop it replaces did, but jumps over every start whose lease covers
    a step with no room left (the leftmost such step in the lease tells how far): those starts had no fit.
    """
    left = room.copy()
    remaining = leases
    written = 0
    start = left.shape[0] - length
    while start >= 0:
        fit = 2**62
        blocked = -1
        for t in range(start, start + length):
            value = int(left[t])
            if value <= 0:
                blocked = t
                break
            if value < fit:
                fit = value
        if blocked >= 0:
            start = blocked - length
            continue
        take = fit if fit < remaining else remaining
        for t in range(start, start + length):
            left[t] -= take
        starts[written] = start
        counts[written] = take
        written += 1
        remaining -= take
        if remaining == 0:
            return written
        start -= 1
    return -1


@kernel
def flattest_kernel(tiles: np.ndarray, size: int, length: int, leases: int,
                    starts: np.ndarray, counts: np.ndarray) -> int:  # pragma: no cover
    """pack.flattest_of_tiles: the lowest level that holds every lease across the tiles (tile 0 last in a window of
    `size` steps), found by bisection; the blocks written in tile order, or -1 if the tiles hold too few leases.

    The bisection's sums and the trim are pack's, loop by loop instead of an array per level: 2 us against 28 for
    numpy on a probe's tiles, where each level's `np.minimum(...).sum()` was a few allocations."""
    tiles_count = tiles.shape[0]
    total, high = 0, 0
    for i in range(tiles_count):
        total += tiles[i]
        if tiles[i] > high:
            high = tiles[i]
    if total < leases:
        return -1
    low = 1
    while low < high:
        level = (low + high) // 2
        held = 0
        for i in range(tiles_count):
            held += tiles[i] if tiles[i] < level else level
        if held >= leases:
            high = level
        else:
            low = level + 1
    amounts = np.empty(tiles_count, dtype=np.int64)
    held = 0
    for i in range(tiles_count):
        amounts[i] = tiles[i] if tiles[i] < low else low
        held += amounts[i]
    excess = held - leases
    i = tiles_count - 1
    while excess > 0:  # one lease less on the earliest tiles at the level (the last in tile order)
        if amounts[i] == low:
            amounts[i] -= 1
            excess -= 1
        i -= 1
    written = 0
    for i in range(tiles_count):
        if amounts[i] > 0:
            starts[written] = size - (i + 1) * length
            counts[written] = amounts[i]
            written += 1
    return written
