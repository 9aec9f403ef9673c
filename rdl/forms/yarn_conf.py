"""A YARN reservable queue's settings (`capacity-scheduler.xml`) as a cluster file, so a YARN user starts from what
they have: `rayon init --from-yarn capacity-scheduler.xml --queue root.dedicated --capacity {...}`.

Read, for the queue `Q` (its full path, `root.` first): `yarn.scheduler.capacity.Q.reservable` (must be true),
the queue's absolute share of the cluster (the product of `capacity` percentages from root down to it),
`instantaneous-max-capacity` and `average-capacity` (percentages of the queue, as YARN's
`CapacityOverTimePolicy` reads them) over `reservation-window` (milliseconds, one day when absent), and
`reservation-agent` (named in a comment: agents are chosen per submission here). The cluster's whole capacity is
not in the file (YARN learns it from its nodes): the caller gives it. Hadoop's XML is read with the standard
library's parser (which resolves no external entity).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from datetime import datetime

import yaml

from rdl import units

PREFIX = "yarn.scheduler.capacity."
DEFAULT_WINDOW_MS = 86_400_000
YARN_AGENTS = {"GreedyReservationAgent": "gree", "AlignedPlannerWithGreedy": "gree-l"}  # the nearest of ours


class YarnConfError(ValueError):
    """A capacity-scheduler file that cannot give a reservable queue's settings; the message says why and where."""


def read_properties(text: str, source: str) -> dict[str, str]:
    """Hadoop configuration XML as {name: value}."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise YarnConfError(f"{source}:{line}:{column + 1}: not well-formed XML: {exc}") from None
    found = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is not None and value is not None:
            found[name.strip()] = value.strip()
    return found


def cluster_yaml(properties: Mapping[str, str], queue: str, capacity: Mapping[str, float], start: datetime,
                 step: float, horizon: float, source: str) -> str:
    """The cluster file for reservable queue `queue` of a cluster of `capacity` (memory in MiB)."""
    if not queue.startswith("root."):
        raise YarnConfError(f"give the queue's full path, such as root.{queue}")
    if properties.get(f"{PREFIX}{queue}.reservable", "false").lower() != "true":
        reservable = sorted(name[len(PREFIX):-len(".reservable")] for name, value in properties.items()
                            if name.startswith(PREFIX) and name.endswith(".reservable") and value.lower() == "true")
        raise YarnConfError(f"{source}: queue `{queue}` is not reservable (no `{PREFIX}{queue}.reservable` true); "
                            f"reservable queues there: {', '.join(reservable) or 'none'}")
    share = 1.0
    parts = queue.split(".")
    for depth in range(2, len(parts) + 1):
        path = ".".join(parts[:depth])
        share *= _percent(properties, f"{PREFIX}{path}.capacity", None, source) / 100
    instantaneous = _percent(properties, f"{PREFIX}{queue}.instantaneous-max-capacity", 100.0, source)
    average = _percent(properties, f"{PREFIX}{queue}.average-capacity", 100.0, source)
    window_ms = _number(properties, f"{PREFIX}{queue}.reservation-window", DEFAULT_WINDOW_MS, source)
    agent = properties.get(f"{PREFIX}{queue}.reservation-agent", "GreedyReservationAgent").rsplit(".", 1)[-1]
    # Whole MiB and whole vcores, rounded down as YARN rounds a queue's share (`Resources.multiplyAndRoundDown`).
    vector = {name: math.floor(value * share + 1e-9) for name, value in capacity.items()}
    document: dict[str, object] = {
        "start": units.format_instant(start), "step": units.format_duration(step),
        "horizon": units.format_duration(horizon),
        "capacity": {name: _amount(name, value) for name, value in vector.items()},
        "queues": [parts[-1]],
    }
    limits = {}
    if instantaneous < 100:
        limits["instantaneous"] = f"{instantaneous:g}%"
    if average < 100:
        limits["average"] = f"{average:g}%"
    if limits:
        window = max(step, math.ceil(window_ms / 1000 / step) * step)
        limits["window"] = units.format_duration(window)
        document["policies"] = {"user_limits": limits}
    ours = YARN_AGENTS.get(agent)
    header = (f"# From {source}: YARN's reservable queue {queue}, {share:.4g} of the cluster; its agent "
              f"{agent}{f' (the nearest here: --agent {ours})' if ours else ''}.\n")
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None)


def _amount(name: str, value: float) -> str | int | float:
    """A capacity as the cluster file writes it: memory with its unit, counts as plain numbers."""
    if name == units.MEMORY:
        return units.format_quantity(name, value)
    return int(value) if value == int(value) else round(value, 3)


def _number(properties: Mapping[str, str], name: str, default: float | None, source: str) -> float:
    text = properties.get(name)
    if text is None:
        if default is None:
            raise YarnConfError(f"{source}: `{name}` is not set")
        return default
    try:
        value = float(text)
    except ValueError:
        raise YarnConfError(f"{source}: `{name}` is `{text}`, not a number") from None
    if not math.isfinite(value) or value < 0:
        raise YarnConfError(f"{source}: `{name}` is `{text}`, not a non-negative number")
    return value


def _percent(properties: Mapping[str, str], name: str, default: float | None, source: str) -> float:
    value = _number(properties, name, default, source)
    if value > 100:
        raise YarnConfError(f"{source}: `{name}` is {value:g}, above 100 (a percentage)")
    return value
