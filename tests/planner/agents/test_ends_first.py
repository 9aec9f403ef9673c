"""The earliest-deadline search's guess is the earliest end of any placement for the shapes `ends_first` names
(deadline.py), so it skips the probe a step before it there, and GREE places those shapes by it wherever `sure_to_fit`
says so, so it skips that probe too: held to the brute-force oracle on tiny instances and to GREE on random plans."""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from planner.admission import Planner
from planner.agents.deadline import PROBE_BUDGET, Probes, asap_finish, ends_first, gapless_end, sure_to_fit
from planner.agents.greedy.agent import GreedyAgent
from planner.agents.greedy.placer import DEFAULT_BUDGET
from planner.core.compile import compile_reservation, ungapped
from planner.core.plan import Plan
from rdl import parse_cluster
from rdl.tree import Reservation
from tests.planner.agents.bruteforce import AtomSpec, Blocker, GroupSpec, Instance, Node, random_instance, spans
from tests.planner.agents.test_properties import Scenario, scenarios
from tests.planner.support import make_cluster, parse

SEED = 20261128
INSTANCES = 1000


def _planned(instance: Instance) -> tuple[Planner, list[int]]:
    """A planner holding the instance's blockers (those that fit), and the vcores free at each step."""
    planner = Planner(make_cluster(*instance.cluster_args()))
    for index, blocker in enumerate(instance.blockers):
        planner.submit(parse(blocker.text(f"blocker{index}"))[0], "gree")
    free = planner.plan.free_in(0, instance.steps)[0]
    return planner, [round(float(value)) for value in free]


def _earliest_end(instance: Instance, free: list[int]) -> int | None:
    """The oracle: the earliest last end over every valid placement with the deadline moved to the horizon."""
    body, lo = instance.body, 0
    if instance.window is not None:  # the outer window ends at the horizon (deadline.with_deadline)
        lo = instance.window[0]
    elif instance.deadline is None and isinstance(body, AtomSpec) and body.window is not None:
        body = replace(body, window=(body.window[0], instance.steps))  # the atom's window is the outer one
    ends = [end for _, end, _ in spans(body, (lo, instance.steps), free)]
    return min(ends) if ends else None


def _wrapped(rng: random.Random, node: Node, chance: float) -> Node:
    """`node`, or with `chance` an `all` or an `order` (maybe with a gap) of it alone; a group's children too."""
    if isinstance(node, GroupSpec):
        node = replace(node, children=tuple(_wrapped(rng, child, chance / 2) for child in node.children))
    if rng.random() >= chance:
        return node
    kind = rng.choice(["all", "order"])
    return GroupSpec(kind, (node,), rng.choice([None, 0, 1]) if kind == "order" else None)


def _cases() -> list[tuple[Instance, Planner, list[int]]]:
    """The tiny random instances, half of them with groups of one child here and there (YARN's streams are full of
    them: an R_ALL of one request)."""
    rng = random.Random(SEED)
    instances = [random_instance(rng) for _ in range(INSTANCES)]
    instances = [replace(instance, body=_wrapped(rng, instance.body, 0.7)) if rng.random() < 1 / 2 else instance
                 for instance in instances]
    return [(instance, *_planned(instance)) for instance in instances]


def _has_one_child_group(node: Node) -> bool:
    return isinstance(node, GroupSpec) and (len(node.children) == 1 or any(map(_has_one_child_group, node.children)))


def test_the_guess_is_the_earliest_end_of_any_placement_where_ends_first_says_so() -> None:
    held = alone = 0
    for instance, planner, free in _cases():
        plan = planner.plan
        reservation = parse(instance.reservation_text())[0]
        task = Probes(plan, reservation, plan.now).task()
        if task is None:
            continue
        guess, earliest = asap_finish(plan, reservation, plan.now), _earliest_end(instance, free)
        if ends_first(task):
            held += 1
            alone += _has_one_child_group(instance.body)
            assert guess == earliest, instance.describe()
        elif guess is not None:  # elsewhere a real placement, so never before the earliest (the oracle agrees)
            assert earliest is not None and guess >= earliest, instance.describe()
    assert held >= 100 and alone >= 40  # the sample reaches the shapes it holds, groups of one child among them


