"""The placer's cost of a placement on its copy of the plan, run by run, in numpy: the twin of treecost.placement_cost
(compiled, for the tree and for copies where pack's kernels run compiled, `pack.compiled_for`), kept apart so that a
search of short windows never loads the compiler."""

from __future__ import annotations

import numpy as np


def runs_cost(capacity: np.ndarray, free: np.ndarray, demand: np.ndarray, held: np.ndarray, laid: bool = True) -> float:
    """treecost.placement_cost in numpy, on `held` bundles at each step of the span (AtomPlacement.held): the same runs,
    the same terms, summed in the same order (numpy's cumsum adds one after another, as the loop does). Not `laid`:
    each step of `free` is read as laying the placement would leave it (Placer.apply's products, to the bit)."""
    span = held.shape[0]
    products = []
    for r in np.flatnonzero(demand):
        c, f = capacity[r], (free[r] if laid else free[r] - demand[r] * held)
        change = np.empty(span, dtype=bool)
        change[0] = True
        change[1:] = (held[1:] != held[:-1]) | (c[1:] != c[:-1]) | (f[1:] != f[:-1])
        firsts = np.flatnonzero(change)
        lengths = np.diff(np.append(firsts, span))
        bundles, cap, left = held[firsts], c[firsts], f[firsts]
        kept = (bundles > 0) & (cap > 0)
        share = (demand[r] * bundles[kept].astype(np.float64)) / cap[kept]
        load = 1.0 - left[kept] / cap[kept]
        products.append(share * (1.0 + load) * lengths[kept].astype(np.float64))
    every = np.concatenate(products) if products else np.zeros(0)
    return float(np.cumsum(every)[-1]) if every.size else 0.0
