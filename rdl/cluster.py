"""The cluster file: plan origin, step, horizon, capacity (or node groups) and known capacity changes.

Read through the positioned reader (`rdl.config`), so every error names its `FILE:LINE:COL`;
the sharing policy (`policies:`) is checked here too, with positions, so a file that passes
`rayon check` is one every command can plan on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

import yaml

from rdl import config, units
from rdl.config import ConfigReader
from rdl.errors import Span, did_you_mean
from rdl.nodes import (
    NodeGroup,
    NodeKeys,
    check_node_resource_names,
    close_to,
    counted_in_units,
    misspelt_known,
    node_groups,
    node_resource_keys,
)
from rdl.policy import check_policy
from rdl.source import read_text
from rdl.tree import Resources

DEFAULT_STEP = 60
MAX_WINDOWS = 5_000  # recurring capacity changes in one horizon: each is a change the planner's capacity carries
MAX_CELLS = 4_000_000  # plan steps x resources: a year at one minute for 7 resources (a few hundred MB in all)
KEYS = ("start", "step", "horizon", "capacity", "nodes", "changes", "policies", "queues")


@dataclass(frozen=True, slots=True)
class CapacityChange:
    """From `at` on, the cluster's capacity is `capacity`."""

    at: datetime
    capacity: Resources


