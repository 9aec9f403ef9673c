"""Semantic validation: one pass over the parsed reservations that collects every error.

Structural errors (g > h, unknown resources, a window that ends before it starts,
duplicate names) are always errors. Fit errors (a bundle or gang larger than the
cluster, a lease longer than its window, an `order` that cannot fit its window) are
errors too, except inside an `any`, where an alternative that could never fit is simply
never chosen; an `any` none of whose alternatives could fit is an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property

from rdl import units
from rdl.cluster import Cluster
from rdl.errors import ErrorSink, RDLError, Span, did_you_mean
from rdl.graph import critical_path, critical_steps
from rdl.shape import lease_count, lease_steps, min_steps, step_ceil, step_floor
from rdl.timing import contradicts, gap_meets_windows
from rdl.tree import All, Any, Atom, Expr, Order, Reservation, Resources, Window, atoms, child_path, label, walk

UNBOUNDED = (-(2**62), 2**62)
MAX_INSTANCES = 1000  # of one recurring reservation in the horizon: every admission places them all
MAX_NAME = 200  # characters in a reservation's or a piece's name: it becomes a queue name and a URL part
MAX_DEPTH = 100  # levels of nested expressions: the planner walks the tree recursively


@dataclass(frozen=True)
class Context:
    """What validation measures against: the cluster (if known), the submission time and the plan clock."""

    cluster: Cluster | None
    now: datetime
    step: int
    origin: datetime
    known_steps: dict[int, tuple[Atom, int | None]] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(cluster: Cluster | None, now: datetime | None = None) -> Context:
        if cluster is not None:
            return Context(cluster, now or cluster.start, cluster.step, cluster.start)
        moment = now or datetime.now().astimezone().replace(microsecond=0)
        return Context(None, moment, 60, moment)

    @cached_property
    def capacity(self) -> Resources | None:
        return _peak(self.cluster) if self.cluster is not None else None

    def steps(self, atom: Atom) -> int | None:
        """The atom's least steps on the cluster (min_steps), worked out once per atom: the checks ask many times."""
        key = id(atom)
        if key not in self.known_steps:
            self.known_steps[key] = (atom, min_steps(atom, self.step, self.capacity))  # the atom kept: its id stays
        return self.known_steps[key][1]

    def fmt(self, step: int) -> str:
        return units.format_instant(self.origin + timedelta(seconds=step * self.step))


_PEAKS: dict[int, tuple[Cluster, Resources]] = {}  # by the cluster's id, the cluster kept so that its id stays its


def _peak(cluster: Cluster) -> Resources:
    """The cluster's peak capacity, worked out once per cluster: a server validates every submission against it."""
    known = _PEAKS.get(id(cluster))
    if known is None or known[0] is not cluster:
        if len(_PEAKS) >= 16:
            _PEAKS.clear()
        known = _PEAKS[id(cluster)] = (cluster, cluster.peak_capacity())
    return known[1]


def validate(reservations: Iterable[Reservation], cluster: Cluster | None = None,
             now: datetime | None = None) -> None:
    """Raise RDLErrors listing every semantic error in these reservations (one file's worth)."""
    context = Context.of(cluster, now)
    sink = ErrorSink()
    seen: dict[str, Span] = {}
    for reservation in reservations:
        if reservation.name in seen:
            sink.add(reservation.span, f"reservation `{reservation.name}` is defined twice "
                     f"(first at {seen[reservation.name]})", hint="reservation names are unique within a file")
        seen.setdefault(reservation.name, reservation.span)
        try:
            sink.errors.extend(check_reservation(reservation, context))
        except OverflowError:  # a time pushed past the calendar (`deadline=+100000000d`)
            sink.add(reservation.span, f"reservation `{reservation.name}` has a time outside the calendar",
                     hint=units.TIME_RANGE)
    sink.raise_if_any()


