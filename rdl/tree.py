"""The RDL tree: frozen dataclasses that hold what the user wrote, with source spans.

Nodes hold facts, never plan or solver state. Spans do not take part in equality, so a
tree printed and parsed back compares equal to the original.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from rdl.errors import NOWHERE, Span

PLACEMENTS = ("late", "early")  # `placement=`: where the greedy agents put each piece in its window; late is default
PACKS = ("node",)  # `pack=`: each gang's bundles on one node (checked against the cluster's nodes, not planned)
CHOICES = {"placement": PLACEMENTS, "pack": PACKS}  # the header attributes that take a word from a list


def later(instant: datetime, seconds: float, zone: str | None = None) -> datetime:
    """`instant` moved on by `seconds`; in a named zone, by that much wall-clock time there (a day is a calendar day:
    06:00 stays 06:00 across a change of daylight-saving time). A wall time the change skips moves on by the
    change (02:30 on the day clocks go forward is 03:30); one that occurs twice is its first occurrence."""
    if zone is None or seconds == 0:
        return instant + timedelta(seconds=seconds)
    local = instant.astimezone(ZoneInfo(zone)).replace(fold=0)
    return (local + timedelta(seconds=seconds)).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Resources(Mapping[str, float]):
    """A resource vector, `{memory: MiB, vcores: count, ...}`, kept sorted by name."""

    items_: tuple[tuple[str, float], ...] = ()

    @staticmethod
    def of(values: Mapping[str, float]) -> Resources:
        return Resources(tuple(sorted((k, float(v)) for k, v in values.items())))

    def __getitem__(self, key: str) -> float:
        for name, value in self.items_:
            if name == key:
                return value
        raise KeyError(key)

    def get(self, key: str, default: float | None = None) -> float | None:  # type: ignore[override]
        for name, value in self.items_:
            if name == key:
                return value
        return default

    def __contains__(self, key: object) -> bool:
        return any(name == key for name, _ in self.items_)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    # Plain tuples rather than Mapping views: these are on the hot path of validation and planning.
    def items(self) -> tuple[tuple[str, float], ...]:  # type: ignore[override]
        return self.items_

    def values(self) -> tuple[float, ...]:  # type: ignore[override]
        return tuple(value for _, value in self.items_)

    def scaled(self, factor: float) -> Resources:
        return Resources(tuple((k, v * factor) for k, v in self.items_))


@dataclass(frozen=True, slots=True)
class Absolute:
    """A point in time written with a zone; kept in UTC."""

    instant: datetime

    def resolve(self, arrival: datetime) -> datetime:
        return self.instant

    def shifted(self, seconds: float, zone: str | None = None) -> Absolute:
        return Absolute(later(self.instant, seconds, zone))


@dataclass(frozen=True, slots=True)
class Relative:
    """A point in time written as an offset from the reservation's arrival (`+6h`)."""

    offset: float

    def resolve(self, arrival: datetime) -> datetime:
        return arrival + timedelta(seconds=self.offset)

    def shifted(self, seconds: float, zone: str | None = None) -> Relative:
        return self


TimeValue = Absolute | Relative


@dataclass(frozen=True, slots=True)
class Atom:
    """`atom(b, g, h, l, w)`: `work` bundle-seconds run as leases of `gang` bundles held for `lease` seconds."""

    bundle: Resources
    work: float
    gang: int = 1
    parallelism: int | None = None
    lease: float | None = None
    name: str | None = None
    span: Span = field(default=NOWHERE, compare=False, repr=False)

    @property
    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class Window:
    """`window(s, e, X)`: every lease of X inside [start, end); start defaults to the arrival."""

    child: Expr
    end: TimeValue
    start: TimeValue | None = None
    name: str | None = None
    span: Span = field(default=NOWHERE, compare=False, repr=False)
    implicit: bool = field(default=False, repr=False, compare=False)  # made by `deadline=`: no level in paths

    @property
    def children(self) -> tuple[Expr, ...]:
        return (self.child,)


