"""YARN's own agents as a decision source for the simulator's YARN rows (follower.sim.peers.DecisionSource).

The simulator's production reservations go through one of YARN's agents by the harness, in arrival order, on a
fresh YARN plan laid over the scenario's cluster; each answer comes back as a decision record on the simulator's
own reservation (its atoms' labels and bundles), for the simulator to replay.

YARN is asked for each reservation as our plan's step grid sees it: the arrival rounded up to a step and the
deadline down (our agents place on whole steps inside the window; YARN's would place from the arrival's exact
millisecond, off the plan's steps, where no lease of ours can say it). What YARN cannot say is dropped or refused,
and noted: an atom's parallelism cap `h` below its container count is
dropped (YARN runs as many containers of a request at once as fit), names of stages, `user` and `value` have no
YARN field; a reservation with no YARN form at all (a bundle other than memory and vcores, say) is rejected as
`invalid` with the reason. Every answer YARN gives that is no lease of whole gangs is noted too (the checker
then says what is wrong with the plan).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any as AnyType

from planner.core.compile import Clock
from planner.core.decision import Decision, Reason
from planner.core.plan import Allocation
from rdl.cluster import Cluster
from rdl.forms.yarn import to_yarn
from rdl.tree import Absolute, Atom, Expr, Reservation, Window, labelled_atoms
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
    capped = aligned = 0
    for reservation in reservations:
        copy, dropped = yarn_form(reservation, cluster)
        aligned += copy.arrival != reservation.arrival or copy.deadline != reservation.deadline
        try:
            to_yarn(copy)
        except ValueError as error:
            refused[reservation.name] = str(error)
            continue
        shaped[reservation.name], capped = copy, capped + dropped
    notes = [f"{capped} reservations: a parallelism cap `h` dropped (YARN cannot say it)"] if capped else []
    notes += [f"{aligned} reservations: window narrowed to whole plan steps for YARN"] if aligned else []
    notes += [f"{name}: no YARN form: {why}" for name, why in refused.items()]
    answered, problems = _answers(agent, cluster, list(shaped.values()), {r.name: r for r in reservations})
    clock = Clock(cluster.start, cluster.step, cluster.steps)
    records = []
    for reservation in reservations:
        made = answered.get(reservation.name) or Decision(
            reservation.name, False, reason=Reason("invalid", f"YARN cannot take it: {refused[reservation.name]}"),
            extra={"agent": agent})
        records.append(made.to_json(clock))
    return records, notes + problems


def yarn_form(reservation: Reservation, cluster: Cluster) -> tuple[Reservation, int]:
    """The reservation in YARN's plan queue, its window on whole steps of the cluster's plan, with every `h` below
    the atom's container count dropped; and whether one was."""
    body, dropped = _uncapped(reservation.body)
    arrival, deadline = reservation.arrival, reservation.deadline
    if isinstance(arrival, Absolute):
        arrival = Absolute(_on_step(cluster, arrival.instant, math.ceil))
    if isinstance(deadline, Absolute):
        deadline = Absolute(_on_step(cluster, deadline.instant, math.floor))
    return replace(reservation, body=body, queue=QUEUE, arrival=arrival, deadline=deadline), int(dropped)


def _on_step(cluster: Cluster, instant: datetime, rounding: Callable[[float], int]) -> datetime:
    """The instant rounded (up or down) to a step boundary of the cluster's plan."""
    steps = rounding((instant - cluster.start) / timedelta(seconds=cluster.step) + (-1e-9 if rounding is math.ceil
                                                                                    else 1e-9))
    return cluster.start + timedelta(seconds=steps * cluster.step)


def _uncapped(node: Expr) -> tuple[Expr, bool]:
    if isinstance(node, Atom):
        containers = node.work / node.lease if node.lease else None
        if node.parallelism is None or node.parallelism == containers:
            return node, False
        return replace(node, parallelism=None), True
    if isinstance(node, Window):
        child, dropped = _uncapped(node.child)
        return replace(node, child=child), dropped
    found = [_uncapped(child) for child in node.children]
    return replace(node, children=tuple(c for c, _ in found)), any(d for _, d in found)  # type: ignore[call-arg]


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
