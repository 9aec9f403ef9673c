"""Plan resource vectors for people and for JSON (plan units: memory in MiB)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

from rdl import units
from rdl.tree import Resources


def vector_json(resources: Mapping[str, float]) -> dict[str, int | float]:
    """A resource vector for JSON, in plan units (memory in MiB); whole amounts as integers."""
    return {name: int(value) if float(value).is_integer() else value for name, value in resources.items()}


def format_amount(name: str, value: float) -> str:
    """One quantity for people: `4GiB`, `20`, `0`; scaled ones to at most three decimals."""
    tidy = float(round(value)) if math.isclose(value, round(value), abs_tol=1e-6) else round(value, 3)
    return units.format_quantity(name, tidy) if tidy else "0"


def format_vector(resources: Mapping[str, float]) -> str:
    """`{memory: 4GiB, vcores: 2}` for people."""
    return "{" + ", ".join(f"{k}: {format_amount(k, v)}" for k, v in resources.items()) + "}"


@functools.lru_cache(maxsize=4096)
def settings_text(guaranteed: Resources, maximum: Resources | None) -> str:
    """`guaranteed {...}, max {...}` (or `no max`), as an action's detail.

    Cached: rounds repeat the same settings step after step (the simulator runs thousands).
    """
    limit = "no max" if maximum is None else f"max {format_vector(maximum)}"
    return f"guaranteed {format_vector(guaranteed)}, {limit}"