def test_a_rejection_of_those_shapes_is_offered_the_earliest_end_of_any_placement() -> None:
    """The search then answers without trying a step earlier (GREE without trying the guess either): what it
    offers is still the earliest deadline any placement meets, as the oracle finds it."""
    offered = 0
    rng = random.Random(SEED)
    for case, planner, free in _cases():
        earliest = _earliest_end(replace(case, window=None, deadline=case.steps), free)
        if earliest is None or earliest < 2:
            continue
        instance = replace(case, window=None, deadline=rng.randint(max(1, earliest - 3), earliest - 1))  # too soon
        reservation = parse(instance.reservation_text())[0]
        decision = planner.submit(reservation, "gree", dry_run=True)
        if decision.accepted or decision.reason is None or decision.reason.earliest_deadline is None:
            continue
        plan = planner.plan
        if not ends_first(Probes(plan, reservation, plan.now).task()):
            continue
        offered += 1
        assert decision.reason.earliest_deadline == plan.clock.at(earliest), instance.describe()
    assert offered >= 30


def _without_gaps(node: Node) -> Node:
    if isinstance(node, GroupSpec):
        return replace(node, children=tuple(map(_without_gaps, node.children)), gap=None)
    return node


def _gapped_cases() -> list[tuple[Instance, Planner, list[int]]]:
    """Tiny instances whose request is an `order` of two or three atoms with a gap of 0 or 1 step, due by the
    horizon, on one vcore held at a few single steps: where a gap often decides how early the order can end."""
    rng = random.Random(SEED + 1)
    instances = []
    for _ in range(200):
        steps = rng.randint(8, 12)
        blips = tuple(Blocker(start, 1, 1) for start in sorted(rng.sample(range(steps), rng.randint(1, 4))))
        atoms = []
        for index in range(rng.randint(2, 3)):
            length = rng.randint(1, 2)
            atoms.append(AtomSpec(f"s{index}", 1, 1, None, length, length * rng.randint(1, 2)))
        body = GroupSpec("order", tuple(atoms), rng.choice([0, 1]))
        instances.append(Instance(steps, 1, (), blips, body, None, steps))
    return [(instance, *_planned(instance)) for instance in instances]


def test_without_its_gaps_an_order_ends_no_later_than_any_placement_with_them() -> None:
    """deadline.gapless_end, where the search starts when the pass with the gaps finds nothing: the earliest end of
    the request without its gaps (the oracle on the same body, gaps dropped), never after the earliest end of any
    placement with them, so no deadline before it is one the search skips; often before it, where a gap decides."""
    held = placed = tighter = 0
    for instance, planner, free in _cases() + _gapped_cases():
        plan = planner.plan
        reservation = parse(instance.reservation_text())[0]
        probes = Probes(plan, reservation, plan.now)
        task = probes.task()
        if task is None or ends_first(task) or not ends_first(ungapped(task)):
            assert gapless_end(plan, probes.relaxed) is None  # no gap to drop, or nothing it could tell
            continue
        held += 1
        floor = gapless_end(plan, probes.relaxed)
        assert floor == _earliest_end(replace(instance, body=_without_gaps(instance.body)), free), instance.describe()
        earliest = _earliest_end(instance, free)
        if earliest is not None:
            placed += 1
            assert floor is not None and floor <= earliest, instance.describe()
            tighter += floor < earliest
    assert held >= 250 and placed >= 100 and tighter >= 10


ALL = Instance(6, 4, (), (), GroupSpec("all", (AtomSpec("a0", 1, 1, 2, 1, 2, (0, 4)), AtomSpec("a1", 1, 3, 4, 2, 9))),
               window=(1, 5))
ORDER_OF_ANY = Instance(8, 3, (), (Blocker(3, 5, 2),), GroupSpec("order", (
    AtomSpec("a0", 1, 2, 4, 1, 2),
    GroupSpec("any", (AtomSpec("a1", 1, 1, 2, 2, 2), AtomSpec("a2", 1, 2, None, 1, 1))))), deadline=8)


@pytest.mark.parametrize("instance", [ALL, ORDER_OF_ANY], ids=["all", "order-of-any"])
def test_where_ends_first_says_no_the_guess_can_end_after_the_earliest_placement(instance: Instance) -> None:
    """Why `all` and an `any` inside an `order` are left out (found by the oracle): an `all`'s children crowd each
    other, and an inner `any` takes its cheapest alternative, not its earliest; the guess then ends a step late."""
    planner, free = _planned(instance)
    plan = planner.plan
    reservation = parse(instance.reservation_text())[0]
    task = Probes(plan, reservation, plan.now).task()
    assert task is not None and not ends_first(task)
    earliest = _earliest_end(instance, free)
    guess = asap_finish(plan, reservation, plan.now)
    assert earliest is not None and guess is not None and guess > earliest


