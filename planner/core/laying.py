"""Laying bundles held over steps onto a resources × steps array in one compiled pass (numba, cached on disk).

The plan's `add` and `remove` and the placer's trial placements count use the same way: the bundles held at each step
summed as integers first, then one product per resource and step. Done in numpy that is a dozen array operations
(`np.add.at`, `np.cumsum`, `np.outer`) for a placement of a few leases; here it is one pass with the same products
in the same order, so the arrays hold the same bits either way (tests/planner/core/test_plan_use.py).
"""

from __future__ import annotations

import numpy as np

from planner.core.jit import kernel


@kernel
def lay(into: np.ndarray, base: int, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray,
        demand: np.ndarray) -> None:  # pragma: no cover
    """`into[:, base + t]` less `demand` times the bundles held at step t: `counts[i]` over [starts[i], ends[i]),
    steps counted from `base` (to add, pass `-demand`: x - (-d)h is x + dh, bit for bit)."""
    span = 0
    for i in range(ends.shape[0]):
        span = max(span, ends[i])
    held = np.zeros(span + 1, dtype=np.int64)
    for i in range(starts.shape[0]):
        held[starts[i]] += counts[i]
        held[ends[i]] -= counts[i]
    running = 0
    for t in range(span):
        running += held[t]
        for r in range(into.shape[0]):
            into[r, base + t] -= demand[r] * running
