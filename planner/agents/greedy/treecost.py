"""What a placement laid on the free-capacity tree holds, run by run, and the placer's cost of it, compiled.

A placement spread thin over a long span holds nothing over most of it: `pieces` gives the runs of steps where it
holds something, so laying it (ontree.tree_lay) and costing it read its leases' steps, not its span.

`placement_cost` is `Placer.cost` of one placement to the last bit: the same terms, summed in numpy's own order
(its pairwise sum over the resources × span array, blocks of 128 with eight running sums). A block of that sum where
the placement holds nothing is exactly zero, so it is skipped without changing the total
(tests/planner/agents/test_treecost.py holds it to `Placer.cost`).
"""

from __future__ import annotations

import numpy as np

from planner.core.jit import kernel

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE
UNROLL = 8  # numpy's running sums per block


@kernel
def pieces(starts: np.ndarray, gangs: np.ndarray,
           length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The runs [lo, hi) where leases of `length` steps starting at `starts` (`gangs` at each) hold a constant,
    nonzero count: their lo, hi and count, in step order."""
    count = starts.shape[0]
    points = np.empty(2 * count, dtype=np.int64)
    deltas = np.empty(2 * count, dtype=np.int64)
    for i in range(count):
        points[i], deltas[i] = starts[i], gangs[i]
        points[count + i], deltas[count + i] = starts[i] + length, -gangs[i]
    order = np.argsort(points, kind="mergesort")
    los = np.empty(2 * count, dtype=np.int64)
    his = np.empty(2 * count, dtype=np.int64)
    held = np.empty(2 * count, dtype=np.int64)
    running, found, i = 0, 0, 0
    while i < 2 * count:
        here = points[order[i]]
        while i < 2 * count and points[order[i]] == here:
            running += deltas[order[i]]
            i += 1
        if i < 2 * count and running != 0:
            los[found], his[found], held[found] = here, points[order[i]], running
            found += 1
    return los[:found], his[:found], held[:found]


@kernel
def _first_piece(his: np.ndarray, t: int) -> int:  # pragma: no cover
    """The first piece that ends after step t."""
    return int(np.searchsorted(his, t, side="right"))


@kernel
def _holds(los: np.ndarray, his: np.ndarray, a: int, b: int) -> bool:  # pragma: no cover
    """Whether some piece reaches into steps [a, b)."""
    k = _first_piece(his, a)
    return k < los.shape[0] and los[k] < b


@kernel
def _term(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, r: int, t: int,
          held: int) -> float:  # pragma: no cover
    """Placer.cost's term at resource r, step t (offsets in the slices given), `held` bundles there."""
    amount = demand[r] * float(held)
    share = amount / capacity[r, t] if capacity[r, t] > 0 else 0.0
    load = 1.0 - free[r, t] / capacity[r, t] if capacity[r, t] > 0 else 0.0
    return share * (1.0 + load)


@kernel
def _zero(demand: np.ndarray, los: np.ndarray, his: np.ndarray, span: int, lo: int,
          size: int) -> bool:  # pragma: no cover
    """Whether every term of flat elements [lo, lo + size) is zero: no resource asked for there, or no piece."""
    for r in range(lo // span, (lo + size - 1) // span + 1):
        if demand[r] == 0:
            continue
        a, b = max(lo, r * span) - r * span, min(lo + size, (r + 1) * span) - r * span
        if _holds(los, his, a, b):
            return False
    return True


@kernel
def _fill(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, gang: int, los: np.ndarray, his: np.ndarray,
          held: np.ndarray, span: int, lo: int, values: np.ndarray) -> None:  # pragma: no cover
    """The terms of flat elements [lo, lo + len(values)) of the resources × span array, walking the pieces."""
    r, t = lo // span, lo % span
    k = _first_piece(his, t)
    for i in range(values.shape[0]):
        while k < los.shape[0] and his[k] <= t:
            k += 1
        bundles = held[k] * gang if k < los.shape[0] and los[k] <= t else 0
        values[i] = _term(capacity, free, demand, r, t, bundles)
        t += 1
        if t == span:
            r, t, k = r + 1, 0, 0


@kernel
def _block(values: np.ndarray) -> float:  # pragma: no cover
    """numpy's sum of at most PAIRWISE_BLOCK values: eight running sums, then the rest one by one."""
    size = values.shape[0]
    if size < UNROLL:
        total = 0.0
        for i in range(size):
            total += values[i]
        return total
    sums = values[:UNROLL].copy()
    i = UNROLL
    while i < size - size % UNROLL:
        for j in range(UNROLL):
            sums[j] += values[i + j]
        i += UNROLL
    total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
    while i < size:
        total += values[i]
        i += 1
    return total


@kernel
def _pairwise(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, gang: int, los: np.ndarray,
              his: np.ndarray, held: np.ndarray, span: int, size: int) -> float:  # pragma: no cover
    """numpy's pairwise sum of the flat elements [0, size), skipping the parts that are all zero.

    numpy halves a part of more than PAIRWISE_BLOCK elements (at a multiple of UNROLL) and adds the halves' sums;
    this does the same with a stack of its own (numba's cached code does not take recursion well)."""
    frames = np.empty((192, 3), dtype=np.int64)  # lo, size, halves summed: 64 levels deep at most
    sums = np.empty(192)
    values = np.empty(PAIRWISE_BLOCK)
    top, results = 0, 0
    frames[0, 0], frames[0, 1], frames[0, 2] = 0, size, 0
    top = 1
    while top > 0:
        top -= 1
        lo, part, summed = frames[top, 0], frames[top, 1], frames[top, 2]
        if summed:
            results -= 1
            sums[results - 1] = sums[results - 1] + sums[results]
        elif _zero(demand, los, his, span, lo, part):
            sums[results] = 0.0
            results += 1
        elif part <= PAIRWISE_BLOCK:
            _fill(capacity, free, demand, gang, los, his, held, span, lo, values[:part])
            sums[results] = _block(values[:part])
            results += 1
        else:
            half = part // 2
            half -= half % UNROLL
            frames[top, 2] = 1
            frames[top + 1, 0], frames[top + 1, 1], frames[top + 1, 2] = lo + half, part - half, 0
            frames[top + 2, 0], frames[top + 2, 1], frames[top + 2, 2] = lo, half, 0
            top += 3
    return sums[0]


@kernel
def placement_cost(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, starts: np.ndarray,
                   gangs: np.ndarray, length: int, gang: int) -> float:  # pragma: no cover
    """Placer.cost of one placement; `capacity` and `free` are sliced to its span (first start to last end)."""
    los, his, held = pieces(starts, gangs, length)
    base = starts.min()
    span = starts.max() + length - base
    return 0.0 + _pairwise(capacity, free, demand, gang, los - base, his - base, held, span, demand.shape[0] * span)
