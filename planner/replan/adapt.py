"""Capacity changes inside the horizon, and adaptive replanning around them.

A capacity change (nodes lost, a rack down for maintenance) is read as an RDL resource vector
(`{vcores: 512, memory: 1TiB}`, memory units as in RDL), becomes part of the cluster file (the
change is appended to its `changes:` list), and the plan adapts to it:

1. the reservations whose leases now exceed capacity at some step are the *affected* ones (and,
   where the cluster file limits users' shares of capacity, every reservation of a user whose
   share the smaller capacity now exceeds);
2. they are taken out of the plan, then put back one by one, most important first (higher
   `priority` first, then the earlier accepted): each stays where it is if it still fits there,
   and only then is re-placed elsewhere in its window by a greedy agent, on the plan without the
   affected ones that are not back yet;
3. while some cannot be placed, the least important affected reservation (lowest `priority`,
   among equals the most recently accepted) is dropped and the rest are tried again; an
   unplaced least important one is dropped without retrying, since it holds nothing the others
   could use;
4. at the end, every dropped reservation is offered its old place or a new one on the final plan,
   most important first, so none is dropped that could stay: never more drops than needed.

A reservation already running (a lease that started before the plan's clock) is never moved: it
stays where it is if it fits, or is dropped. The instances of a recurring one are apart (rdl.md: each
instance in the horizon is its own decision): those that began stay where they are, and those yet to
begin that no longer fit are re-placed one by one, each in its own period; one that finds no place is
dropped alone, as its own rejected decision, and the series goes on (`missed`). Lowest priority first
holds here too: while a more important series misses an instance, a less important reservation is
dropped first if that lets the instance stay. YARN, for comparison, deletes the most recently
accepted reservations active at an overloaded instant until it fits, whatever their priority,
and never tries to move them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any as AnyType

import numpy as np
import yaml

from planner.agents.base import Agent
from planner.core.compile import series_instance
from planner.core.plan import Accepted, Allocation, Plan
from planner.core.policy import check
from rdl import config, units
from rdl.cluster import Cluster
from rdl.errors import RDLError, RDLErrors, Span
from rdl.syntax.lexer import Token
from rdl.syntax.parser import Parser
from rdl.tree import Resources

TOLERANCE = 1e-9  # quantities are whole MiB and counts; this only absorbs float noise


# -- reading a capacity change ----------------------------------------------------------------------


def parse_vector(text: str, source: str = "--set") -> dict[str, float]:
    """An RDL resource vector such as `{vcores: 512, memory: 1TiB}` (memory in MiB); raises RDLErrors."""
    sources = {source: text}
    try:
        parser = Parser(text, source)
        entries = parser.resource_entries()
        if parser.token.kind != "eof":
            raise RDLError(parser.token.span, f"unexpected {parser.token.describe()} after the resource vector",
                           expected="the end of the vector")
    except RDLError as error:
        raise RDLErrors([error], sources) from None
    key = Token.pinned("name", source, Span(source, 1, 1))
    resources = parser.resources(key, entries)
    parser.sink.raise_if_any(sources)
    assert resources is not None
    return dict(resources.items())


def capacity_at(cluster: Cluster, at: datetime) -> Resources:
    """The capacity the cluster file gives for the instant `at` (its changes applied)."""
    current = cluster.capacity
    for change in cluster.changes:  # sorted by time; a later one at the same instant wins
        if change.at <= at:
            current = change.capacity
    return current


def change_entry(at: datetime, capacity: Resources) -> str:
    """One `changes:` item of the cluster file, in flow style."""
    vector = ", ".join(f"{name}: {units.format_quantity(name, value)}" for name, value in capacity.items())
    return f"{{at: {units.format_instant(at)}, capacity: {{{vector}}}}}"


def appended_texts(text: str, entry: str) -> list[str]:
    """The cluster file's text with one more `changes:` item, best first: the caller keeps the first that checks.

    First appended as text, keeping the file's comments and layout; then by re-serialising YAML's
    node graph, which keeps every value as written (but not the comments), for layouts the first
    cannot append to.
    """
    found = []
    for append in (_append_text, _append_node):
        try:
            candidate = append(text, entry)
        except (yaml.YAMLError, ValueError, AssertionError):
            continue
        if candidate is not None:
            found.append(candidate)
    return found


def _append_text(text: str, entry: str) -> str | None:
    root = config.compose(text)
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        return None
    for key, value in root.value:
        if key.value != "changes":
            continue
        if not isinstance(value, yaml.SequenceNode):
            return None
        if value.flow_style:  # `changes: [...]`: the new item goes before the closing bracket
            close = value.end_mark.index - 1
            if text[close] != "]":
                return None
            return text[:close] + (", " if value.value else "") + entry + text[close:]
        if not value.value:
            return None
        indent = value.start_mark.column  # the column of the first `-`
        end = _last_end(value.value[-1])
        line_end = text.find("\n", end)
        line = " " * indent + "- " + entry + "\n"
        if line_end < 0:
            return text + "\n" + line
        return text[:line_end + 1] + line + text[line_end + 1:]
    body = text if text.endswith("\n") or not text else text + "\n"
    return body + "changes:\n  - " + entry + "\n"


def _last_end(node: yaml.Node) -> int:
    """Where the last value written inside a node ends (block collections end only at the next token)."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return int(node.end_mark.index)
    if isinstance(node, yaml.MappingNode):
        return max((_last_end(part) for pair in node.value for part in pair), default=node.start_mark.index)
    if isinstance(node, yaml.SequenceNode):
        return max((_last_end(item) for item in node.value), default=node.start_mark.index)
    return int(node.end_mark.index)


