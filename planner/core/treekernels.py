"""The compiled parts of `FreeTree` (freetree.py): building its per-block minima and maxima, and the searches.

Free capacity stays a dense array (resources × steps); above it, per resource, a segment tree over blocks of `BLOCK`
steps holds each block's least and greatest free. A search never reads a step whose block the tree rules out, so
its cost follows the places where capacity changes, not the steps of the window.

A step's room is the greedy placer's: gangs of `gang` bundles of `demand` that fit there (`room_at`, the same float
operations as pack.gang_room). Room only grows with each resource's free capacity, so the least room over a span is
the room of the span's per-resource minima, exactly; the room of its maxima bounds its greatest room from above.
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.jit import inline_kernel, kernel

# Steps per leaf of the tree: a leaf is scanned whole, so this trades memory for scan length. 16, not 64: a lease of a
# minute at one-second steps reads two partial leaves per question (measured, `python benchmarks/admission.py --sweep
# --count 10000 --steps 1s --agents gree,gree-l --roll-count 10` side by side: p99 gree 6.6 -> 6.0 ms, gree-l 68 ->
# 55 ms; 8 gave the same as 16), for 3 MiB more on a week at one-second steps (the plan's 29).
BLOCK = 16
EPSILON = 1e-9  # pack.py's
UNBOUNDED = 2**40  # the room of a bundle that asks for nothing
NO_CAP = -1  # `parallelism` None


@inline_kernel
def room_at(values: np.ndarray, demand: np.ndarray, gang: int, parallelism: int) -> int:  # pragma: no cover
    """Gangs that fit where each resource has `values[r]` free (pack.gang_room at one step)."""
    lowest = math.inf
    needed = False
    for r in range(values.shape[0]):
        if demand[r] > 0:
            needed = True
            ratio = values[r] / demand[r]
            if ratio < lowest:
                lowest = ratio
    bundles = math.floor(lowest + EPSILON) if needed else UNBOUNDED
    if parallelism != NO_CAP and bundles > parallelism:
        bundles = parallelism
    if bundles < 0:
        bundles = 0
    return bundles // gang


@kernel
def build(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray) -> None:  # pragma: no cover
    """Fill the tree (leaves from `mins.shape[1] // 2`) from `free`; leaves past the steps stay neutral."""
    mins[:, :] = math.inf
    maxs[:, :] = -math.inf
    refresh(free, mins, maxs, 0, free.shape[1])


@inline_kernel
def _pull(mins: np.ndarray, maxs: np.ndarray, node: int) -> None:  # pragma: no cover
    for r in range(mins.shape[0]):
        mins[r, node] = min(mins[r, 2 * node], mins[r, 2 * node + 1])
        maxs[r, node] = max(maxs[r, 2 * node], maxs[r, 2 * node + 1])


@kernel
def refresh(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int) -> None:  # pragma: no cover
    """Recompute the blocks over steps [lo, hi) from `free`, and their ancestors."""
    if hi <= lo:
        return
    first, last = lo // BLOCK, (hi - 1) // BLOCK
    for block in range(first, last + 1):
        _read_block(free, mins, maxs, block)
    pull_above(mins, maxs, lo, hi)


@inline_kernel
def _read_block(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, block: int) -> None:  # pragma: no cover
    """The leaf of `block` from its steps in `free`."""
    size, end = mins.shape[1] // 2, min(free.shape[1], (block + 1) * BLOCK)
    for r in range(free.shape[0]):
        low, high = math.inf, -math.inf
        for t in range(block * BLOCK, end):
            value = free[r, t]
            low = min(low, value)
            high = max(high, value)
        mins[r, size + block] = low
        maxs[r, size + block] = high


@kernel
def pull_above(mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int) -> None:  # pragma: no cover
    """Recompute the ancestors of the leaves over steps [lo, hi) from their children."""
    if hi <= lo:
        return
    size = mins.shape[1] // 2
    first, last = (size + lo // BLOCK) // 2, (size + (hi - 1) // BLOCK) // 2
    while first >= 1:
        for node in range(first, last + 1):
            _pull(mins, maxs, node)
        first, last = first // 2, last // 2


@kernel
def take_from(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int,
              amounts: np.ndarray) -> None:  # pragma: no cover
    """free[r, lo:hi] -= amounts[r], and the leaves over [lo, hi) with it (their ancestors are the caller's:
    pull_above). A block the span covers whole moves its least and greatest by the same subtraction, exactly
    (rounding keeps the order of the values); a block it covers in part is read again."""
    size = mins.shape[1] // 2
    for r in range(free.shape[0]):
        amount = amounts[r]
        for t in range(lo, hi):
            free[r, t] -= amount
    first, last = lo // BLOCK, (hi - 1) // BLOCK
    for block in range(first, last + 1):
        if block * BLOCK >= lo and min(free.shape[1], (block + 1) * BLOCK) <= hi:
            for r in range(free.shape[0]):
                mins[r, size + block] -= amounts[r]
                maxs[r, size + block] -= amounts[r]
        else:
            _read_block(free, mins, maxs, block)


@kernel
def reset_runs(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, capacity: np.ndarray, used: np.ndarray,
               runs: np.ndarray) -> None:  # pragma: no cover
    """Free over each run of steps ([lo, hi) rows, in any order, overlaps allowed) from capacity and use again."""
    steps = free.shape[1]
    order = np.argsort(runs[:, 0], kind="mergesort")
    k = 0
    while k < order.shape[0]:
        lo, hi = runs[order[k], 0], runs[order[k], 1]
        k += 1
        while k < order.shape[0] and runs[order[k], 0] <= hi:  # overlapping or touching runs: one reset
            hi = max(hi, runs[order[k], 1])
            k += 1
        lo, hi = max(lo, 0), min(hi, steps)
        if lo < hi:
            for r in range(free.shape[0]):
                for t in range(lo, hi):
                    free[r, t] = capacity[r, t] - used[r, t]
            refresh(free, mins, maxs, lo, hi)


@inline_kernel
def one_value(mins: np.ndarray, maxs: np.ndarray, node: int) -> bool:  # pragma: no cover
    """Whether every step under `node` holds the same free capacity, resource by resource."""
    same = True
    for r in range(mins.shape[0]):
        same = same and mins[r, node] == maxs[r, node]
    return same


@kernel
def room_summary(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int, demand: np.ndarray,
                 gang: int, parallelism: int) -> tuple[int, int]:  # pragma: no cover
    """Over steps [lo, hi) (not empty): the most bundles free at one step, and the whole gangs free summed over the
    steps. A subtree whose minima and maxima give the same room has that room at every step (room grows with each
    resource), so it counts once, times its steps; only a block whose steps differ is read step by step."""
    size, steps = mins.shape[1] // 2, free.shape[1]
    first, last = lo // BLOCK, (hi - 1) // BLOCK
    most, gangs = 0, 0
    nodes, spans = np.empty(128, dtype=np.int64), np.empty(128, dtype=np.int64)  # depth-first, two per level
    nodes[0], spans[0], top = 1, size, 1
    while top > 0:
        top -= 1
        node, span = nodes[top], spans[top]
        start = node * span - size  # the node's first block
        if start > last or start + span <= first:
            continue
        a, b = max(lo, start * BLOCK), min(hi, (start + span) * BLOCK, steps)
        low = room_at(mins[:, node], demand, 1, parallelism)
        if low == room_at(maxs[:, node], demand, 1, parallelism):
            most = max(most, low)
            gangs += low // gang * (b - a)
        elif span > 1:
            nodes[top], spans[top], nodes[top + 1], spans[top + 1] = 2 * node, span // 2, 2 * node + 1, span // 2
            top += 2
        else:
            for t in range(a, b):
                bundles = room_at(free[:, t], demand, 1, parallelism)
                most = max(most, bundles)
                gangs += bundles // gang
    return most, gangs


@kernel
def least_free(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int,
               hi: int) -> np.ndarray:  # pragma: no cover
    """Per resource, the least free capacity over steps [lo, hi) (+inf for an empty span). A part of a block whose
    least and greatest free are the same is read from the tree, not step by step."""
    out = np.empty(free.shape[0])
    least_free_into(free, mins, maxs, lo, hi, out)
    return out


@inline_kernel
def least_free_into(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int,
                    out: np.ndarray) -> None:  # pragma: no cover
    """least_free written into `out` (a search that asks many times allocates nothing per question)."""
    resources, size = free.shape[0], mins.shape[1] // 2
    for r in range(resources):
        out[r] = math.inf
    t = lo
    if t % BLOCK != 0 and one_value(mins, maxs, size + t // BLOCK):  # the head of a block that holds one value
        for r in range(resources):
            out[r] = min(out[r], mins[r, size + t // BLOCK])
        t = min(hi, t - t % BLOCK + BLOCK)
    while t < hi and t % BLOCK != 0:  # the head of a block
        for r in range(resources):
            out[r] = min(out[r], free[r, t])
        t += 1
    end = hi - hi % BLOCK if hi - hi % BLOCK > t else t
    left, right = size + t // BLOCK, size + end // BLOCK  # whole blocks [t, end): tree nodes [left, right)
    while left < right:
        if left & 1:
            for r in range(resources):
                out[r] = min(out[r], mins[r, left])
            left += 1
        if right & 1:
            right -= 1
            for r in range(resources):
                out[r] = min(out[r], mins[r, right])
        left //= 2
        right //= 2
    if end < hi and one_value(mins, maxs, size + end // BLOCK):  # the tail, in a block that holds one value
        for r in range(resources):
            out[r] = min(out[r], mins[r, size + end // BLOCK])
        return
    for t in range(end, hi):  # the tail
        for r in range(resources):
            out[r] = min(out[r], free[r, t])


@kernel
def least_room(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int, demand: np.ndarray,
               gang: int, parallelism: int) -> int:  # pragma: no cover
    """The least room over steps [lo, hi): the room of the per-resource minima."""
    return room_at(least_free(free, mins, maxs, lo, hi), demand, gang, parallelism)


@inline_kernel
def least_room_into(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int, demand: np.ndarray,
                    gang: int, parallelism: int, scratch: np.ndarray) -> int:  # pragma: no cover
    """least_room with `scratch` (one float a resource) to hold the minima: nothing allocated."""
    least_free_into(free, mins, maxs, lo, hi, scratch)
    return room_at(scratch, demand, gang, parallelism)


@inline_kernel
def _ratio_reaches(value: float, share: float, bundles: int) -> bool:  # pragma: no cover
    """Whether room_at's bundle count for one resource reaches `bundles`: floor(value / share + EPSILON) >= bundles,
    with room_at's float operations."""
    return value / share + EPSILON >= bundles


