"""The cluster file: plan origin, step, horizon, capacity (or node groups) and known capacity changes.

Read through YAML's node graph rather than plain `safe_load` so that every error names
its `FILE:LINE:COL`, and so that YAML's own guesses (timestamps, sexagesimal numbers)
never change what the user wrote.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import yaml

from rdl import units
from rdl.errors import ErrorSink, Span, did_you_mean
from rdl.tree import Resources

DEFAULT_STEP = 60
KEYS = ("start", "step", "horizon", "capacity", "nodes", "changes", "policies")


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """`count` identical nodes of the given size."""

    name: str
    count: int
    size: Resources


@dataclass(frozen=True, slots=True)
class CapacityChange:
    """From `at` on, the cluster's capacity is `capacity`."""

    at: datetime
    capacity: Resources


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the plan is laid over: its clock (origin, step, horizon) and capacity over time."""

    start: datetime
    capacity: Resources
    step: int = DEFAULT_STEP
    horizon: int = 7 * 86400
    nodes: tuple[NodeGroup, ...] = ()
    changes: tuple[CapacityChange, ...] = ()
    policies: Mapping[str, object] = field(default_factory=dict, compare=False)

    @property
    def resource_names(self) -> tuple[str, ...]:
        return tuple(self.capacity)

    @property
    def steps(self) -> int:
        """Number of plan steps in the horizon."""
        return self.horizon // self.step

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.steps * self.step)

    def peak_capacity(self) -> Resources:
        """The most of each resource the cluster ever has: what "larger than the cluster" is measured against."""
        peak = dict(self.capacity)
        for change in self.changes:
            for name, value in change.capacity.items():
                peak[name] = max(peak.get(name, 0.0), value)
        return Resources.of(peak)


class _Reader:
    """Turns the YAML node graph into a Cluster, collecting positioned errors."""

    def __init__(self, file: str):
        self.file = file
        self.sink = ErrorSink()

    def span(self, node: yaml.Node) -> Span:
        return Span(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            self.sink.add(self.span(node), f"{what} must be a mapping of `key: value`")
            return {}
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            name = str(key.value)
            if name in entries:
                self.sink.add(self.span(key), f"`{name}` is given twice in {what}")
            entries[name] = (key, value)
        return entries

    def scalar(self, node: yaml.Node, parse: Callable[[str], object], what: str) -> object:
        if not isinstance(node, yaml.ScalarNode):
            self.sink.add(self.span(node), f"{what} must be a single value")
            return None
        try:
            return parse(str(node.value))
        except ValueError as exc:
            self.sink.add(self.span(node), f"{what}: {exc}")
            return None

    def resources(self, node: yaml.Node, what: str) -> Resources | None:
        return self.resource_entries(self.mapping(node, what), what)

    def resource_entries(self, entries: dict[str, tuple[yaml.Node, yaml.Node]], what: str) -> Resources | None:
        values = {}
        for name, (_, value) in entries.items():
            quantity = self.scalar(value, partial(units.parse_quantity, name), f"`{name}`")
            if isinstance(quantity, float):
                if quantity <= 0:
                    self.sink.add(self.span(value), f"`{name}` in {what} must be positive, got {value.value}")
                values[name] = quantity
        return Resources.of(values) if values else None

    def time(self, node: yaml.Node, start: datetime | None, what: str) -> datetime | None:
        def parse(text: str) -> datetime:
            if text.startswith("+"):
                if start is None:
                    raise ValueError("a relative time needs a valid `start`")
                return start + timedelta(seconds=units.parse_relative(text))
            return units.parse_instant(text)

        value = self.scalar(node, parse, what)
        return value if isinstance(value, datetime) else None

    def node_groups(self, node: yaml.Node) -> tuple[NodeGroup, ...]:
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            self.sink.add(self.span(node), "`nodes` must be a list of `{name, count, <resources>}`")
            return ()
        groups = []
        for index, item in enumerate(node.value):
            entries = self.mapping(item, f"node group {index + 1}")
            name_entry = entries.pop("name", None)
            name = str(name_entry[1].value) if name_entry else f"group{index + 1}"
            count_entry = entries.pop("count", None)
            count = self.scalar(count_entry[1], _positive_int, "`count`") if count_entry else 1
            size = self.resource_entries(entries, f"node group `{name}`")
            if size is not None and isinstance(count, int):
                groups.append(NodeGroup(name, count, size))
        return tuple(groups)


def _positive_int(text: str) -> int:
    value = float(text)
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got `{text}`")
    return int(value)


def positive_duration(text: str) -> float:
    """A duration in seconds that must be above zero (ValueError otherwise)."""
    value = units.parse_duration(text)
    if value <= 0:
        raise ValueError(f"must be positive, got `{text}`")
    return value


def parse_cluster(text: str, file: str = "<cluster>") -> Cluster:
    """Parse and validate a cluster file; raises RDLErrors naming every problem."""
    sources = {file: text}
    reader = _Reader(file)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        span = Span(file, mark.line + 1, mark.column + 1) if mark else Span(file)
        reader.sink.add(span, f"not valid YAML: {getattr(exc, 'problem', exc)}")
        reader.sink.raise_if_any(sources)
        raise AssertionError("unreachable") from None
    if root is None:
        reader.sink.add(Span(file, 1, 1), "the cluster file is empty",
                        expected="`start`, `step`, `horizon`, `capacity`")
        reader.sink.raise_if_any(sources)
    assert root is not None
    entries = reader.mapping(root, "the cluster file")
    for name, (key, _) in entries.items():
        if name not in KEYS:
            reader.sink.add(reader.span(key), f"unknown cluster key `{name}`", expected="one of " + ", ".join(KEYS),
                            hint=did_you_mean(name, KEYS))
    start = reader.time(entries["start"][1], None, "`start`") if "start" in entries else None
    if "start" not in entries:
        reader.sink.add(Span(file, 1, 1), "the cluster file needs `start`", hint="the plan's origin, e.g. "
                        "`start: 2026-11-23T00:00:00Z`")
    step = reader.scalar(entries["step"][1], positive_duration, "`step`") if "step" in entries else DEFAULT_STEP
    horizon = reader.scalar(entries["horizon"][1], positive_duration, "`horizon`") if "horizon" in entries \
        else 7 * 86400.0
    capacity, nodes = _capacity(reader, entries, file)
    changes = _changes(reader, entries, start, capacity)
    if isinstance(step, float):
        if step != int(step):
            reader.sink.add(reader.span(entries["step"][1]), "`step` must be a whole number of seconds")
        elif isinstance(horizon, float) and horizon < step:
            reader.sink.add(reader.span(entries["horizon"][1]), "`horizon` must be at least one step")
    policies: dict[str, object] = {}
    if "policies" in entries:
        try:
            policies = yaml.safe_load(yaml.serialize(entries["policies"][1])) or {}
        except yaml.YAMLError as exc:  # a tag safe_load refuses, such as `!!python/object`
            reader.sink.add(reader.span(entries["policies"][1]), f"`policies`: {getattr(exc, 'problem', exc)}")
    reader.sink.raise_if_any(sources)
    assert start is not None and capacity is not None
    assert isinstance(step, float | int) and isinstance(horizon, float | int)
    return Cluster(start=start, capacity=capacity, step=int(step), horizon=int(horizon), nodes=nodes,
                   changes=changes, policies=policies)


def _capacity(reader: _Reader, entries: dict, file: str) -> tuple[Resources | None, tuple[NodeGroup, ...]]:
    if "capacity" in entries and "nodes" in entries:
        reader.sink.add(reader.span(entries["nodes"][0]), "give either `capacity` or `nodes`, not both")
    if "capacity" in entries:
        return reader.resources(entries["capacity"][1], "`capacity`"), ()
    if "nodes" in entries:
        groups = reader.node_groups(entries["nodes"][1])
        total: dict[str, float] = {}
        for group in groups:
            for name, value in group.size.items():
                total[name] = total.get(name, 0.0) + value * group.count
        return (Resources.of(total) if total else None), groups
    reader.sink.add(Span(file, 1, 1), "the cluster file needs `capacity` (or `nodes`)",
                    hint="for example `capacity: {memory: 512GiB, vcores: 256}`")
    return None, ()


def _changes(reader: _Reader, entries: dict, start: datetime | None,
             capacity: Resources | None) -> tuple[CapacityChange, ...]:
    if "changes" not in entries:
        return ()
    node = entries["changes"][1]
    if not isinstance(node, yaml.SequenceNode):
        reader.sink.add(reader.span(node), "`changes` must be a list of `{at: TIME, capacity: {...}}`")
        return ()
    changes = []
    for item in node.value:
        fields = reader.mapping(item, "a capacity change")
        if "at" not in fields or "capacity" not in fields:
            reader.sink.add(reader.span(item), "a capacity change needs `at` and `capacity`")
            continue
        at = reader.time(fields["at"][1], start, "`at`")
        new = reader.resources(fields["capacity"][1], "the changed capacity")
        if new is not None and capacity is not None:
            for name in new:
                if name not in capacity:
                    reader.sink.add(reader.span(fields["capacity"][1]), f"the cluster has no resource `{name}`",
                                    expected="one of " + ", ".join(capacity))
        if at is not None and new is not None:
            changes.append(CapacityChange(at, Resources.of({**dict(capacity or {}), **dict(new)})))
    return tuple(sorted(changes, key=lambda c: c.at))


def load_cluster(path: str | Path) -> Cluster:
    """Read and validate a cluster file."""
    path = Path(path)
    return parse_cluster(path.read_text(), str(path))


def is_cluster_text(text: str) -> bool:
    """Whether a YAML text looks like a cluster file (has a top-level `capacity` or `nodes`)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and ("capacity" in data or "nodes" in data)

