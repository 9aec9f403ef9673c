"""Resource vectors: arithmetic with missing names as zero, fitting, dominant share."""

from __future__ import annotations

import math

from follower.scheduler import Resources


def test_missing_names_count_as_zero_in_arithmetic() -> None:
    total = Resources({"memory": 1024}) + Resources({"vcores": 2})
    assert total == Resources({"memory": 1024, "vcores": 2})
    assert Resources({"memory": 1024}) - Resources({"vcores": 1}) == Resources({"memory": 1024, "vcores": -1})
    assert Resources({"memory": 512, "vcores": 1}) * 3 == Resources({"memory": 1536, "vcores": 3})


def test_fits_in_compares_every_resource_and_treats_missing_capacity_as_none() -> None:
    assert Resources({"memory": 1024, "vcores": 1}).fits_in({"memory": 1024, "vcores": 4})
    assert not Resources({"memory": 1025}).fits_in({"memory": 1024, "vcores": 4})
    assert not Resources({"gpus": 1}).fits_in({"memory": 1024})
    assert Resources.zero(["memory", "vcores"]).fits_in({})


def test_dominant_share_is_the_largest_fraction_and_infinite_for_a_resource_the_total_lacks() -> None:
    assert Resources({"memory": 512, "vcores": 3}).dominant_share({"memory": 1024, "vcores": 4}) == 0.75
    assert Resources({"gpus": 1}).dominant_share({"memory": 1}) == math.inf
    assert Resources().dominant_share({"memory": 1}) == 0.0


def test_zero_and_is_zero() -> None:
    assert Resources.zero(["memory"]).is_zero()
    assert (Resources({"memory": 1.5}) - Resources({"memory": 1.5})).is_zero()
    assert not Resources({"vcores": 1}).is_zero()
