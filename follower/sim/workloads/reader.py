"""Read parameter dataclasses from YAML nodes, collecting errors that name `FILE:LINE:COL`.

Builds on the one positioned YAML reader (`rdl.config`): the same node-graph reading, so YAML's
own guesses (timestamps, sexagesimal numbers) never change what the user wrote, and every
value keeps its position. A field's metadata (`follower.sim.workloads.fields`) says how its
value reads; unknown keys get a "did you mean".
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import Field, fields
from pathlib import Path
from typing import Any

import yaml

from follower.sim.workloads.fields import MAX_COUNT
from rdl import units
from rdl.config import ConfigReader
from rdl.errors import did_you_mean, shown
from rdl.nodes import NodeGroup
from rdl.syntax.printer import format_resources
from rdl.tree import Resources

BAD = object()  # a value that failed to read (and was reported)
TRACES_ENV = "RAYON_TRACES"  # a folder where relative trace files are looked up when not next to the scenario
TRUE, FALSE = ("true", "yes", "on"), ("false", "no", "off")
MAX_DURATION = 366 * 86400.0  # seconds: any duration a scenario gives (a job, a slice, a run)


class Reader(ConfigReader):
    """The positioned reader, plus typed parameters, lists and files relative to the scenario's folder."""

    def __init__(self, file: str, folder: Path):
        super().__init__(file)
        self.folder = folder
        self.trace: Path | None = None  # a trace file that replaces the workload's `file`
        self.nodes: tuple[NodeGroup, ...] = ()  # when known: container sizes are checked against them

    def params(self, node: yaml.Node, cls: type, what: str, skip: tuple[str, ...] = ()) -> Any:
        """The dataclass `cls` from a mapping of its fields; BAD when anything in it failed."""
        entries = self.mapping(node, what)
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        failed = not isinstance(node, yaml.MappingNode)
        for name, (key, value) in entries.items():
            if name in skip:
                continue
            if name not in known:
                self.unknown(key, name, [k for k in known if k not in skip], what)
                failed = True
                continue
            read = self.value(value, known[name], f"`{name}` in {what}")
            failed = failed or read is BAD
            values[name] = read
        if failed:
            return BAD
        return self.build(node, cls, values, what)

    def build(self, node: yaml.Node, cls: Callable[..., Any], values: dict[str, Any], what: str) -> Any:
        """`cls(**values)`; its ValueError becomes a positioned error."""
        try:
            return cls(**values)
        except (ValueError, TypeError) as exc:
            self.sink.add(self.span(node), f"{what}: {exc}" if what else str(exc))
            return BAD

    def value(self, node: yaml.Node, spec: Field[Any] | Mapping[str, Any], what: str) -> Any:
        """One value read as its field's metadata says."""
        meta = spec.metadata if isinstance(spec, Field) else spec
        kind = meta.get("kind")
        if kind == "nested":
            return self.params(node, meta["cls"], what)
        if kind == "resources":
            vector = self.resources(node, what)
            return BAD if vector is None or not self.fits(node, vector, what) else vector
        if kind in ("integer_range", "words"):
            return self.sequence(node, meta, what)
        parse = self.parser(meta)
        if parse is None:
            raise AssertionError(f"field {what} has no reading (metadata {dict(meta)})")
        read = self.scalar(node, parse, what)
        return BAD if read is None else read

    def fits(self, node: yaml.Node, size: Resources, what: str) -> bool:
        """Whether a container of this size names only the nodes' resources and fits on one of them."""
        if not self.nodes:
            return True
        names = sorted({name for group in self.nodes for name in group.size})
        for name in size:
            if name not in names:
                self.sink.add(self.span(node), f"{what}: the cluster has no resource `{name}`",
                              expected="one of " + ", ".join(names), hint=did_you_mean(name, names))
                return False
        if not any(all((group.size.get(n) or 0.0) >= v for n, v in size.items()) for group in self.nodes):
            self.sink.add(self.span(node), f"{what}: a container of {format_resources(size)} fits on no node")
            return False
        return True

    def parser(self, meta: Mapping[str, Any]) -> Callable[[str], object] | None:
        kind = meta.get("kind")
        simple: dict[str, Callable[[str], object]] = {
            "duration": _duration, "memory": lambda text: units.parse_quantity("memory", text), "text": _text,
            "flag": _flag, "path": self.path,
        }
        if kind in simple:
            return simple[kind]
        if kind == "number":
            return lambda text: _number(text, meta["minimum"], meta["maximum"], meta["strict"])
        if kind == "integer":
            return lambda text: _integer(text, meta["minimum"], meta["maximum"])
        if kind == "choice":
            return lambda text: _choice(text, meta["options"])
        return None

    def sequence(self, node: yaml.Node, meta: Mapping[str, Any], what: str) -> Any:
        """A list of names (`words`; one name alone is a list of one) or `[low, high]` (`integer_range`)."""
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        if meta["kind"] == "words":
            read = [self.scalar(item, _text, what) for item in items]
            return BAD if None in read else tuple(read)
        if not isinstance(node, yaml.SequenceNode) or len(items) != 2:
            self.sink.add(self.span(node), f"{what} must be `[low, high]`")
            return BAD
        low, high = (self.scalar(item, lambda t: _integer(t, meta["minimum"], MAX_COUNT), what) for item in items)
        if not isinstance(low, int) or not isinstance(high, int):
            return BAD
        if low > high:
            self.sink.add(self.span(node), f"{what}: low {low} is above high {high}")
            return BAD
        return (low, high)

    def path(self, text: str) -> str:
        """A file that exists: absolute, else next to the scenario, else in the folder $RAYON_TRACES names."""
        candidate = Path(text).expanduser()
        if candidate.is_absolute():
            places = [candidate]
        else:
            # Traces are large and often kept apart from the scenarios that use them.
            traces = os.environ.get(TRACES_ENV)
            places = [self.folder / candidate, *([Path(traces).expanduser() / candidate] if traces else [])]
        for place in places:
            if place.is_file():
                return str(place.resolve())
        where = " nor ".join(str(place) for place in places)
        hint = "" if candidate.is_absolute() else f" (set {TRACES_ENV} to a folder that holds it)"
        raise ValueError(f"no such file: {where}{hint}")


