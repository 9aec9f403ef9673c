"""Derived facts of atoms at a plan step: lease length and count, how many fit at once, least duration.

The number of leases is computed from the values as written; each lease then lasts its
length rounded up to whole steps (spec: Discretisation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from rdl.tree import Atom
from rdl.units import ceil_div, seconds_between


def lease_seconds(atom: Atom, step: int) -> float:
    """The lease length as written; one plan step when omitted."""
    return atom.lease if atom.lease is not None else float(step)


def lease_steps(atom: Atom, step: int) -> int:
    """Steps one lease holds its bundles: the length rounded up to whole steps."""
    return max(1, ceil_div(lease_seconds(atom, step), step))


def lease_count(atom: Atom, step: int) -> int:
    """`ceil(W / (G * L))` leases of `G` bundles each."""
    return max(1, ceil_div(atom.work, atom.gang * lease_seconds(atom, step)))


def bundles_that_fit(atom: Atom, capacity: Mapping[str, float] | None) -> int | None:
    """How many bundles may be held at once: `h`, and what the capacity holds; None when unbounded."""
    limit: float = atom.parallelism if atom.parallelism is not None else math.inf
    if capacity is not None:
        for name, need in atom.bundle.items():
            if need > 0:
                limit = min(limit, math.floor(capacity.get(name, 0.0) / need + 1e-9))
    return None if limit == math.inf else int(limit)


def min_steps(atom: Atom, step: int, capacity: Mapping[str, float] | None) -> int | None:
    """The least number of steps the atom takes alone on the cluster; None when no gang ever fits."""
    fit = bundles_that_fit(atom, capacity)
    if fit is None:
        return lease_steps(atom, step)
    gangs = fit // atom.gang
    if gangs == 0:
        return None
    return math.ceil(lease_count(atom, step) / gangs) * lease_steps(atom, step)


def step_ceil(origin: datetime, at: datetime, step: int) -> int:
    """The first step boundary at or after `at` (windows start rounded up)."""
    return math.ceil(seconds_between(origin, at) / step - 1e-9)


def step_floor(origin: datetime, at: datetime, step: int) -> int:
    """The last step boundary at or before `at` (windows end rounded down)."""
    return math.floor(seconds_between(origin, at) / step + 1e-9)
