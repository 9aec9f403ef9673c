"""Agents against a brute-force oracle on tiny instances.

One resource, 4–8 one-minute steps, capacity ≤ 4, 0–2 pinned blocker reservations, then one
reservation of 1–3 atoms in order/all/any (with gaps, windows, g, h, l). The oracle
(tests/planner/agents/bruteforce.py) enumerates every valid placement from rdl.md alone.

- Soundness, every agent: a reservation with no valid placement is rejected, and every plan
  passes the checker.
- Completeness: a reservation with a valid placement is accepted. Exact agents must never
  miss; the greedy agents (GREE, GREE-L) are heuristics and do miss a few, pinned below as
  minimal strict-xfail reproducers, with the miss rate bounded so it cannot silently grow.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any as AnyType

import pytest

from planner.core.check import check_plan
from tests.planner.agents.bruteforce import Instance, feasible, random_instance, witness
from tests.planner.support import GREEDY_AGENTS, at, make_cluster, parse, pinned, run_plan, use_of, xfail_greedy

SEED = 20261123
INSTANCES = 400
GREEDY_MISS_RATE = 0.02  # of the instances that have a valid placement


@dataclass(frozen=True)
class Outcome:
    instance: Instance
    free: tuple[int, ...]
    feasible: bool
    record: dict[str, AnyType]
    violations: tuple[str, ...]

    def report(self) -> str:
        return (f"{self.instance.describe()}\nfree after blockers: {list(self.free)}\n"
                f"a valid placement: {witness(self.instance, list(self.free))}\nagent answered: {self.record}\n"
                f"violations: {list(self.violations)}")


def _solve(instance: Instance, agent: str) -> Outcome:
    cluster = make_cluster(*instance.cluster_args())
    run = run_plan(cluster, "\n".join(b.text(f"blocker{i}") for i, b in enumerate(instance.blockers)), agent)
    held = use_of(cluster, run.decisions)[0]
    free = tuple(int(c - u) for c, u in zip(instance.capacity_profile(), held, strict=True))
    (record,) = run.submit(instance.reservation_text())
    return Outcome(instance, free, feasible(instance, list(free)), record, tuple(run.violations))


@functools.cache
def outcomes(agent: str, seed: int = SEED, count: int = INSTANCES) -> tuple[Outcome, ...]:
    rng = random.Random(seed)
    return tuple(_solve(random_instance(rng), agent) for _ in range(count))


def test_the_sample_is_informative(agent: str) -> None:
    found = outcomes(agent)
    assert sum(o.feasible for o in found) >= INSTANCES // 4
    assert sum(not o.feasible for o in found) >= INSTANCES // 4


def test_every_plan_passes_the_checker(agent: str) -> None:
    bad = [o.report() for o in outcomes(agent) if o.violations]
    assert bad == [], "\n\n".join(bad[:3])


def test_no_placement_means_rejected(agent: str) -> None:
    bad = [o.report() for o in outcomes(agent) if not o.feasible and o.record["accepted"]]
    assert bad == [], "\n\n".join(bad[:3])


def test_the_two_enumerations_of_the_oracle_agree() -> None:
    # `feasible` (deduplicated spans) and `witness` (plain depth-first search) are written separately.
    rng = random.Random(SEED)
    for _ in range(INSTANCES):
        instance = random_instance(rng)
        free = instance.capacity_profile()
        assert feasible(instance, free) == (witness(instance, free) is not None), instance.describe()


def test_a_placement_means_accepted(agent: str) -> None:
    missed = [o.report() for o in outcomes(agent) if o.feasible and not o.record["accepted"]]
    assert missed == [], f"{len(missed)} missed, first:\n" + "\n\n".join(missed[:3])


def test_greedy_misses_are_rare(agent: str) -> None:
    if agent not in GREEDY_AGENTS:
        pytest.skip("exact agents are held to zero misses above")
    found = outcomes(agent)
    possible = [o for o in found if o.feasible]
    missed = [o for o in possible if not o.record["accepted"]]
    assert len(missed) <= GREEDY_MISS_RATE * len(possible), "\n\n".join(o.report() for o in missed[:3])


def test_rejections_of_feasible_reservations_are_capacity_rejections(agent: str) -> None:
    for o in outcomes(agent):
        if o.feasible and not o.record["accepted"]:
            assert o.record["reason"]["code"] in ("capacity", "timeout"), o.report()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_brute_force_at_length(agent: str, seed: int) -> None:
    found = outcomes(agent, seed, 3000)
    assert [o.report() for o in found if o.violations] == []
    assert [o.report() for o in found if not o.feasible and o.record["accepted"]] == []
    possible = [o for o in found if o.feasible]
    missed = [o for o in possible if not o.record["accepted"]]
    allowed = GREEDY_MISS_RATE * len(possible) if agent in GREEDY_AGENTS else 0
    assert len(missed) <= allowed, "\n\n".join(o.report() for o in missed[:3])


# -- minimal reproducers of the greedy misses ----------------------------------------------------------
# Each comes with a hand-made valid placement that the checker accepts (so the instance is surely
# feasible), and a strict xfail for the greedy agents only.

LATEST = pinned("blocker", 5, 1, 1) + """
reservation r { order(a: atom(b={vcores: 1}, w=1m), b: atom(b={vcores: 1}, l=3m, w=3m)) }"""

ALL_HOLE = f"""reservation r {{ all(a: atom(b={{vcores: 2}}, l=2m, w=4m),
                           x: window(s={at(2)}, e={at(4)}, atom(b={{vcores: 2}}, l=2m, w=2m))) }}"""

STAGGER = pinned("b0", 3, 3, 1) + "\n" + pinned("b1", 2, 1, 2) + """
reservation r { order(a0: atom(b={vcores: 1}, g=3, w=3m), a1: atom(b={vcores: 1}, h=2, l=2m, w=4m), gap=0m) }"""

# (capacity, steps, RDL, a valid placement: reservation -> [(atom, start, end, bundles, vcores held)])
CASES = {
    # capacity 1, 6 steps, step 5 taken: `b` (3 steps) fits at [2,5) after `a` at [1,2). GREE's "latest" tiles
    # [0,6) from its end in 3-step tiles, finds [3,6) blocked and takes [0,3) - not the latest placement, which
    # is [2,5) - so `a` has no room before it; the next candidate only shrinks the bound further.
    "latest-is-not-latest": ({"vcores": 1}, 6, LATEST, {
        "blocker": [("0.0", 5, 6, 1, 1)], "r": [("a", 1, 2, 1, 1), ("b", 2, 5, 1, 1)]}),
    # capacity 2, 6 steps: `x` is pinned to [2,4), so `a` (2 leases of the whole cluster) must take [0,2) and
    # [4,6). `all` places the heavier `a` first, latest-first ([2,6), [1,5), [0,4)), never leaving a hole.
    "all-never-leaves-a-hole": ({"vcores": 2}, 6, ALL_HOLE, {
        "r": [("a", 0, 2, 1, 2), ("a", 4, 6, 1, 2), ("x", 2, 4, 1, 2)]}),
    # capacity 3, 8 steps, free [3,3,1,2,2,2,3,3]: with gap=0 `a1` must start right where `a0` (3 bundles) ends,
    # which only works with a1's two leases staggered, [1,3) and [3,5); the greedy only tries tile-aligned shapes.
    "gap-zero-needs-staggered-leases": ({"vcores": 3}, 8, STAGGER, {
        "b0": [("0.0", 3, 6, 1, 1)], "b1": [("0.0", 2, 3, 2, 2)],
        "r": [("a0", 0, 1, 3, 3), ("a1", 1, 3, 1, 1), ("a1", 3, 5, 1, 1)]}),
}


KNOWN_GREEDY_MISSES = {"gap-zero-needs-staggered-leases"}


@pytest.mark.parametrize("case", list(CASES))
def test_reproducer_is_feasible(case: str) -> None:
    capacity, steps, text, placement = CASES[case]
    records = [{"reservation": name, "accepted": True, "allocations": [
        {"atom": atom, "start": at(start), "end": at(end), "bundles": bundles, "resources": {"vcores": vcores}}
        for atom, start, end, bundles, vcores in leases]} for name, leases in placement.items()]
    assert check_plan(make_cluster(capacity, steps), parse(text), records) == []


@pytest.mark.parametrize("case", list(CASES))
def test_reproducer_is_accepted(agent: str, case: str, request: pytest.FixtureRequest) -> None:
    capacity, steps, text, _ = CASES[case]
    if case in KNOWN_GREEDY_MISSES:
        xfail_greedy(request, agent, case)
    run = run_plan(make_cluster(capacity, steps), text, agent)
    assert run.violations == []
    assert all(d["accepted"] for d in run.decisions), run.decisions[-1]