def _duration(text: str) -> float:
    value = units.parse_duration(text)
    if value < 0:
        raise ValueError(f"must not be negative, got `{text}`")
    if not value <= MAX_DURATION:  # the simulator walks simulated time step by step: a longer span never ends
        raise ValueError(f"must be at most {units.format_duration(MAX_DURATION)}, got `{text}`")
    return value


def _text(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def _flag(text: str) -> bool:
    if text.lower() in TRUE:
        return True
    if text.lower() in FALSE:
        return False
    raise ValueError(f"expected `true` or `false`, got `{text}`")


def _number(text: str, minimum: float | None, maximum: float | None, strict: bool) -> float:
    value, unit = units.split_number(text)
    if unit:
        raise ValueError(f"expected a plain number, got `{text}`")
    below = minimum is not None and (value <= minimum if strict else value < minimum)
    if below or (maximum is not None and value > maximum):
        low = "" if minimum is None else ("above " if strict else "at least ") + units.format_number(minimum)
        high = "" if maximum is None else "at most " + units.format_number(maximum)
        raise ValueError(f"expected a number {' and '.join(p for p in (low, high) if p)}, got `{text}`")
    return value


def _integer(text: str, minimum: int | None, maximum: int | None = None) -> int:
    value, unit = units.split_number(text)
    if unit or not math.isfinite(value) or value != math.floor(value):
        raise ValueError(f"expected a whole number, got `{shown(text)}`")
    if minimum is not None and value < minimum:
        raise ValueError(f"expected a whole number of at least {minimum}, got `{shown(text)}`")
    if maximum is not None and value > maximum:
        raise ValueError(f"expected a whole number of at most {maximum:,}, got `{shown(text)}`")
    return int(value)


def _choice(text: str, options: tuple[str, ...]) -> str:
    if text not in options:
        hint = did_you_mean(text, options)
        raise ValueError(f"`{text}` is not one of {', '.join(options)}" + (f" ({hint})" if hint else ""))
    return text

