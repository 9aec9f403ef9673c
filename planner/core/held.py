"""The accepted reservations of a plan by name, re-based on the plan's window lazily: a roll touches none of them.

Each entry keeps the window origin its allocations were written against (steps rolled since the plan was laid).
`roll` only moves the current origin; an entry read after it is shifted to the new origin then, once, and kept so.
So an hourly roll costs nothing per reservation held, and the reservations never read again never pay at all.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from rdl.tree import Reservation, Resources


@dataclass(frozen=True, slots=True, init=False)
class Allocation:
    """`bundles` bundles of `bundle` held over steps [start, end) for one atom (of one recurring instance)."""

    atom: str
    start: int
    end: int
    bundles: int
    bundle: Resources
    instance: int = 0

    def __init__(self, atom: str, start: int, end: int, bundles: int, bundle: Resources, instance: int = 0) -> None:
        # Still frozen, filled through its slots' own setters: a decision makes hundreds of these, and the generated
        # __init__ (object.__setattr__ by name, per field) took 0.99 us each against 0.63 here (one process, timeit).
        _fill(self, atom, start, end, bundles, bundle, instance)

    def resources(self) -> dict[str, float]:
        return {name: quantity * self.bundles for name, quantity in self.bundle.items()}


def _setters(cls: type) -> tuple:
    return tuple(getattr(cls, name).__set__ for name in ("atom", "start", "end", "bundles", "bundle", "instance"))


def _fill(allocation: Allocation, atom: str, start: int, end: int, bundles: int, bundle: Resources, instance: int,
          _set: tuple = _setters(Allocation)) -> None:
    _set[0](allocation, atom)
    _set[1](allocation, start)
    _set[2](allocation, end)
    _set[3](allocation, bundles)
    _set[4](allocation, bundle)
    _set[5](allocation, instance)


@dataclass
class Accepted:
    """A reservation the plan guarantees, with when it was submitted and what it holds."""

    reservation: Reservation
    submitted: datetime
    allocations: list[Allocation] = field(default_factory=list)


def shifted(allocations: list[Allocation], steps: int) -> list[Allocation]:
    """The allocations `steps` later on the step axis (earlier when negative): the same leases on another origin."""
    if steps == 0:
        return list(allocations)
    # The constructor, not dataclasses.replace: this runs over every allocation of a reservation read after a roll.
    return [Allocation(a.atom, a.start + steps, a.end + steps, a.bundles, a.bundle, a.instance) for a in allocations]


class Held(MutableMapping[str, Accepted]):
    """Accepted reservations by name, each read on the plan's current origin (see the module's docstring)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Accepted, int]] = {}
        self._origin = 0  # steps the window has rolled since the plan was laid

    def roll(self, steps: int) -> None:
        """The window moved `steps` on: every allocation now reads that much earlier, when it is next read."""
        self._origin += steps

    def copy(self) -> Held:
        """Another mapping of the same entries (the Accepted objects are shared: a re-based one is a new object)."""
        twin = Held()
        twin._entries = dict(self._entries)
        twin._origin = self._origin
        return twin

    def __getitem__(self, name: str) -> Accepted:
        accepted, origin = self._entries[name]
        if origin != self._origin:
            # A new Accepted: a copy of the plan from before the roll shares the old one, on its own origin.
            accepted = replace(accepted, allocations=shifted(accepted.allocations, origin - self._origin))
            self._entries[name] = (accepted, self._origin)
        return accepted

    def __setitem__(self, name: str, accepted: Accepted) -> None:
        self._entries[name] = (accepted, self._origin)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Held({dict(self.items())!r})"