def _append_node(text: str, entry: str) -> str | None:
    root = config.compose(text)
    item = config.compose(entry)
    if not isinstance(root, yaml.MappingNode) or item is None:
        return None
    for key, value in root.value:
        if key.value == "changes" and isinstance(value, yaml.SequenceNode):
            value.value.append(item)
            break
    else:
        root.value.append((yaml.ScalarNode("tag:yaml.org,2002:str", "changes"),
                           yaml.SequenceNode("tag:yaml.org,2002:seq", [item], flow_style=False)))
    return str(yaml.serialize(root))


# -- adapting the plan ------------------------------------------------------------------------------------


@dataclass
class Adaptation:
    """What adapting a plan to its capacity did, per affected reservation (most important first)."""

    affected: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # affected, but still fit where they were
    moved: dict[str, tuple[Allocation, ...]] = field(default_factory=dict)  # re-placed: their new allocations
    dropped: list[str] = field(default_factory=list)  # in the order they were dropped
    previous: dict[str, tuple[Allocation, ...]] = field(default_factory=dict)  # what moved or dropped ones held
    missed: dict[str, list[int]] = field(default_factory=dict)  # a kept series' instances dropped alone, by series

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.dropped)


def overloaded(plan: Plan) -> np.ndarray:
    """Resources × steps where the plan uses more than its capacity."""
    return np.asarray(plan.used > plan.capacity + TOLERANCE)


def affected_by(plan: Plan) -> list[str]:
    """The accepted reservations holding some resource at a step where that resource is over capacity,
    and, where the cluster limits users' shares of capacity, every reservation of a user now over its share."""
    over = overloaded(plan)
    steps = over.shape[1]
    counts = np.zeros((over.shape[0], over.shape[1] + 1), dtype=np.int64)
    np.cumsum(over, axis=1, out=counts[:, 1:])
    limited = plan.policy.limited
    over_share = {user for user in plan.user_used
                  if check(plan.policy, user, plan.capacity, plan.used_by(user)) is not None} if limited else set()
    found = []
    for name, accepted in plan.accepted.items():
        if accepted.reservation.user in over_share:
            found.append(name)
            continue
        for allocation in accepted.allocations:
            demand = plan.demand(allocation.bundle) > 0
            start, end = min(max(allocation.start, 0), steps), min(max(allocation.end, 0), steps)  # in the window
            if ((counts[:, end] - counts[:, start]) > 0)[demand].any():
                found.append(name)
                break
    return found