@kernel
def least_enough(share: float, bundles: int) -> float:  # pragma: no cover
    """The least float `value` with floor(value / share + EPSILON) >= bundles in room_at's float operations.

    Both operations round monotonically, so those values are exactly the ones from this one up: a search may
    compare a resource's free capacity with it instead of dividing. It starts from the real-number answer and moves
    by one float at a time, a few at most."""
    value = (bundles - EPSILON) * share
    while not _ratio_reaches(value, share, bundles):
        value = np.nextafter(value, math.inf)
    while _ratio_reaches(np.nextafter(value, -math.inf), share, bundles):
        value = np.nextafter(value, -math.inf)
    return value


@kernel
def room_test(demand: np.ndarray, gang: int, parallelism: int, bound: int,
              at_least: bool) -> tuple[np.ndarray, int]:  # pragma: no cover
    """room_at(values) <= bound (or >= bound `at_least`) as comparisons: per resource the least free capacity that
    holds the bundles the test turns on (-inf where the bundle asks for none), and what the test says whatever the
    values are (1 yes, 0 no, -1 it depends). `meets` applies it."""
    bundles = bound * gang if at_least else (bound + 1) * gang  # at least this many, or fewer than this many
    least = np.full(demand.shape[0], -math.inf)
    needed = False
    for r in range(demand.shape[0]):
        if demand[r] > 0:
            needed = True
            least[r] = least_enough(demand[r], bundles)
    capped = parallelism != NO_CAP and parallelism < bundles
    if at_least:
        if bundles <= 0:
            return least, 1
        return least, 0 if capped or (not needed and bundles > UNBOUNDED) else (-1 if needed else 1)
    if bundles <= 0:
        return least, 0
    return least, 1 if capped or (not needed and bundles > UNBOUNDED) else (-1 if needed else 0)


