"""YARN's own agents as a decision source for the simulator's YARN rows (follower.sim.peers.DecisionSource).

The simulator's production reservations go through one of YARN's agents by the harness, in arrival order, on a
fresh YARN plan laid over the scenario's cluster; each answer comes back as a decision record on the simulator's
own reservation (its atoms' labels and bundles), for the simulator to replay.

YARN is asked for each reservation as our plan's step grid sees it: the arrival rounded up to a step and the
deadline down (our agents place on whole steps inside the window; YARN's would place from the arrival's exact
millisecond, off the plan's steps, where no lease of ours can say it), and its bundles rounded up to whole MB and
vcores (YARN counts no fractions). What YARN cannot say is dropped or refused, and noted: an atom's parallelism
cap `h` below its container count is dropped (YARN runs as many containers of a request at once as fit); names
of stages, `user` and `value` have no YARN field; a reservation with no YARN form at all (a bundle other than
memory and vcores, say), or one YARN's own checks refuse (a window that, on whole steps, is shorter than a
stage), is rejected as `invalid` with the reason. Every answer YARN gives that is no lease of whole gangs is
noted too (the checker then says what is wrong with the plan).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any as AnyType

from planner.core.compile import Clock
from planner.core.decision import Decision, Reason
from planner.core.plan import Allocation
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.forms.yarn import from_yarn, to_yarn
from rdl.tree import Absolute, Atom, Expr, Reservation, Resources, Window, labelled_atoms
from tests.peers.yarn import agent_harness as harness

AGENTS = {"yarn-greedy": "greedy", "yarn-greedy-right": "greedy-right", "yarn-aligned": "aligned"}
QUEUE = "dedicated"  # the queue of the YARN plan the harness lays over the cluster (plan_facts)


def yarn_decisions(agent: str, cluster: Cluster,
                   reservations: Sequence[Reservation]) -> tuple[list[dict[str, AnyType]], list[str]]:
    """YARN's agent `agent` (yarn-greedy, yarn-greedy-right, yarn-aligned) on the stream, in order: one decision
    record per reservation, and notes on what YARN could not take as it is. PeerUnavailable without java or mvn."""
    if agent not in AGENTS:
        raise ValueError(f"unknown YARN agent `{agent}`; use one of {', '.join(AGENTS)}")
    shaped: dict[str, Reservation] = {}
    refused: dict[str, str] = {}
    changed: Counter[str] = Counter()
    for reservation in reservations:
        copy, changes = yarn_form(reservation, cluster)
        try:
            from_yarn(to_yarn(copy))  # YARN's form, then YARN's own checks (ReservationInputValidator's)
        except ValueError as error:
            refused[reservation.name] = str(error)
            continue
        except RDLErrors as errors:
            refused[reservation.name] = "; ".join(e.headline() for e in errors.errors)
            continue
        shaped[reservation.name] = copy
        changed.update(changes)
    notes = [f"{count} reservations: {CHANGES[change]}" for change, count in sorted(changed.items())]
    notes += [f"{name}: not sent to YARN: {why}" for name, why in refused.items()]
    answered, problems = _answers(agent, cluster, list(shaped.values()), {r.name: r for r in reservations})
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    records = []
    for reservation in reservations:
        made = answered.get(reservation.name) or Decision(
            reservation.name, False, reason=Reason("invalid", f"YARN cannot take it: {refused[reservation.name]}"),
            extra={"agent": agent})
        records.append(made.to_json(clock))
    return records, notes + problems


CHANGES = {"bundle": "bundle rounded up to whole MB and vcores for YARN (it counts no fractions)",
           "h": "a parallelism cap `h` dropped (YARN cannot say it)",
           "window": "window narrowed to whole plan steps for YARN"}


def yarn_form(reservation: Reservation, cluster: Cluster) -> tuple[Reservation, set[str]]:
    """The reservation as YARN is asked for it, in its plan's queue, and what had to change (keys of CHANGES): the
    window on whole steps of the cluster's plan, bundles rounded up to whole MB and vcores (YARN rounds requests
    up too), every `h` below the atom's container count dropped."""
    changes: set[str] = set()
    body = _yarn_atoms(reservation.body, changes)
    arrival, deadline = reservation.arrival, reservation.deadline
    if isinstance(arrival, Absolute):
        arrival = Absolute(_on_step(cluster, arrival.instant, math.ceil))
    if isinstance(deadline, Absolute):
        deadline = Absolute(_on_step(cluster, deadline.instant, math.floor))
    if arrival != reservation.arrival or deadline != reservation.deadline:
        changes.add("window")
    return replace(reservation, body=body, queue=QUEUE, arrival=arrival, deadline=deadline), changes


def _on_step(cluster: Cluster, instant: datetime, rounding: Callable[[float], int]) -> datetime:
    """The instant rounded (up or down) to a step boundary of the cluster's plan."""
    steps = (instant - cluster.start) / timedelta(seconds=cluster.step)
    whole = rounding(steps - 1e-9 if rounding is math.ceil else steps + 1e-9)
    return cluster.start + timedelta(seconds=whole * cluster.step)


def _yarn_atoms(node: Expr, changes: set[str]) -> Expr:
    """The tree with each atom as YARN can hold it; what changed is added to `changes`."""
    if isinstance(node, Atom):
        whole = Resources.of({name: math.ceil(value - 1e-9) for name, value in node.bundle.items()})
        if whole != node.bundle:
            changes.add("bundle")
        containers = node.work / node.lease if node.lease else None
        capped = node.parallelism is not None and node.parallelism != containers
        if capped:
            changes.add("h")
        return replace(node, bundle=whole, parallelism=None if capped else node.parallelism)
    if isinstance(node, Window):
        return replace(node, child=_yarn_atoms(node.child, changes))
    return replace(node, children=tuple(_yarn_atoms(c, changes) for c in node.children))  # type: ignore[call-arg]


def _answers(agent: str, cluster: Cluster, shaped: list[Reservation],
             originals: dict[str, Reservation]) -> tuple[dict[str, Decision], list[str]]:
    """YARN's decisions on the YARN-shaped stream, on the original reservations; with what is wrong in them."""
    if not shaped:
        return {}, []
    stream = harness.Stream.of(shaped)
    answers = harness.run_yarn(cluster, stream, [AGENTS[agent]])[AGENTS[agent]]
    found, problems = {}, []
    for answer in answers:
        read_back = stream.reservations[answer.index]
        made, trouble = harness.decision(answer, read_back, cluster)
        problems += trouble
        problems += [f"{answer.name}: YARN crashed: {answer.exception}: {answer.message}"] if answer.crashed else []
        original = originals[read_back.name]
        found[original.name] = replace(_relabelled(made, read_back, original), extra={"agent": agent})
    return found, problems


def _relabelled(made: Decision, read_back: Reservation, original: Reservation) -> Decision:
    """The decision with its allocations on the original's atoms (YARN's form wraps and renames them, in order)."""
    pairs = zip(labelled_atoms(read_back.expr), labelled_atoms(original.expr), strict=True)
    labels = {theirs[1]: (ours[1], ours[2]) for theirs, ours in pairs}
    moved = tuple(Allocation(labels[a.atom][0], a.start, a.end, a.bundles, labels[a.atom][1].bundle, a.instance)
                  for a in made.allocations)
    return replace(made, allocations=moved)