def adapt(plan: Plan, acceptance: Sequence[str], agent: Agent) -> Adaptation:
    """Bring `plan` (in place) within its capacity by keeping, moving and, only if needed, dropping reservations.

    `plan` holds the new capacity and the old allocations; `acceptance` names the accepted
    reservations oldest first (the tie-break among equal priorities); `agent` re-places.
    """
    affected = affected_by(plan)
    rank = {name: index for index, name in enumerate(acceptance)}
    originals = {name: plan.accepted[name] for name in affected}

    def importance(name: str) -> tuple[int, int]:  # most important first
        return -originals[name].reservation.priority, rank.get(name, len(rank))

    order = sorted(affected, key=importance)
    report = Adaptation(affected=order)
    if not order:
        return report
    for name in order:
        plan.remove(name)
    base = plan.copy()
    remaining, dropped = list(order), []
    while True:
        trial = base.copy()
        placed, missed = _place_all(trial, [originals[n] for n in remaining], agent)
        while remaining and remaining[-1] not in placed:  # holds nothing: dropping it changes nothing else
            dropped.append(remaining.pop())
        short = [name for name in remaining if name not in placed or missed.get(name)]
        if not short or short == remaining[-1:]:  # all placed, or only the least important misses instances
            break
        dropped.append(remaining.pop())  # the least important one frees what it holds; try the rest again
    for name in sorted(dropped, key=importance):  # never more than needed: take back what fits now
        allocations, lost = _place(trial, originals[name], agent)
        if allocations is not None:
            dropped.remove(name)
            placed[name] = allocations
            missed[name] = lost
    for name in sorted(missed, key=importance):  # and the instances dropped alone, where they fit now
        if missed[name] and name in placed:
            placed[name], missed[name] = _take_back(trial, originals[name], missed[name], agent)
    for name in order:
        if name in placed:
            plan.add(Accepted(originals[name].reservation, originals[name].submitted, list(placed[name])))
            if _same(placed[name], originals[name].allocations):
                report.kept.append(name)
            else:
                report.moved[name] = placed[name]
                report.previous[name] = tuple(originals[name].allocations)
    report.dropped = dropped
    report.previous.update({name: tuple(originals[name].allocations) for name in dropped})
    report.missed = {name: sorted(lost) for name, lost in missed.items() if lost and name in placed}
    for name in report.missed:
        report.previous.setdefault(name, tuple(originals[name].allocations))
    return report


Placed = dict[str, tuple[Allocation, ...]]


def _place_all(plan: Plan, reservations: Sequence[Accepted], agent: Agent) -> tuple[Placed, dict[str, list[int]]]:
    """Put each back where it was if it fits (in order), then re-place the others (in order); where each went,
    and the instances of the series placed that found no place (dropped alone)."""
    placed: Placed = {}
    missed: dict[str, list[int]] = {}
    for accepted in reservations:
        if _fits(plan, accepted.allocations, accepted):
            placed[accepted.reservation.name] = tuple(accepted.allocations)
            plan.add(accepted)
    for accepted in reservations:
        name = accepted.reservation.name
        if name in placed:
            continue
        allocations, lost = _elsewhere(plan, accepted, agent)
        if allocations is not None:
            placed[name], missed[name] = allocations, lost
            plan.add(Accepted(accepted.reservation, accepted.submitted, list(allocations)))
    return placed, missed


def _place(plan: Plan, accepted: Accepted, agent: Agent) -> tuple[tuple[Allocation, ...] | None, list[int]]:
    """Where one reservation goes back on `plan` (added to it): its old place if it fits, else a new one; and the
    instances of a series that found none."""
    if _fits(plan, accepted.allocations, accepted):
        allocations: tuple[Allocation, ...] | None = tuple(accepted.allocations)
        lost: list[int] = []
    else:
        allocations, lost = _elsewhere(plan, accepted, agent)
    if allocations is not None:
        plan.add(Accepted(accepted.reservation, accepted.submitted, list(allocations)))
    return allocations, lost


def _elsewhere(plan: Plan, accepted: Accepted, agent: Agent) -> tuple[tuple[Allocation, ...] | None, list[int]]:
    """A new place for a reservation on `plan` (not added to it), or None: a running one cannot move, except the
    instances of a recurring one that have not begun (those finding no place are listed, the series kept)."""
    if accepted.reservation.every is not None:
        return _series_elsewhere(plan, accepted, agent)
    if not started(plan, accepted):
        return agent.place(plan, accepted.reservation, accepted.submitted).allocations, []
    return None, []


