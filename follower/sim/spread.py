"""The spread of a figure over the seeds of one grid cell: its mean and a 95 % Student t interval.

scipy is not a dependency for one quantile, so the two-sided 95 % quantiles of Student's t are a
table (df 1–30 exactly, then 40, 60, 120 and the normal limit); between two rows the smaller df's
quantile is used, which widens the interval a little rather than narrowing it.
`tests/follower/sim/test_spread.py` checks every row against the t density, integrated numerically.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

# Two-sided 95 % quantiles t(0.975, df) of Student's t, to three decimals.
T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
    40: 2.021, 60: 2.000, 120: 1.980,
}
NORMAL_975 = 1.960
_ROWS = sorted(T_975)


def t_quantile(df: int) -> float:
    """t(0.975, df): the multiplier of the standard error for a two-sided 95 % interval with `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"a t interval needs at least one degree of freedom (two values), got df={df}")
    if df > _ROWS[-1]:
        return NORMAL_975
    return T_975[_ROWS[bisect_right(_ROWS, df) - 1]]


@dataclass(frozen=True)
class Spread:
    """The mean of a figure over seeds, and the half-width of its 95 % interval (None with a single seed)."""

    mean: float
    half_width: float | None
    count: int

    @property
    def low(self) -> float:
        """The interval's lower end (the mean itself with a single seed)."""
        return self.mean - (self.half_width or 0.0)

    @property
    def high(self) -> float:
        """The interval's upper end (the mean itself with a single seed)."""
        return self.mean + (self.half_width or 0.0)


def spread(values: Iterable[float]) -> Spread | None:
    """Mean ± t(0.975, n−1) · s/√n of `values` (s: the sample standard deviation); None when there are none."""
    sample = [float(value) for value in values]
    if not sample:
        return None
    mean = statistics.fmean(sample)
    if len(sample) == 1:
        return Spread(mean, None, 1)
    half = t_quantile(len(sample) - 1) * statistics.stdev(sample) / math.sqrt(len(sample))
    return Spread(mean, half, len(sample))


def format_spread(value: Spread | None, fmt: str, signed: bool = False) -> str:
    """`mean ± half-width` in `fmt` (the mean alone with one seed; `–` when nothing was measured); `signed`: the
    mean with its sign, as a difference."""
    if value is None:
        return "–"
    mean = (fmt.replace("{:", "{:+") if signed else fmt).format(value.mean)
    return mean if value.half_width is None else f"{mean} ± {fmt.format(value.half_width)}"