@dataclass(frozen=True, slots=True)
class CapacityWindow:
    """A recurring change: from `at`, for `length` seconds, every `every` seconds, the named resources have
    `capacity`; outside those windows they have what `capacity` and the changes give (maintenance, say)."""

    at: datetime
    every: float
    length: float
    capacity: Resources  # only the resources it names

    def occurrences(self, start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
        """Each window [from, to) that overlaps [start, end), in time order."""
        first = max(0, math.floor((start - self.at).total_seconds() / self.every))
        index = first
        while True:
            begins = self.at + timedelta(seconds=index * self.every)
            if begins >= end:
                return
            ends = begins + timedelta(seconds=self.length)
            if ends > start:
                yield begins, ends
            index += 1


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the plan is laid over: its clock (origin, step, horizon) and capacity over time."""

    start: datetime
    capacity: Resources
    step: int = DEFAULT_STEP
    horizon: int = 7 * 86400
    nodes: tuple[NodeGroup, ...] = ()
    changes: tuple[CapacityChange, ...] = ()
    windows: tuple[CapacityWindow, ...] = ()  # recurring changes (`changes` items with `every` and `for`)
    policies: Mapping[str, object] = field(default_factory=dict, compare=False)
    queues: tuple[str, ...] = ()  # the queues reservations may name (YARN's reservable queues); (): any queue

    @property
    def resource_names(self) -> tuple[str, ...]:
        return tuple(self.capacity)

    @property
    def steps(self) -> int:
        """Number of plan steps in the horizon."""
        return self.horizon // self.step

    @property
    def roll_steps(self) -> int:
        """The steps a stored plan's window moves by at a time: whole hours (a sixteenth of the horizon when that is
        shorter, one step at least), so that the plan reaches between `horizon` less that and `horizon` ahead of
        its clock and the cost of rolling it is spread over that many steps."""
        return max(1, min(self.steps // 16, 3600 // self.step))

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.steps * self.step)

    def peak_capacity(self) -> Resources:
        """The most of each resource the cluster ever has: what "larger than the cluster" is measured against."""
        peak = dict(self.capacity)
        for vector in [c.capacity for c in self.changes] + [w.capacity for w in self.windows]:
            for name, value in vector.items():
                peak[name] = max(peak.get(name, 0.0), value)
        return Resources.of(peak)


def positive_duration(text: str) -> float:
    """A duration in seconds that must be above zero (ValueError otherwise)."""
    value = units.parse_duration(text)
    if value <= 0:
        raise ValueError(f"must be positive, got `{text}`")
    return value


def parse_cluster(text: str, file: str = "<cluster>") -> Cluster:
    """Parse and validate a cluster file; raises RDLErrors naming every problem."""
    sources = {file: text}
    reader = ConfigReader(file)
    root = reader.compose(text, "the cluster file", "`start`, `step`, `horizon`, `capacity`")
    reader.sink.raise_if_any(sources)
    assert root is not None
    entries = reader.mapping(root, "the cluster file")
    if "workload" in entries and not {"capacity", "nodes"} & set(entries):  # not a list of a scenario's keys
        reader.sink.add(Span(file, 1, 1), "this is a simulation scenario (it has `workload`), not a cluster file",
                        hint=f"`rayon simulate {file}` runs it; a cluster file holds `start`, `step`, `horizon` and "
                        "`capacity` (or `nodes`)")
        reader.sink.raise_if_any(sources)
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
    node_keys = node_resource_keys(reader, entries["nodes"][1]) if "nodes" in entries else []
    check_node_resource_names(reader, node_keys)
    changes, windows = _changes(reader, entries, start, capacity, node_keys, step)
    if isinstance(step, int | float):
        if step != int(step):
            reader.sink.add(reader.span(entries["step"][1]), "`step` must be a whole number of seconds")
        elif isinstance(horizon, float) and horizon < step and "horizon" not in entries:  # `step: 30d`
            reader.sink.add(reader.span(entries["step"][1]), "`step` is longer than the default `horizon` (7d)",
                            hint="give a `horizon` of at least one step, or a shorter `step`")
        elif isinstance(horizon, float) and horizon < step:
            reader.sink.add(reader.span(entries["horizon"][1]), "`horizon` must be at least one step")
        elif isinstance(horizon, float):
            _check_size(reader, entries.get("horizon", entries.get("step", (root, root)))[1], step, horizon,
                        len(capacity or {}))
            _check_density(reader, entries, windows, horizon)
    policies: dict[str, object] = {}
    if "policies" in entries:
        node = entries["policies"][1]
        policies = reader.plain(node, "`policies`")
        if isinstance(step, int | float) and step == int(step) and step > 0:
            check_policy(policies, int(step), file, reader.locator(node, "policies"), reader.sink)
    queues = _queues(reader, entries["queues"][1]) if "queues" in entries else ()
    reader.sink.raise_if_any(sources)
    assert start is not None and capacity is not None
    assert isinstance(step, float | int) and isinstance(horizon, float | int)
    return Cluster(start=start, capacity=capacity, step=int(step), horizon=int(horizon), nodes=nodes,
                   changes=changes, windows=windows, policies=policies, queues=queues)


def _queues(reader: ConfigReader, node: yaml.Node) -> tuple[str, ...]:
    """`queues`: a non-empty list of distinct queue names."""
    example = "for example `queues: [dedicated, prod]`"
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        reader.sink.add(reader.span(node), "`queues` must be a non-empty list of queue names", hint=example)
        return ()
    names: list[str] = []
    for item in node.value:
        name = item.value.strip() if isinstance(item, yaml.ScalarNode) and isinstance(item.value, str) else ""
        if not name or item.tag == "tag:yaml.org,2002:null":
            reader.sink.add(reader.span(item), "a queue name must be a non-empty word", hint=example)
        elif name in names:
            reader.sink.add(reader.span(item), f"queue `{name}` is listed twice in `queues`")
        else:
            names.append(name)
    return tuple(names)


def _check_size(reader: ConfigReader, where: yaml.Node, step: float, horizon: float, resources: int) -> None:
    """The plan's arrays hold steps x resources cells: at most MAX_CELLS, so that no file can exhaust memory."""
    steps, resources = int(horizon // step), max(1, resources)
    if steps * resources > MAX_CELLS:
        reader.sink.add(reader.span(where), f"the plan would be {steps:,} steps of {units.format_duration(step)} for "
                        f"{resources} resource(s); at most {MAX_CELLS:,} steps x resources are planned",
                        hint="a longer `step` or a shorter `horizon`")


def _check_density(reader: ConfigReader, entries: dict, windows: tuple[CapacityWindow, ...], horizon: float) -> None:
    """The recurring changes start at most MAX_WINDOWS times in one horizon (`every: 2s` for a week is 302,400:
    it passes `check` at once but makes every submission slow)."""
    count = sum(math.ceil(horizon / window.every) + 1 for window in windows)
    if count > MAX_WINDOWS:
        reader.sink.add(reader.span(entries["changes"][1]), f"the recurring capacity changes come {count:,} times in "
                        f"one horizon ({units.format_duration(horizon)}); at most {MAX_WINDOWS:,}",
                        hint="repeat them less often (a longer `every`), or plan a shorter `horizon`")


def _capacity(reader: ConfigReader, entries: dict, file: str) -> tuple[Resources | None, tuple[NodeGroup, ...]]:
    if "capacity" in entries and "nodes" in entries:
        reader.sink.add(reader.span(entries["nodes"][0]), "give either `capacity` or `nodes`, not both")
    if "capacity" in entries:
        counted_in_units(reader, entries["capacity"][1], "`capacity`")
        misspelt_known(reader, entries["capacity"][1], "`capacity`")
        capacity = reader.resources(entries["capacity"][1], "`capacity`")
        if capacity is None and isinstance(entries["capacity"][1], yaml.MappingNode):
            reader.sink.add(reader.span(entries["capacity"][1]), "`capacity` names no resource",
                            hint="for example `capacity: {memory: 512GiB, vcores: 256}`")
        return capacity, ()
    if "nodes" in entries:
        groups = node_groups(reader, entries["nodes"][1])
        total: dict[str, float] = {}
        for group in groups:
            for name, value in group.size.items():
                total[name] = total.get(name, 0.0) + value * group.count
        for name, value in total.items():
            if not math.isfinite(value):  # `vcores: 1e308` on 16 nodes
                reader.sink.add(reader.span(entries["nodes"][1]), f"the nodes' `{name}` adds up to more than a "
                                "number can hold", hint="give each node its real size")
                return None, groups
        return (Resources.of(total) if total else None), groups
    reader.sink.add(Span(file, 1, 1), "the cluster file needs `capacity` (or `nodes`)",
                    hint="for example `capacity: {memory: 512GiB, vcores: 256}`")
    return None, ()


CHANGE_KEYS = ("at", "capacity", "every", "for")


def _changes(reader: ConfigReader, entries: dict, start: datetime | None, capacity: Resources | None,
             node_keys: NodeKeys, step: object) -> tuple[tuple[CapacityChange, ...], tuple[CapacityWindow, ...]]:
    """The timeline of one-off changes, and the recurring ones (`every` with `for`: windows)."""
    if "changes" not in entries:
        return (), ()
    node = entries["changes"][1]
    if not isinstance(node, yaml.SequenceNode):
        reader.sink.add(reader.span(node), "`changes` must be a list of `{at: TIME, capacity: {...}}`")
        return (), ()
    stated = []
    windows = []
    reported: set[str] = set()
    for item in node.value:
        fields = reader.mapping(item, "a capacity change")
        for name, (key, _) in fields.items():
            if name not in CHANGE_KEYS:
                reader.unknown(key, name, CHANGE_KEYS, "a capacity change")
        if "at" not in fields or "capacity" not in fields:
            reader.sink.add(reader.span(item), "a capacity change needs `at` and `capacity`")
            continue
        at = reader.time(fields["at"][1], start, "`at`")
        counted_in_units(reader, fields["capacity"][1], "the changed capacity")
        new = reader.resources(fields["capacity"][1], "the changed capacity", zero=True)  # 0: an outage
        if new is not None and capacity is not None:
            for name in new:
                if name not in capacity:
                    _unknown_changed_resource(reader, name, fields["capacity"][1], capacity, node_keys, reported)
        recurring = _recurrence(reader, item, fields, step)
        if at is None or new is None or recurring is False:
            continue
        if recurring is None:
            stated.append((at, new))
        else:
            windows.append(CapacityWindow(at, recurring[0], recurring[1], new))
    # In time order, a change sets what it names; every other resource keeps the value it had just before.
    changes, current = [], dict(capacity or {})
    for at, new in sorted(stated, key=lambda change: change[0]):
        current = {**current, **dict(new)}
        changes.append(CapacityChange(at, Resources.of(current)))
    return tuple(changes), tuple(windows)


def _recurrence(reader: ConfigReader, item: yaml.Node, fields: dict,
                step: object) -> tuple[float, float] | Literal[False] | None:
    """(every, for) of a recurring change; None for a one-off change; False when either is wrong."""
    if "every" not in fields and "for" not in fields:
        return None
    if "every" not in fields or "for" not in fields:
        reader.sink.add(reader.span(item), "a recurring capacity change needs both `every` and `for`",
                        hint="for example `{at: 2026-11-26T00:00:00Z, every: 7d, for: 6h, capacity: {...}}`")
        return False
    every = reader.scalar(fields["every"][1], positive_duration, "`every`")
    length = reader.scalar(fields["for"][1], positive_duration, "`for`")
    if not isinstance(every, float) or not isinstance(length, float):
        return False
    if isinstance(step, int | float) and every < step:
        reader.sink.add(reader.span(fields["every"][1]), f"`every` ({units.format_duration(every)}) must be at least "
                        f"the plan step ({units.format_duration(step)})")
        return False
    if length >= every:
        reader.sink.add(reader.span(fields["for"][1]), f"`for` ({units.format_duration(length)}) must be shorter "
                        f"than `every` ({units.format_duration(every)})", hint="otherwise the change never ends: "
                        "give it as a one-off change")
        return False
    return every, length


def _unknown_changed_resource(reader: ConfigReader, name: str, node: yaml.Node, capacity: Resources,
                              node_keys: NodeKeys, reported: set[str]) -> None:
    """A change names a resource the cluster lacks: when a node group spells one like it (`vcore` for
    `vcores`), the typo is most likely in the node group, so report there (once); else at the change."""
    close = close_to(name, list(capacity))
    written = [(group, keys[close]) for group, keys in node_keys if close in keys]
    if not written:
        reader.sink.add(reader.span(node), f"the cluster has no resource `{name}`",
                        expected="one of " + ", ".join(capacity), hint=did_you_mean(name, capacity))
        return
    if close in reported:
        return
    reported.add(str(close))
    for group, key in written:
        reader.sink.add(reader.span(key), f"node group `{group}` names resource `{close}`, but `changes` name "
                        f"`{name}`", hint=f"did you mean `{name}`?")


def load_cluster(path: str | Path) -> Cluster:
    """Read and validate a cluster file."""
    path = Path(path)
    return parse_cluster(read_text(path), str(path))


def is_cluster_text(text: str) -> bool:
    """Whether a YAML text looks like a cluster file (has a top-level `capacity` or `nodes`)."""
    try:
        data = config.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and ("capacity" in data or "nodes" in data)