@inline_kernel
def meets(values: np.ndarray, least: np.ndarray, fixed: int, at_least: bool) -> bool:  # pragma: no cover
    """What room_test's test says of one step's (or one node's) free capacities `values`."""
    if fixed >= 0:
        return fixed == 1
    short = False
    for r in range(values.shape[0]):
        short = short or values[r] < least[r]
    return not short if at_least else short


@inline_kernel
def _open(mins: np.ndarray, maxs: np.ndarray, node: int, span: int, first: int, last: int, least: np.ndarray,
          fixed: int, at_least: bool) -> bool:  # pragma: no cover
    """Whether the search may enter `node` (covering `span` blocks): it reaches into blocks [first, last] and the
    tree does not rule it out (exact for room <= bound, from the minima; from the maxima, an upper bound, for room
    >= bound: a yes may be wrong and the caller checks the steps)."""
    start = node * span - mins.shape[1] // 2
    if start > last or start + span <= first:
        return False
    return meets(maxs[:, node] if at_least else mins[:, node], least, fixed, at_least)


@kernel
def find(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int, demand: np.ndarray, gang: int,
         parallelism: int, bound: int, at_least: bool, from_right: bool) -> int:  # pragma: no cover
    """The first step of [lo, hi), from the left or `from_right`, whose room is <= bound (or >= bound
    `at_least`); -1 when there is none. Blocks the tree rules out are never read.

    It starts at the first block and climbs only as far as the next block the tree does not rule out, so an
    answer near the start costs a block's scan, and a far one O(log distance) nodes."""
    if hi <= lo:
        return -1
    least, fixed = room_test(demand, gang, parallelism, bound, at_least)
    return find_by(free, mins, maxs, lo, hi, least, fixed, at_least, from_right)


