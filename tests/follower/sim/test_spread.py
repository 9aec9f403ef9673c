"""The 95 % interval over seeds: its table of t quantiles and the interval on hand-made values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from follower.sim.spread import NORMAL_975, T_975, spread, t_quantile


def coverage(q: float, df: int) -> float:
    """P(|T| ≤ q) for Student's t with `df` degrees of freedom, by integrating its density (the trapezoid rule)."""
    x = np.linspace(-q, q, 400_001)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    density = np.exp(log_norm - (df + 1) / 2 * np.log1p(x * x / df))
    return float(np.sum((density[1:] + density[:-1]) / 2 * np.diff(x)))


@pytest.mark.parametrize("df", sorted(T_975))
def test_every_tabled_quantile_covers_95_percent(df: int) -> None:
    assert coverage(T_975[df], df) == pytest.approx(0.95, abs=2e-4)


def test_between_rows_the_smaller_df_widens_the_interval_and_beyond_the_table_the_normal_limit() -> None:
    assert t_quantile(45) == T_975[40] and t_quantile(45) > t_quantile(60)
    assert t_quantile(500) == NORMAL_975
    with pytest.raises(ValueError, match="at least one degree of freedom"):
        t_quantile(0)


def test_the_interval_of_hand_made_values() -> None:
    # mean 0.9; sample sd = sqrt(0.025 / 4) = 0.0790569; half-width = 2.776 * 0.0790569 / sqrt(5) = 0.0981469
    values = [0.8, 0.85, 0.9, 0.95, 1.0]
    result = spread(values)
    assert result is not None and result.count == 5
    assert result.mean == pytest.approx(0.9)
    assert result.half_width == pytest.approx(0.0981469, abs=1e-6)
    assert (result.low, result.high) == pytest.approx((0.9 - 0.0981469, 0.9 + 0.0981469), abs=1e-6)


def test_one_value_has_no_interval_and_identical_values_a_zero_one() -> None:
    single = spread([3.0])
    assert single is not None and single.half_width is None and single.low == single.high == 3.0
    same = spread([2.0, 2.0, 2.0])
    assert same is not None and same.half_width == 0.0
    assert spread([]) is None
