"""Sharing policies: how much of the plan one user may hold over time (Rayon's capacity-over-time).

No-overcommit, the physical check, always holds and is the planner's own capacity check. On top
of it the cluster file may set per-user limits, as shares of the plan's capacity per resource:

    policies:
      user_limits:
        instantaneous: 50%    # at every step a user holds at most this share of each resource
        average: 25%          # ... and at most this share averaged over any `window`
        window: 24h           # a whole number of plan steps; needed wherever `average` is set
        users:                # per-user overrides; what a user leaves out it inherits
          alice: {instantaneous: 80%}
          ops: {instantaneous: null, average: null}   # `null` lifts a limit

Shares are `"50%"` strings or fractions (`0.5`) from 0 to 1. Reservations without a user are held
to the defaults, together, as if they were one user.

Windows: the average limit holds for every run of W consecutive steps that overlaps the horizon,
those that begin before step 0 or end after the last step included. Steps outside the horizon hold
no use (the plan knows of none) and have the capacity of the nearest edge step, so every window is
allowed Y × W steps of capacity: a burst at the horizon's edge is judged like one in the middle,
not against a shortened window. On a constant-capacity plan edge windows never bind more than
interior ones; they matter when the horizon is shorter than the window or capacity changes.

Exactness: window sums are differences of cumulative sums, exact for whole MiB and counts, and a
limit `share × capacity` is snapped to the whole number float noise hides, so use exactly at a
limit is within it. (YARN's check rejects a 25-hour reservation at exactly 25% against a 24-hour
window at 25%; this one accepts it.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from rdl import units
from rdl.policy import AVERAGE, INSTANTANEOUS, SharingPolicy

RELATIVE_SLACK = 1e-12  # far above float64 rounding, far below one unit of a realistic window sum
ABSOLUTE_SLACK = 1e-9


@dataclass(frozen=True, slots=True)
class Violation:
    """A limit a user would break: which limit, resource and steps, and by how much."""

    limit: str  # INSTANTANEOUS or AVERAGE
    user: str | None
    resource: int  # index into the plan's resources
    start: int  # steps [start, end): the run over the limit, or the window (which may reach past the horizon)
    end: int
    at: int  # the worst step (instantaneous) or the window's first step (average)
    held: float  # at step `at`, or per step averaged over the window
    allowed: float  # the limit, in the same terms
    share: float  # `held` as a share of capacity
    cap: float  # the limit as a share of capacity

    def message(self, resources: Sequence[str], origin: datetime, step: int) -> str:
        """One sentence for a `policy` rejection, naming the limit, in the user's units and times."""
        name = resources[self.resource]
        who = f"user {self.user}" if self.user is not None else "reservations without a user"
        held = _percent(self.share, unlike=self.cap)
        if self.limit == AVERAGE:
            span = units.format_duration((self.end - self.start) * step)
            return (f"{who} would hold {held} of {name} averaged over the {span} from "
                    f"{_instant(origin, step, self.start)}; the average limit is {_percent(self.cap)} over any {span}")
        amounts = f"{units.format_quantity(name, self.held)}, {units.format_quantity(name, self.allowed)} allowed"
        text = (f"{who} would hold {held} of {name} ({amounts}) at {_instant(origin, step, self.at)}; "
                f"the instantaneous limit is {_percent(self.cap)}")
        if self.end - self.start > 1:
            text += (f" (exceeded for {units.format_duration((self.end - self.start) * step)} from "
                     f"{_instant(origin, step, self.start)})")
        return text


# Parsing the `policies:` mapping of a cluster file.


# Checking use against the limits. Arrays are resources × steps, like the plan's.


def headroom(policy: SharingPolicy, user: str | None, capacity: np.ndarray, user_used: np.ndarray) -> np.ndarray:
    """How much more the user may hold per resource and step under the instantaneous limit (≥ 0, ≤ capacity)."""
    cap = policy.for_user(user).instantaneous
    if cap is None:
        return np.array(capacity, dtype=np.float64)
    return np.maximum(_limit(cap, capacity) - user_used, 0.0)


def instantaneous_violation(policy: SharingPolicy, user: str | None, capacity: np.ndarray,
                            user_used: np.ndarray, *, added: np.ndarray | None = None) -> Violation | None:
    """The worst step where the user holds more than its instantaneous share, or None.

    With `added` (the use a new reservation adds), only steps it adds to count: a user put over
    its limit elsewhere by a drop in capacity is not blocked from unrelated reservations.
    """
    cap = policy.for_user(user).instantaneous
    if cap is None:
        return None
    allowed = _limit(cap, capacity)
    over = _exceeds(user_used, allowed)
    if added is not None:
        over &= added > 0
    share = _share_of(user_used, capacity)
    found = _worst(share, over, np.zeros(over.shape[1]))
    if found is None:
        return None
    resource, at = found
    start, end = _run(over[resource], at)
    return Violation(INSTANTANEOUS, user, resource, start, end, at, float(user_used[resource, at]),
                     float(allowed[resource, at]), float(share[resource, at]), cap)