def check_reservation(reservation: Reservation, context: Context) -> list[RDLError]:
    """Every error of one reservation."""
    sink = ErrorSink()
    _check_length(reservation.name, "reservation name", reservation.span, sink)
    nodes = _nodes(reservation, sink)  # walked once: the checks below read it
    if nodes is None:
        return sink.errors
    names: dict[str, Span] = {}
    named = 0
    for _, node in nodes:
        if node.name is None:
            continue
        named += 1
        _check_length(node.name, "name", node.span, sink)
        if node.name in names:
            sink.add(node.span, f"name `{node.name}` is used twice in reservation `{reservation.name}` "
                     f"(first at {names[node.name]})", hint="names are unique within a reservation")
        names.setdefault(node.name, node.span)
    _check_queue(reservation, context.cluster, sink)
    _check_pack(reservation, context.cluster, sink)
    arrival = reservation.arrival_at(context.now)
    if not _times_in_range(reservation, nodes, arrival, sink):
        return sink.errors
    series = _series(reservation, arrival, sink)
    if reservation.every is not None and context.cluster is not None:
        _check_every(reservation, reservation.every, context.cluster, series, sink)
    if reservation.deadline is not None:
        deadline = reservation.deadline.resolve(arrival)
        if deadline <= arrival:
            sink.add(reservation.place_of("deadline"), f"reservation `{reservation.name}` has its deadline "
                     f"{units.format_instant(deadline)} at or before its arrival {units.format_instant(arrival)}")
            _Checker(context, arrival, sink).check(reservation.body, "0", UNBOUNDED)  # its structural errors
            return sink.errors
    if len(names) < named:
        # Duplicates are reported above; drop them here, or the precedence graph would merge their atoms.
        reservation = replace(reservation, body=_without_duplicate_names(reservation.body, set()))
    checker = _Checker(context, arrival, sink)
    fit_errors = checker.check(reservation.expr, "0", UNBOUNDED)
    sink.errors.extend(fit_errors)
    if not sink.errors and earliest_finish(reservation.expr, context, arrival, UNBOUNDED) is None:
        sink.add(reservation.span, f"reservation `{reservation.name}` can never be placed: the windows and order "
                 "of its pieces contradict each other even on an empty cluster")
    elif not sink.errors and gap_meets_windows(nodes) \
            and contradicts(reservation.expr, arrival, context.origin, context.step, context.steps):
        sink.add(reservation.span, f"reservation `{reservation.name}` can never be placed: the windows, order and "
                 "gaps of its pieces contradict each other even on an empty cluster (a stage cannot start within "
                 "its `gap` after the one before ends)")
    return sink.errors


def _times_in_range(reservation: Reservation, nodes: list[tuple[str, Expr]], arrival: datetime,
                    sink: ErrorSink) -> bool:
    """Whether every time the reservation names, resolved, lies in the years 1970–9000 (what the store keeps)."""
    times = [arrival, *(t.resolve(arrival) for t in (reservation.deadline, reservation.until) if t is not None)]
    times += [t.resolve(arrival) for _, node in nodes if isinstance(node, Window)
              for t in (node.start, node.end) if t is not None]
    if all(units.EARLIEST <= moment < units.LATEST for moment in times):
        return True
    sink.add(reservation.span, f"reservation `{reservation.name}` has a time outside the calendar",
             hint=units.TIME_RANGE)
    return False


def _series(reservation: Reservation, arrival: datetime, sink: ErrorSink) -> float | None:
    """How long a series given an end (`until`) lasts, in seconds; `until` needs `every` and a later time."""
    if reservation.until is None:
        return None
    if reservation.every is None:
        sink.add(reservation.place_of("until"), f"reservation `{reservation.name}` has `until` but no `every`",
                 hint="`until` ends a recurring reservation: give `every=` too, or leave `until` out")
        return None
    end = reservation.until.resolve(arrival)
    if end <= arrival:
        sink.add(reservation.place_of("until"), f"reservation `{reservation.name}` has `until` "
                 f"{units.format_instant(end)} at or before its arrival {units.format_instant(arrival)}, so it has "
                 "no instance")
        return None
    return (end - arrival).total_seconds()


def _check_queue(reservation: Reservation, cluster: Cluster | None, sink: ErrorSink) -> None:
    """A reservation's queue must be one the cluster file lists, when it lists any (YARN's reservable queues)."""
    if cluster is None or not cluster.queues or reservation.queue is None or reservation.queue in cluster.queues:
        return
    listed = ", ".join(f"`{name}`" for name in cluster.queues)
    sink.add(reservation.place_of("queue"), f"reservation `{reservation.name}` names queue `{reservation.queue}`, "
             f"which is not one of the cluster's reservable `queues`",
             hint=did_you_mean(reservation.queue, cluster.queues) or f"name one of {listed}, or none")


