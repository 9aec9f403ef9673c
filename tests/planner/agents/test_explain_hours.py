"""A capacity rejection's bundle-hours read as people write them (explain.bundle_hours): one decimal from ten on,
three significant digits below, never an exponent; and the free amount and the needed one never read alike."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from planner.admission import Planner
from planner.agents.explain import _apart, bundle_hours
from tests.planner.support import make_cluster, parse

STEPS = st.sampled_from([1, 10, 60, 300, 3600])


@given(count=st.integers(0, 10**9), step=STEPS)
def test_bundle_hours_round_to_what_a_person_reads(count: int, step: int) -> None:
    amount = count * step / 3600
    text = bundle_hours(amount)
    assert "e" not in text and not text.endswith(".0")
    read = float(text.replace(",", ""))
    if amount >= 10:
        assert len(text.partition(".")[2]) <= 1 and abs(read - amount) <= 0.05 + 1e-9
    else:
        assert abs(read - amount) <= amount * 5e-3


@given(less=st.integers(0, 10**7), more=st.integers(1, 10**7), step=STEPS)
def test_the_free_amount_never_reads_as_the_needed_one(less: int, more: int, step: int) -> None:
    """Bundle-steps free against bundle-steps needed, fewer free: the two texts differ, and each is its amount to
    the digits it shows."""
    less, more = sorted((less, more))
    if less == more:
        less -= 1
    free, need = _apart(less * step / 3600, more * step / 3600)
    assert free != need
    assert float(free.replace(",", "")) < float(need.replace(",", ""))


def test_a_rejection_at_minute_steps_names_its_bundle_hours_to_the_hundredth() -> None:
    """95 free bundle-minutes are 1.58 bundle-hours, not 1.58333."""
    planner = Planner(make_cluster({"vcores": "2"}, steps=180))
    held = planner.submit(parse("reservation hold { atom(b={vcores: 1}, h=1, w=3h) }")[0], "gree")
    assert held.accepted
    rejected = planner.submit(parse("reservation late deadline=+95m { atom(b={vcores: 1}, w=2h) }")[0], "gree")
    assert rejected.reason is not None
    assert "only 1.58 of the 2 bundle-hours it needs are free there" in rejected.reason.message, \
        rejected.reason.message
