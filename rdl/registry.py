"""Things chosen by name (agents, solvers, policies, ...): one lookup, built lazily, that says which name was meant.

Every registry lists its names up front (as PuLP lists its solvers), so a name is known
without importing what it stands for; the thing itself is built on each `get`. An unknown
name is an `UnknownName` listing the valid ones and the likely one ("did you mean `gree-l`?").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from rdl.errors import RayonError, did_you_mean

T = TypeVar("T")


class UnknownName(RayonError, KeyError, ValueError):
    """A name no registry entry has; a KeyError and a ValueError too, for callers that look names up."""

    code = "unknown_name"

    def __init__(self, kind: str, name: str, names: tuple[str, ...]):
        self.kind = kind
        self.name = name
        self.names = names
        super().__init__(f"unknown {kind} `{name}`; use one of {', '.join(names)}", hint=did_you_mean(name, names))


class Registry(Generic[T]):
    """Names to factories, in a fixed order; `get(name)` builds the named thing."""

    def __init__(self, kind: str, factories: Mapping[str, Callable[[], T]]):
        self.kind = kind
        self._factories = dict(factories)

    @classmethod
    def of(cls, kind: str, things: Mapping[str, T]) -> Registry[T]:
        """A registry of things that need no building (classes, functions, constants)."""
        return cls(kind, {name: (lambda thing=thing: thing) for name, thing in things.items()})  # type: ignore[misc]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def check(self, name: str) -> str:
        """The name itself when it is registered; `UnknownName` otherwise."""
        if name not in self._factories:
            raise UnknownName(self.kind, name, self.names)
        return name

    def get(self, name: str) -> T:
        """The thing registered as `name`, built now."""
        return self._factories[self.check(name)]()

    def items(self) -> Iterator[tuple[str, T]]:
        """Every name with its thing, each built now, in the registry's order."""
        return ((name, factory()) for name, factory in self._factories.items())