def _series_elsewhere(plan: Plan, accepted: Accepted, agent: Agent) -> tuple[tuple[Allocation, ...] | None,
                                                                            list[int]]:
    """A series with its begun instances where they are, the others where they are if they still fit there, else
    re-placed one by one, each in its own period (as the series places an instance entering the horizon); and the
    instances that found no place, dropped alone. None if the begun instances themselves no longer fit."""
    begun = {a.instance for a in accepted.allocations if a.start < plan.now_step}
    kept = [a for a in accepted.allocations if a.instance in begun]
    if not _fits(plan, kept, accepted):
        return None, []
    scratch, name = plan.copy(), accepted.reservation.name
    scratch.add(Accepted(accepted.reservation, accepted.submitted, kept))
    later = sorted({a.instance for a in accepted.allocations} - begun)
    for index in later:  # first those that still fit where they are: they keep their place
        own = [a for a in accepted.allocations if a.instance == index]
        if _fits(scratch, own, accepted):
            _add_instance(scratch, name, own)
    lost = []
    for index in later:
        if any(a.instance == index for a in scratch.accepted[name].allocations):
            continue
        placed = _instance_elsewhere(scratch, accepted, index, agent)
        if placed is None:
            lost.append(index)
        else:
            _add_instance(scratch, name, placed)
    return tuple(scratch.accepted[name].allocations), lost


def _instance_elsewhere(plan: Plan, accepted: Accepted, index: int, agent: Agent) -> list[Allocation] | None:
    """A place for one instance of a series in its own period on `plan` (not added to it), or None."""
    one = series_instance(accepted.reservation, accepted.submitted, index)
    outcome = agent.place(plan, replace(one, name=f"{accepted.reservation.name}#{index}"), plan.now)
    if outcome.allocations is None:
        return None
    return [replace(a, instance=index) for a in outcome.allocations]


def _add_instance(plan: Plan, name: str, allocations: Sequence[Allocation]) -> None:
    """Add an instance's allocations to a series already in `plan`."""
    current = plan.remove(name)
    plan.add(Accepted(current.reservation, current.submitted, [*current.allocations, *allocations]))


def _take_back(plan: Plan, accepted: Accepted, lost: list[int], agent: Agent) -> tuple[tuple[Allocation, ...],
                                                                                       list[int]]:
    """A series on `plan` with the instances it lost placed again where they fit now (its old place first); its
    allocations and the instances still lost."""
    name, still = accepted.reservation.name, []
    for index in lost:
        own = [a for a in accepted.allocations if a.instance == index]
        placed = own if _fits(plan, own, accepted) else _instance_elsewhere(plan, accepted, index, agent)
        if placed is None:
            still.append(index)
        else:
            _add_instance(plan, name, placed)
    return tuple(plan.accepted[name].allocations), still


def _fits(plan: Plan, allocations: Sequence[Allocation], accepted: Accepted) -> bool:
    """Whether the allocations fit the plan's free capacity (and the user's share, where limited), read over the
    steps they hold only: adapt's plans are within capacity wherever nothing is being put back (`affected_by`)."""
    if not allocations:
        return True
    added, lo = plan.use_over(list(allocations))
    hi = lo + added.shape[1]
    if (plan.used[:, lo:hi] + added > plan.capacity[:, lo:hi] + TOLERANCE).any():
        return False
    return plan.within_policy(accepted.reservation, list(allocations))


def started(plan: Plan, accepted: Accepted) -> bool:
    """Whether a lease of it began before the plan's clock (it is running: it cannot move)."""
    return any(a.start < plan.now_step for a in accepted.allocations)


def _same(a: Sequence[Allocation], b: Sequence[Allocation]) -> bool:
    return sorted(a, key=_key) == sorted(b, key=_key)


def _key(allocation: Allocation) -> tuple[int, str, int, int, int]:
    return allocation.instance, allocation.atom, allocation.start, allocation.end, allocation.bundles


def with_capacity(plan: Plan, cluster: Cluster, capacity: np.ndarray) -> Plan:
    """A copy of the plan laid over a changed cluster (same clock and resources), holding the same leases."""
    fresh = plan.copy()
    fresh.cluster = cluster
    fresh.capacity = capacity
    return fresh


def vector_json(capacity: Mapping[str, float]) -> dict[str, AnyType]:
    """A resource vector as JSON numbers (memory in MiB)."""
    return {name: int(value) if value == int(value) else value for name, value in capacity.items()}