def _check_pack(reservation: Reservation, cluster: Cluster | None, sink: ErrorSink) -> None:
    """`pack=node`: every gang's bundles together fit one node of the cluster's `nodes:` (any alternative too: the
    plan counts capacity, not nodes, so it cannot steer an `any` away from one that would not)."""
    if reservation.pack is None or cluster is None:
        return
    if not cluster.nodes:
        sink.add(reservation.place_of("pack"), f"reservation `{reservation.name}` has `pack=node`, but the cluster "
                 "file lists no nodes to pack a gang on",
                 hint="describe the cluster with `nodes:`, or leave `pack` out")
        return
    for name, atom in atoms(reservation.body):
        need = atom.bundle.scaled(atom.gang)
        if atom.gang == 1 or any(all(q <= (group.size.get(r) or 0.0) for r, q in need.items())
                                 for group in cluster.nodes):
            continue
        largest = max(cluster.nodes, key=lambda group: sum(group.size.values()))
        sink.add(atom.span, f"atom `{name}` has a gang of {atom.gang} bundles that needs "
                 f"{_vector(need)} on one node (`pack=node`), more than any node holds (`{largest.name}`: "
                 f"{_vector(largest.size)})", hint="lower g or the bundle size, or leave `pack` out")


def _vector(resources: Resources) -> str:
    return "{" + ", ".join(f"{r}: {units.format_quantity(r, q)}" for r, q in resources.items()) + "}"


def _check_every(reservation: Reservation, every: float, cluster: Cluster, series: float | None,
                 sink: ErrorSink) -> None:
    """A recurring reservation repeats at most once a plan step, and at most MAX_INSTANCES times in the horizon."""
    if every < cluster.step:
        sink.add(reservation.place_of("every"), f"`every={units.format_duration(every)}` is shorter than the plan step "
                 f"({units.format_duration(cluster.step)})", hint="a recurring reservation repeats at most once a step")
        return
    instances = math.ceil(min(cluster.horizon, series or cluster.horizon) / every)
    if instances > MAX_INSTANCES:
        sink.add(reservation.place_of("every"), f"`every={units.format_duration(every)}` repeats {instances} times "
                 f"in the plan's horizon ({units.format_duration(cluster.horizon)}); at most {MAX_INSTANCES} "
                 "instances are planned at once", hint="repeat less often, or plan the work as one longer reservation")


def _nodes(reservation: Reservation, sink: ErrorSink) -> list[tuple[str, Expr]] | None:
    """The body's nodes with their paths; None when it nests deeper than MAX_DEPTH levels (then reported at the first
    node too deep, before walking any deeper)."""
    nodes = []
    for path, node in walk(reservation.body):
        if path.count(".") >= MAX_DEPTH:
            sink.add(node.span, f"reservation `{reservation.name}` nests expressions more than {MAX_DEPTH} levels "
                     f"deep; at most {MAX_DEPTH} are planned",
                     hint="flatten the nesting: `all(all(X, Y), Z)` is `all(X, Y, Z)`, and so for `order` and `any`")
            return None
        nodes.append((path, node))
    return nodes


def _check_length(name: str, what: str, span: Span, sink: ErrorSink) -> None:
    """A name is at most MAX_NAME characters: it becomes a queue name, a database key, a URL part."""
    if len(name) > MAX_NAME:
        sink.add(span, f"the {what} `{name[:20]}...` is {len(name)} characters long; at most {MAX_NAME} are "
                 "allowed")


def _without_duplicate_names(node: Expr, seen: set[str]) -> Expr:
    """The tree with every name after its first use removed (such nodes are then known by their path)."""
    name = node.name if node.name not in seen else None
    if name is not None:
        seen.add(name)
    if isinstance(node, Atom):
        return replace(node, name=name)
    if isinstance(node, Window):
        return replace(node, name=name, child=_without_duplicate_names(node.child, seen))
    return replace(node, name=name, children=tuple(_without_duplicate_names(c, seen) for c in node.children))


