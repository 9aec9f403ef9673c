"""How a parameter is written in a scenario file: metadata on the fields of the parameter dataclasses.

The generators and importers declare their parameters as frozen dataclasses; each field's
metadata says how its YAML value reads (a duration with a unit, a bounded number, a list of
names, a resource vector, a nested group of parameters). `follower.sim.scenario` reads any such
dataclass from YAML with positioned errors, so a parameter is declared once, beside its use.
"""

from __future__ import annotations

from typing import Any

Meta = dict[str, Any]


def duration() -> Meta:
    """A duration with a unit (`90s`, `10m`, `1.5h`, `7d`), in seconds."""
    return {"kind": "duration"}


def number(minimum: float | None = None, maximum: float | None = None, strict: bool = False) -> Meta:
    """A plain number within bounds (`strict`: strictly above the minimum)."""
    return {"kind": "number", "minimum": minimum, "maximum": maximum, "strict": strict}


MAX_COUNT = 100_000  # any count in a scenario (jobs, users, bursts, executors): each is work the simulator does


def integer(minimum: int | None = None, maximum: int = MAX_COUNT) -> Meta:
    """A whole number, at least `minimum` and at most `maximum`."""
    return {"kind": "integer", "minimum": minimum, "maximum": maximum}


def integer_range(minimum: int = 0) -> Meta:
    """`[low, high]`: two whole numbers, low ≤ high, both at least `minimum`."""
    return {"kind": "integer_range", "minimum": minimum}


def words() -> Meta:
    """A name or a list of names (`[1, 2]` reads as `("1", "2")`)."""
    return {"kind": "words"}


def text() -> Meta:
    """One name."""
    return {"kind": "text"}


def choice(*options: str) -> Meta:
    """One of a few names."""
    return {"kind": "choice", "options": options}


def resources() -> Meta:
    """A resource vector `{memory: 4GiB, vcores: 2}` (memory in MiB; other resources are counts)."""
    return {"kind": "resources"}


def memory() -> Meta:
    """A memory size with a unit (`12GiB`; a bare number is MiB), in MiB."""
    return {"kind": "memory"}


def path() -> Meta:
    """A file, relative to the scenario file's folder."""
    return {"kind": "path"}


def flag() -> Meta:
    """`true` or `false`."""
    return {"kind": "flag"}


def nested(cls: type) -> Meta:
    """A mapping read as another parameter dataclass."""
    return {"kind": "nested", "cls": cls}
