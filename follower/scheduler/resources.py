"""Resource vectors: an immutable mapping from resource name to amount, with the arithmetic a scheduler needs.

Names are those of the cluster file (`memory` in MiB, `vcores`, any other count). A name missing
from a vector counts as zero, so vectors over different names combine without ceremony.
"""

from __future__ import annotations

import math
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView

EPSILON = 1e-9  # far below one MiB or one vcore, far above float noise on sums of them


class Resources(Mapping[str, float]):
    """An immutable resource vector; missing names are zero."""

    __slots__ = ("_hash", "_values")

    def __init__(self, values: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> None:
        self._values: dict[str, float] = {name: float(amount) for name, amount in dict(values).items()}
        self._hash: int | None = None

    @staticmethod
    def zero(names: Iterable[str]) -> Resources:
        """All of `names` at zero."""
        return Resources({name: 0.0 for name in names})

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def get(self, name: str, default: float | None = 0.0) -> float:  # type: ignore[override]
        """The amount of `name`, zero when it is missing."""
        value = self._values.get(name)
        if value is None:
            return default if default is not None else 0.0
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    # Plain dict views rather than Mapping's generic ones: these are on every allocation's path.
    def items(self) -> ItemsView[str, float]:  # type: ignore[override]
        return self._values.items()

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        return self._values.keys()

    def values(self) -> ValuesView[float]:  # type: ignore[override]
        return self._values.values()

    def __len__(self) -> int:
        return len(self._values)

    def __add__(self, other: Mapping[str, float]) -> Resources:
        values = dict(self._values)
        for name, amount in _pairs(other):
            values[name] = values.get(name, 0.0) + amount
        return _wrap(values)

    def __sub__(self, other: Mapping[str, float]) -> Resources:
        values = dict(self._values)
        for name, amount in _pairs(other):
            values[name] = values.get(name, 0.0) - amount
        return _wrap(values)

    def __mul__(self, factor: float) -> Resources:
        return _wrap({name: amount * factor for name, amount in self._values.items()})

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        if isinstance(other, Resources) and self._values == other._values:
            return True  # the usual case, without the per-name tolerance
        names = set(self._values) | set(other)
        return all(math.isclose(self.get(n), float(other.get(n, 0.0)), rel_tol=1e-12, abs_tol=EPSILON) for n in names)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(sorted((n, round(v, 6)) for n, v in self._values.items() if v)))
        return self._hash

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}: {amount:g}" for name, amount in sorted(self._values.items()))
        return f"Resources({{{inner}}})"

    def fits_in(self, other: Mapping[str, float]) -> bool:
        """Whether every amount here is at most the same amount in `other` (missing there is zero)."""
        # A plain loop over the plain dict: the scheduler asks this for every node it looks at.
        room = other._values if isinstance(other, Resources) else other
        for name, amount in self._values.items():  # noqa: SIM110 - all() over a generator costs a fifth more here
            if amount > room.get(name, 0.0) + EPSILON:
                return False
        return True

    def dominant_share(self, total: Mapping[str, float]) -> float:
        """The largest `self[r] / total[r]`; an amount of a resource the total lacks is an infinite share."""
        share = 0.0
        for name, amount in self._values.items():
            if amount <= EPSILON:
                continue
            whole = total.get(name, 0.0)
            share = max(share, amount / whole if whole > 0 else math.inf)
        return share

    def is_zero(self) -> bool:
        """Whether every amount is zero (within float noise)."""
        return all(abs(amount) <= EPSILON for amount in self._values.values())

    def minimum(self, other: Mapping[str, float]) -> Resources:
        """The componentwise minimum over the names of both."""
        names = set(self._values) | set(other)
        return _wrap({n: min(self.get(n), float(other.get(n, 0.0))) for n in names})

    def positive(self) -> Resources:
        """Negative amounts raised to zero."""
        return _wrap({name: max(amount, 0.0) for name, amount in self._values.items()})

    def any_positive(self) -> bool:
        """Whether some amount is above zero (beyond float noise)."""
        return any(amount > EPSILON for amount in self._values.values())


def _pairs(other: Mapping[str, float]) -> Iterable[tuple[str, float]]:
    return other._values.items() if isinstance(other, Resources) else other.items()


def _wrap(values: dict[str, float]) -> Resources:
    """A Resources over `values` without copying it again (the hot path of every allocation)."""
    result = Resources.__new__(Resources)
    result._values = values
    result._hash = None
    return result