@kernel
def find_by(free: np.ndarray, mins: np.ndarray, maxs: np.ndarray, lo: int, hi: int, least: np.ndarray, fixed: int,
            at_least: bool, from_right: bool) -> int:  # pragma: no cover
    """find with its room test made (room_test): a search that asks the same test many times makes it once."""
    if hi <= lo:
        return -1
    size = mins.shape[1] // 2
    first, last = lo // BLOCK, (hi - 1) // BLOCK
    node, span = size + (last if from_right else first), 1
    while True:
        if _open(mins, maxs, node, span, first, last, least, fixed, at_least):
            while span > 1:  # down to the first leaf in the direction the tree does not rule out
                near, far = (2 * node + 1, 2 * node) if from_right else (2 * node, 2 * node + 1)
                if _open(mins, maxs, near, span // 2, first, last, least, fixed, at_least):
                    node, span = near, span // 2
                elif _open(mins, maxs, far, span // 2, first, last, least, fixed, at_least):
                    node, span = far, span // 2
                else:
                    break  # the maxima's bound was loose here: nothing below
            if span == 1:
                block = node - size
                begin, end = max(lo, block * BLOCK), min(hi, (block + 1) * BLOCK)
                if one_value(mins, maxs, node):  # one value: one room for every step of the block
                    if meets(mins[:, node], least, fixed, at_least):
                        return end - 1 if from_right else begin
                    begin = end  # nothing here
                for i in range(end - begin):
                    t = end - 1 - i if from_right else begin + i
                    if meets(free[:, t], least, fixed, at_least):
                        return t
        # On to the next subtree in the direction: up until `node` has a sibling that way.
        while node > 1 and node & 1 == (0 if from_right else 1):
            node, span = node // 2, span * 2
        if node == 1:
            return -1
        node = node - 1 if from_right else node + 1
        start = node * span - size
        if (start + span <= first) if from_right else (start > last):
            return -1