def _sure(prober: GreedyAgent, plan: Plan, reservation: Reservation) -> int | None:
    """The guess of a request whose placement by it the prober promises without trying (deadline.sure_to_fit), or
    None."""
    probes = Probes(plan, reservation, plan.now)
    task = probes.task()
    if not (ends_first(task) and sure_to_fit(prober, plan, task)):
        return None
    return asap_finish(plan, reservation, plan.now, probes.relaxed)


# The earliest-deadline search's probers (deadline.earliest_deadline): GREE's, and GREE-L's, which promises less
PROBERS = {"gree": GreedyAgent("gree", flat=False, budget=PROBE_BUDGET, reasons=False),
           "gree-l": GreedyAgent("gree-l", flat=True, budget=PROBE_BUDGET, reasons=False, refutes=False)}


@pytest.mark.parametrize(("agent", "least"), [("gree", 100), ("gree-l", 40)])
def test_the_prober_places_those_shapes_by_their_guess_where_it_promises_to(agent: str, least: int) -> None:
    prober, promised = PROBERS[agent], 0
    for instance, planner, _ in _cases():
        reservation = parse(instance.reservation_text())[0]
        guess = _sure(prober, planner.plan, reservation)
        if guess is not None:
            promised += 1
            assert Probes(planner.plan, reservation, planner.plan.now).fits(prober, guess), instance.describe()
    assert promised >= least


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_on_random_plans_the_prober_places_by_the_guess_where_it_promises_to(scenario: Scenario) -> None:
    """The same on richer plans: several resources, gangs, parallelism, recurring neighbours, a fuller plan each
    request."""
    planner = Planner(scenario.cluster(), now=scenario.clock())
    for reservation in parse(scenario.text):
        for prober in PROBERS.values():
            guess = _sure(prober, planner.plan, reservation)
            if guess is not None:
                assert Probes(planner.plan, reservation, planner.plan.now).fits(prober, guess), reservation
        planner.submit(reservation, "gree")


@pytest.mark.parametrize(("agent", "least"), [("gree", 200), ("gree-l", 100)])
def test_on_the_benchmark_week_every_promised_guess_is_the_earliest_deadline(agent: str, least: int) -> None:
    """benchmarks/admission.py's week on a quarter of its cluster (most requests rejected): wherever the agent offers
    its guess untried (GREE 655 rejections), placing the request there fits and a step earlier does not."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import admission  # benchmarks/ is a folder of scripts, not a package

    cluster = parse_cluster(admission.CLUSTER.replace("{memory: 4TiB, vcores: 2048}", "{memory: 1TiB, vcores: 512}"),
                            "quarter.yaml")
    planner, promised = Planner(cluster), 0
    for reservation in admission.workload(2500, 3):
        decision = planner.submit(reservation, agent, validated=True)
        if decision.accepted or decision.reason is None or decision.reason.earliest_deadline is None:
            continue
        plan, prober = planner.plan, PROBERS[agent]
        probes = Probes(plan, reservation, plan.now)
        if not (ends_first(probes.task()) and sure_to_fit(prober, plan, probes.task())):
            continue
        promised += 1
        step = round((decision.reason.earliest_deadline - plan.clock.origin).total_seconds()) // plan.clock.step
        assert probes.fits(prober, step) and not probes.fits(prober, step - 1), reservation.name
    assert promised >= least


@pytest.mark.parametrize(("alternatives", "expected"), [(DEFAULT_BUDGET, True), (DEFAULT_BUDGET + 1, False)])
def test_an_any_wider_than_the_greedy_budget_is_not_held_to_its_guess(alternatives: int, expected: bool) -> None:
    """The greedy pass places each alternative once out of one budget: past it, an alternative that was never
    placed could end first, so the guess is no longer the earliest end."""
    atoms = ", ".join(f"a{i}: atom(b={{vcores: 1}}, l=1m, w=1m)" for i in range(alternatives))
    planner = Planner(make_cluster({"vcores": 4}, steps=60))
    plan = planner.plan
    relaxed = parse(f"reservation r {{ any({atoms}) }}")[0]
    task = compile_reservation(relaxed, plan.now, plan.clock, plan.now_step, plan.resources)[0].task
    assert ends_first(task) is expected