class _Checker:
    """Walks one reservation, sending structural errors to the sink and returning fit errors."""

    def __init__(self, context: Context, arrival: datetime, sink: ErrorSink):
        self.context = context
        self.arrival = arrival
        self.sink = sink

    def check(self, node: Expr, path: str, bounds: tuple[int, int]) -> list[RDLError]:
        if isinstance(node, Atom):
            return self.atom(node, path, bounds)
        if isinstance(node, Window):
            return self.window(node, path, bounds)
        if isinstance(node, Any):
            return self.any(node, path, bounds)
        errors = []
        for index, child in enumerate(node.children):
            errors += self.check(child, f"{path}.{index}", bounds)
        return errors

    def atom(self, atom: Atom, path: str, bounds: tuple[int, int]) -> list[RDLError]:
        name = label(atom, path)
        if atom.parallelism is not None and atom.gang > atom.parallelism:
            self.sink.add(atom.span, f"atom `{name}` has gang g={atom.gang} larger than its parallelism "
                          f"h={atom.parallelism}", hint="a gang of g bundles must fit under h at once")
        if not any(value > 0 for value in atom.bundle.values()) and len(atom.bundle):
            self.sink.add(atom.span, f"atom `{name}` has a bundle of nothing", expected="some resource above zero")
        capacity = self.context.capacity
        if capacity is None:
            return []
        unknown = [r for r in atom.bundle if r not in capacity]
        for resource in unknown:
            self.sink.add(atom.span, f"atom `{name}` asks for `{resource}`, which the cluster lacks",
                          expected="one of " + ", ".join(capacity), hint=did_you_mean(resource, list(capacity)))
        if unknown:
            return []
        errors = []
        too_big = [r for r, need in atom.bundle.items() if need > capacity[r]]
        if too_big:
            errors.append(RDLError(atom.span, f"atom `{name}` has a bundle larger than the cluster: "
                                   + ", ".join(f"{r} {units.format_quantity(r, atom.bundle[r])} > "
                                               f"{units.format_quantity(r, capacity[r])}" for r in too_big)))
        elif self.context.steps(atom) is None and (atom.parallelism is None or atom.gang <= atom.parallelism):
            errors.append(RDLError(atom.span, f"atom `{name}` has a gang of {atom.gang} bundles, larger than the "
                                   "cluster holds at once", hint="lower g or the bundle size"))
        length = bounds[1] - bounds[0]
        if lease_steps(atom, self.context.step) > length:
            errors.append(RDLError(atom.span, f"atom `{name}` has leases of "
                                   f"{units.format_duration(lease_steps(atom, self.context.step) * self.context.step)}"
                                   f", longer than its window ({units.format_duration(length * self.context.step)})"))
        return errors

    def window(self, window: Window, path: str, bounds: tuple[int, int]) -> list[RDLError]:
        context = self.context
        start_at = (window.start.resolve(self.arrival) if window.start is not None else self.arrival)
        end_at = window.end.resolve(self.arrival)
        name = "deadline" if window.implicit else label(window, path)
        if end_at <= start_at:
            self.sink.add(window.span, f"window `{name}` ends ({units.format_instant(end_at)}) at or before it "
                          f"starts ({units.format_instant(start_at)})")
            self.check(window.child, child_path(window, path, 0), bounds)  # still report the structural errors inside
            return []
        own = (step_ceil(context.origin, start_at, context.step), step_floor(context.origin, end_at, context.step))
        inner = (max(bounds[0], own[0]), min(bounds[1], own[1]))
        if own[1] <= own[0] or inner[1] <= inner[0]:
            self.check(window.child, child_path(window, path, 0), bounds)  # still report the structural errors inside
        if own[1] <= own[0]:
            return [RDLError(window.span, f"window `{name}` is shorter than one plan step "
                                          f"({units.format_duration(context.step)}) once rounded to steps")]
        if inner[1] <= inner[0]:
            return [RDLError(window.span, f"window `{name}` lies outside its enclosing window")]
        errors = self.check(window.child, child_path(window, path, 0), inner)
        if errors or _serial_steps(window.child, context) <= inner[1] - inner[0]:
            return errors  # run one after another it already fits: no need for the critical path
        least = critical_steps(window.child, context.steps)
        if least is not None and least > inner[1] - inner[0]:  # too long: the graph names the path
            found = critical_path(window.child, context.steps, child_path(window, path, 0), window)
            names = " → ".join(found.atoms) if found is not None else ""
            errors.append(RDLError(window.span, f"window `{name}` [{context.fmt(inner[0])}, {context.fmt(inner[1])}) "
                                   f"is {units.format_duration((inner[1] - inner[0]) * context.step)} long, but what "
                                   f"it holds needs at least {units.format_duration(least * context.step)}"
                                   f" even on an empty cluster (critical path: {names})"))
            return errors
        volume = _volume_steps(window.child, context)
        if volume is not None and volume[1] > inner[1] - inner[0]:  # its pieces together hold more than the cluster
            errors.append(RDLError(window.span, f"window `{name}` [{context.fmt(inner[0])}, {context.fmt(inner[1])}) "
                                   f"is {units.format_duration((inner[1] - inner[0]) * context.step)} long, but what "
                                   f"it holds needs the whole cluster's `{volume[0]}` for at least "
                                   f"{units.format_duration(volume[1] * context.step)} even on an empty cluster"))
        return errors

    def any(self, node: Any, path: str, bounds: tuple[int, int]) -> list[RDLError]:
        failures = [self.check(child, f"{path}.{index}", bounds) for index, child in enumerate(node.children)]
        if not all(failures):
            return []
        reasons = "; ".join(errors[0].message for errors in failures)
        return [RDLError(node.span, f"none of the alternatives of `any` `{label(node, path)}` could ever fit: "
                         + reasons)]


