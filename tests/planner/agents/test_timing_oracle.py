"""Validation's checks of time and volume against the brute-force oracle: a reservation it calls impossible for its
windows, order and gaps (rdl/timing.py), or for the cluster it needs over a window, has no valid placement on an empty
cluster; and each catches some that the forward pass (earliest_finish) and the critical path let through."""

from __future__ import annotations

import random
from dataclasses import replace

import rdl
from rdl.errors import RDLErrors
from tests.planner.agents.bruteforce import AtomSpec, GroupSpec, Instance, feasible, random_instance
from tests.planner.support import make_cluster

GAPS = "gaps of its pieces contradict each other"
VOLUME = "needs the whole cluster's"


def _validation_error(text: str, cluster: rdl.Cluster) -> str | None:
    try:
        rdl.validate(rdl.parse_text(text), cluster)
    except RDLErrors as errors:
        return "; ".join(e.message for e in errors.errors)
    return None


def _windowed_order(rng: random.Random) -> Instance:
    """An `order` with a gap of two or three small atoms, most in windows of their own, on 10 steps."""
    steps, atoms = 10, []
    for index in range(rng.randint(2, 3)):
        g, length = rng.randint(1, 2), rng.randint(1, 3)
        lo = rng.randrange(steps - 1)
        window = (lo, rng.randint(lo + 1, steps)) if rng.random() < 0.8 else None
        atoms.append(AtomSpec(f"a{index}", 1, g, rng.choice([None, g, 2 * g]), length,
                              g * length * rng.randint(1, 2), window))
    return Instance(steps, 2, (), (), GroupSpec("order", tuple(atoms), rng.randint(0, 2)))


def test_what_the_timing_check_refuses_has_no_placement_on_an_empty_cluster() -> None:
    rng = random.Random(31)
    refused = {GAPS: 0, VOLUME: 0}
    for index in range(2000):
        instance = replace(random_instance(rng), blockers=()) if index % 2 else _windowed_order(rng)
        cluster = make_cluster(*instance.cluster_args())
        error = _validation_error(instance.reservation_text(), cluster)
        for check in refused:
            if error is not None and check in error:
                refused[check] += 1
                assert not feasible(instance, instance.capacity_profile()), instance.describe()
    assert min(refused.values()) >= 5, refused


def test_a_gap_the_stage_before_cannot_reach_is_bad_input() -> None:
    cluster = make_cluster({"vcores": 4}, steps=300)
    text = """reservation r { order(
        a: window(e=2026-11-23T01:00:00Z, atom(b={vcores: 1}, l=1h, w=1h)),
        b: window(s=2026-11-23T03:00:00Z, e=2026-11-23T04:00:00Z, atom(b={vcores: 1}, l=1h, w=1h)), gap=1h) }"""
    error = _validation_error(text, cluster)
    assert error is not None and GAPS in error, error
    assert _validation_error(text.replace("gap=1h", "gap=2h"), cluster) is None
    assert _validation_error(text.replace("gap=1h", ""), cluster) is None
    # inside an `any`, an alternative that could never fit is never chosen, not an error
    inside = f"reservation r {{ any(x: {text.split('{', 1)[1].rsplit('}', 1)[0]}, y: atom(b={{vcores: 1}}, w=1h)) }}"
    assert _validation_error(inside, cluster) is None