def average_violation(policy: SharingPolicy, user: str | None, capacity: np.ndarray,
                      user_used_after: np.ndarray, *, added: np.ndarray | None = None) -> Violation | None:
    """The worst window where the user's use averages more than its average share, or None.

    Every window of W steps that overlaps the horizon counts (see the module's docstring); with
    `added`, only windows the new use falls in.
    """
    limits = policy.for_user(user)
    if limits.average is None or limits.window is None or capacity.shape[1] == 0:
        return None
    window = limits.window
    held = _window_sums(user_used_after, window, edge=False)
    room = _window_sums(capacity, window, edge=True)
    allowed = _limit(limits.average, room)
    over = _exceeds(held, allowed)
    if added is not None:
        over &= _window_sums(added, window, edge=False) > 0
    starts = np.arange(held.shape[1]) - (window - 1)
    outside = np.maximum(0, -starts) + np.maximum(0, starts + window - capacity.shape[1])
    share = _share_of(held, room)
    found = _worst(share, over, outside)
    if found is None:
        return None
    resource, column = found
    start = int(starts[column])
    return Violation(AVERAGE, user, resource, start, start + window, start, float(held[resource, column]) / window,
                     float(allowed[resource, column]) / window, float(share[resource, column]), limits.average)


def check(policy: SharingPolicy, user: str | None, capacity: np.ndarray, user_used_after: np.ndarray, *,
          added: np.ndarray | None = None) -> Violation | None:
    """The first limit the user's use breaks, instantaneous before average, or None."""
    return (instantaneous_violation(policy, user, capacity, user_used_after, added=added)
            or average_violation(policy, user, capacity, user_used_after, added=added))


def check_span(policy: SharingPolicy, user: str | None, capacity: np.ndarray, user_used: np.ndarray,
               added: np.ndarray, lo: int) -> Violation | None:
    """`check` of the user's use plus `added`, use held over steps [lo, lo + its length) only, reading just the
    steps a limit can see from there: those steps for the instantaneous limit, a window more each side for the
    average one. The same answer as `check` over the whole horizon (sums of whole units are exact from any origin).
    """
    hi = lo + added.shape[1]
    after = user_used[:, lo:hi] + added
    found = instantaneous_violation(policy, user, capacity[:, lo:hi], after, added=added)
    if found is not None:
        return _moved(found, lo)
    limits = policy.for_user(user)
    if limits.average is None or limits.window is None:
        return None
    # Every window the added use falls in lies inside [first, last), or reaches past the horizon there.
    first, last = max(0, lo - limits.window + 1), min(capacity.shape[1], hi + limits.window - 1)
    around = user_used[:, first:last].copy()
    around[:, lo - first:hi - first] = after
    placed = np.zeros_like(around)
    placed[:, lo - first:hi - first] = added
    found = average_violation(policy, user, capacity[:, first:last], around, added=placed)
    return None if found is None else _moved(found, first)


def _moved(violation: Violation, steps: int) -> Violation:
    return replace(violation, start=violation.start + steps, end=violation.end + steps, at=violation.at + steps)


def _limit(share: float, amount: np.ndarray) -> np.ndarray:
    """`share × amount`, snapped to the whole number where float noise is all that separates them."""
    scaled = share * np.asarray(amount, dtype=np.float64)
    whole = np.round(scaled)
    return np.where(np.abs(scaled - whole) <= RELATIVE_SLACK * np.abs(scaled), whole, scaled)


def _exceeds(held: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Where `held` is over `allowed` by more than rounding."""
    return held > allowed + RELATIVE_SLACK * np.abs(allowed) + ABSOLUTE_SLACK


def _share_of(held: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """`held / capacity`, infinite where something is held of nothing."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(capacity > 0, held / capacity, np.where(held > 0, np.inf, 0.0))


def _window_sums(values: np.ndarray, window: int, *, edge: bool) -> np.ndarray:
    """Sums over each `window` steps overlapping the horizon; column k starts at step k − (window − 1).

    Outside the horizon values are 0, or with `edge` those of the nearest edge step.
    """
    pad = window - 1
    padded = np.pad(np.asarray(values, dtype=np.float64), ((0, 0), (pad, pad)), mode="edge" if edge else "constant")
    prefix = np.zeros((padded.shape[0], padded.shape[1] + 1))
    np.cumsum(padded, axis=1, out=prefix[:, 1:])
    return prefix[:, window:] - prefix[:, :-window]


def _worst(share: np.ndarray, over: np.ndarray, outside: np.ndarray) -> tuple[int, int] | None:
    """(resource, column) of the largest share over the limit; ties go to fewer steps outside, then earliest."""
    resources, columns = np.nonzero(over)
    if resources.size == 0:
        return None
    best = np.lexsort((resources, columns, outside[columns], -share[resources, columns]))[0]
    return int(resources[best]), int(columns[best])


def _run(over: np.ndarray, at: int) -> tuple[int, int]:
    """The steps [start, end) of the run of True around `at`."""
    before = np.flatnonzero(~over[:at])
    after = np.flatnonzero(~over[at:])
    start = int(before[-1]) + 1 if before.size else 0
    return start, at + int(after[0]) if after.size else over.size


def _percent(share: float, unlike: float | None = None) -> str:
    """`0.25` → `25%`, with the decimals it takes to be exact or to read differently from `unlike`."""
    text = ""
    for digits in range(7):
        text = f"{share * 100:.{digits}f}"
        if math.isclose(float(text), share * 100, rel_tol=1e-9, abs_tol=1e-9):
            break
        if unlike is not None and text != f"{unlike * 100:.{digits}f}":
            break
    return f"{text}%"


def _instant(origin: datetime, step: int, index: int) -> str:
    return units.format_instant(origin + timedelta(seconds=index * step))
