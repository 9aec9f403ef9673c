"""The sharing policy checked over the steps a new reservation holds (and a window around them) against the check
over the whole horizon: the same violation, or none, every time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.core.policy import check, check_span
from rdl.policy import parse_policy

SHARES = st.sampled_from([None, "25%", "50%", "75%"])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), steps=st.integers(1, 40), window=st.integers(1, 12), instantaneous=SHARES, average=SHARES)
def test_checking_the_span_gives_the_whole_horizons_answer(data: st.DataObject, steps: int, window: int,
                                                           instantaneous: str | None, average: str | None) -> None:
    raw: dict = {"user_limits": {"instantaneous": instantaneous, "average": average}}
    if average is not None:
        raw["user_limits"]["window"] = f"{window}m"
    policy = parse_policy(raw, 60)
    whole = st.integers(0, 8).map(float)
    capacity = data.draw(hnp.arrays(np.float64, (2, steps), elements=st.integers(0, 8).map(float)))
    used = data.draw(hnp.arrays(np.float64, (2, steps), elements=whole))
    lo = data.draw(st.integers(0, steps - 1))
    hi = data.draw(st.integers(lo + 1, steps))
    added = data.draw(hnp.arrays(np.float64, (2, hi - lo), elements=st.integers(0, 4).map(float)))
    full = np.zeros_like(used)
    full[:, lo:hi] = added
    assert check_span(policy, "u", capacity, used, added, lo) == check(policy, "u", capacity, used + full,
                                                                        added=full)
