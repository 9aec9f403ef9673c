"""What one user sees of the queues (`GET /v1/queues`): their own reservations' queues by name, every other user's
summed into one anonymous entry, as the list and YARN endpoints refuse other users' names (issue #29)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any as AnyType

OTHERS = "others"  # the kind of the anonymous entry: every other user's reservation queues, summed


def seen_by(answer: Mapping[str, AnyType], owners: Mapping[str, str | None], user: str) -> dict[str, AnyType]:
    """`answer` (the round as `/v1/queues` gives it) with other users' reservation queues and ended reservations
    left out, and their load kept as one `others` entry (`count` queues; no name, no path, no max)."""
    own: list[dict[str, AnyType]] = []
    others: list[dict[str, AnyType]] = []
    for queue in answer["queues"]:
        mine = queue["kind"] != "reservation" or owners.get(queue["reservation"]) == user
        (own if mine else others).append(queue)
    if others:
        own.append({"queue": None, "kind": OTHERS, "reservation": None, "count": len(others),
                    "guaranteed": _sum(q["guaranteed"] for q in others), "max": None,
                    "planned": _sum(q["planned"] for q in others)})
    return {**answer, "queues": own, "ended": [name for name in answer["ended"] if owners.get(name) == user]}


def _sum(vectors: AnyType) -> dict[str, int | float]:
    """The resource vectors added up, whole amounts as integers."""
    total: dict[str, float] = {}
    for vector in vectors:
        for name, value in vector.items():
            total[name] = total.get(name, 0) + value
    return {name: int(value) if float(value).is_integer() else value for name, value in total.items()}