@dataclass(frozen=True, slots=True)
class Order:
    """`order(X1, X2, ..., gap=D)`: each child starts after the previous one ends (within `gap`)."""

    children: tuple[Expr, ...]
    gap: float | None = None
    name: str | None = None
    span: Span = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class All:
    """`all(X1, ...)`: every child is placed."""

    children: tuple[Expr, ...]
    name: str | None = None
    span: Span = field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Any:
    """`any(X1, ...)`: exactly one child is placed."""

    children: tuple[Expr, ...]
    name: str | None = None
    span: Span = field(default=NOWHERE, compare=False, repr=False)


Expr = Atom | Window | Order | All | Any


@dataclass(frozen=True, slots=True)
class Reservation:
    """A named request: header attributes and one expression."""

    name: str
    body: Expr
    user: str | None = None
    queue: str | None = None
    arrival: TimeValue | None = None
    deadline: TimeValue | None = None
    value: float = 1.0
    priority: int = 0
    every: float | None = None
    until: TimeValue | None = None  # a recurring reservation has no instance arriving at or after it
    tz: str | None = None  # an IANA zone name: `every` counts calendar days there, zone-less times are its wall time
    placement: str = "late"  # one of PLACEMENTS
    pack: str | None = None  # one of PACKS
    span: Span = field(default=NOWHERE, compare=False, repr=False)
    places: Mapping[str, Span] = field(default_factory=dict, compare=False, repr=False)  # each header value's

    def place_of(self, key: str) -> Span:
        """Where header attribute `key` is written (`queue=`'s value, say), else where the reservation is."""
        return self.places.get(key, self.span)

    @property
    def expr(self) -> Expr:
        """The body with the `deadline` sugar applied: `window(s=arrival, e=deadline, body)`."""
        if self.deadline is None:
            return self.body
        return Window(self.body, end=self.deadline, start=Relative(0.0), span=self.span, implicit=True)

    def arrival_at(self, submitted: datetime) -> datetime:
        """When the reservation arrives: its `arrival` (relative ones count from submission), else submission."""
        return self.arrival.resolve(submitted) if self.arrival is not None else submitted

    def instance_arrival(self, first_arrival: datetime, index: int) -> datetime:
        """When instance `index` of the series arrives: `index` periods after the first, in `tz`'s calendar if set."""
        return later(first_arrival, (self.every or 0.0) * index, self.tz)

    def repeats_at(self, first_arrival: datetime, arrival: datetime) -> bool:
        """Whether an instance arriving at `arrival` belongs to the series: it arrives before `until` (a relative
        `until` counts from the series' first arrival)."""
        return self.until is None or arrival < self.until.resolve(first_arrival)


def kind(node: Expr) -> str:
    """The RDL keyword of a node."""
    return type(node).__name__.lower()


def child_path(node: Expr, path: str, index: int) -> str:
    """The path of a node's child: one more index, except under the window `deadline=` adds."""
    if isinstance(node, Window) and node.implicit:
        return path
    return f"{path}.{index}"


def walk(node: Expr, path: str = "0") -> Iterator[tuple[str, Expr]]:
    """Every node with its path (`0`, `0.1`, `0.1.0`), depth first, parents before children."""
    yield path, node
    for index, child in enumerate(node.children):
        yield from walk(child, child_path(node, path, index))


def label(node: Expr, path: str) -> str:
    """How users see a node: its name, else its path."""
    return node.name if node.name is not None else path


def atom_label(atom: Atom, path: str, parent: Expr | None) -> str:
    """How allocations name an atom: its name, else the name of a window wrapping it, else its path."""
    if atom.name is not None:
        return atom.name
    if isinstance(parent, Window) and parent.name is not None:
        return parent.name
    return path


def labelled_atoms(node: Expr, path: str = "0", parent: Expr | None = None) -> Iterator[tuple[str, str, Atom]]:
    """Every atom under a node as (path, label, atom), in source order."""
    if isinstance(node, Atom):
        yield path, atom_label(node, path, parent), node
        return
    for index, child in enumerate(node.children):
        yield from labelled_atoms(child, child_path(node, path, index), node)


def atoms(node: Expr) -> list[tuple[str, Atom]]:
    """Every atom under a node with its label, in source order."""
    return [(name, atom) for _, name, atom in labelled_atoms(node)]


def with_name(node: Expr, name: str | None) -> Expr:
    """The node under another name."""
    return replace(node, name=name)