def _volume_steps(node: Expr, context: Context) -> tuple[str, int] | None:
    """The resource the pieces that must all be placed (not an `any`'s alternatives) need most of, and the steps the
    whole cluster at its peak would take to hold them all: each lease rounded up to whole steps, as placed."""
    capacity = context.capacity
    if capacity is None:
        return None
    need: dict[str, float] = {}
    for atom in _required_atoms(node):
        held = lease_count(atom, context.step) * atom.gang * lease_steps(atom, context.step)
        for resource, amount in atom.bundle.items():
            need[resource] = need.get(resource, 0.0) + held * amount
    peak = {r: capacity.get(r) or 0.0 for r in need}
    steps = {r: math.ceil(total / peak[r] - 1e-9) for r, total in need.items() if peak[r] > 0}
    return max(steps.items(), key=lambda item: item[1]) if steps else None


def _required_atoms(node: Expr) -> Iterable[Atom]:
    if isinstance(node, Atom):
        yield node
    elif isinstance(node, Window):
        yield from _required_atoms(node.child)
    elif not isinstance(node, Any):
        for child in node.children:
            yield from _required_atoms(child)


def _serial_steps(node: Expr, context: Context) -> float:
    """Steps every atom takes run one after another: a cheap upper bound of the critical path."""
    total = 0.0
    for _, atom in atoms(node):
        steps = context.steps(atom)
        total += steps if steps is not None else float("inf")
    return total


def earliest_finish(node: Expr, context: Context, arrival: datetime, bounds: tuple[int, int],
                    start: int = UNBOUNDED[0]) -> int | None:
    """Earliest finishing step on an empty cluster, each atom alone at its fastest; None if impossible."""
    if isinstance(node, Atom):
        steps = context.steps(node)
        begin = max(start, bounds[0])
        return begin + steps if steps is not None and begin + steps <= bounds[1] else None
    if isinstance(node, Window):
        start_at = node.start.resolve(arrival) if node.start is not None else arrival
        inner = (max(bounds[0], step_ceil(context.origin, start_at, context.step)),
                 min(bounds[1], step_floor(context.origin, node.end.resolve(arrival), context.step)))
        return earliest_finish(node.child, context, arrival, inner, start)
    if isinstance(node, Order):
        moment: int | None = start
        for child in node.children:
            moment = earliest_finish(child, context, arrival, bounds, moment) if moment is not None else None
        return moment
    finishes = [earliest_finish(child, context, arrival, bounds, start) for child in node.children]
    possible = [f for f in finishes if f is not None]
    if isinstance(node, All):
        return max(possible) if len(possible) == len(finishes) else None
    return min(possible) if possible else None
