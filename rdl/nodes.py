"""A cluster file's resources as its author wrote them: node groups (`nodes:`), the names other systems give a
resource (`cpus` for `vcores`), and misspellings (`memroy`, a node group's `vcore` beside the others' `vcores`),
each reported at its `FILE:LINE:COL` by the positioned reader (`rdl.config`)."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import yaml

from rdl import units
from rdl.config import ConfigReader, Entries
from rdl.tree import Resources


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """`count` identical nodes of the given size."""

    name: str
    count: int
    size: Resources


# Names other systems give a resource rayon (and YARN) call otherwise: a cluster naming one would plan a resource
# no reservation asks for, and leave the one they ask for at nothing (`cpus: 32` on 64 nodes, issue #30).
# (`vcore` beside `vcores` is a misspelling, reported where the others are: `check_node_resource_names`.)
ALIASES = {"cpus": "vcores", "cpu": "vcores", "cores": "vcores", "vcpus": "vcores", "vcpu": "vcores",
           "mem": "memory", "ram": "memory"}
KNOWN_RESOURCES = (units.MEMORY, "vcores")  # what reservations ask for: a name in `capacity` spelt nearly so is a typo


def counted_in_units(reader: ConfigReader, node: yaml.Node, what: str, skip: tuple[str, ...] = ()) -> None:
    """Report a resource named as other systems name it (`cpus` for `vcores`), and a fractional amount of one counted
    in units (everything but memory: `vcores: 819.2`), each at its place."""
    if not isinstance(node, yaml.MappingNode):
        return  # reported where the vector is read
    for key, value in node.value:
        name = str(key.value)
        if name in skip:
            continue
        if name in ALIASES:
            reader.sink.add(reader.span(key), f"{what} names `{name}`: rayon calls this resource `{ALIASES[name]}`",
                            hint=f"did you mean `{ALIASES[name]}`?")
        elif name != units.MEMORY and isinstance(value, yaml.ScalarNode):
            try:
                amount = units.parse_quantity(name, str(value.value))
            except ValueError:
                continue  # reported where the vector is read
            if math.isfinite(amount) and amount != int(amount):
                reader.sink.add(reader.span(value), f"`{name}` in {what} must be a whole number (it is counted in "
                                f"units), got {value.value}", hint=f"such as `{name}: {max(1, math.floor(amount))}`")


def misspelt_known(reader: ConfigReader, node: yaml.Node, what: str) -> None:
    """Report a resource of `capacity` spelt nearly as `memory` or `vcores` (`memroy`, `vcore`): read as a resource of
    its own, it would leave the one every reservation asks for missing. (Node groups compare their spellings with
    each other's, `check_node_resource_names`; a change may name only the resources the capacity has.)"""
    if not isinstance(node, yaml.MappingNode):
        return
    for key, _ in node.value:
        name = str(key.value)
        if name not in KNOWN_RESOURCES and name not in ALIASES \
                and (known := close_to(name, list(KNOWN_RESOURCES), 0.8)) is not None:
            reader.sink.add(reader.span(key), f"{what} names `{name}`, which looks like `{known}` misspelt",
                            hint=f"did you mean `{known}`?")


def node_groups(reader: ConfigReader, node: yaml.Node) -> tuple[NodeGroup, ...]:
    """`nodes: [{name, count, <resources>}, ...]` as node groups."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        reader.sink.add(reader.span(node), "`nodes` must be a list of `{name, count, <resources>}`")
        return ()
    groups = []
    for index, item in enumerate(node.value):
        entries = dict(reader.mapping(item, f"node group {index + 1}"))
        _misspelt_group_keys(reader, entries, index)
        name_entry = entries.pop("name", None)
        name = str(name_entry[1].value) if name_entry else f"group{index + 1}"
        count_entry = entries.pop("count", None)
        count = reader.scalar(count_entry[1], _positive_int, "`count`") if count_entry else 1
        counted_in_units(reader, item, f"node group `{name}`", skip=("name", "count"))
        size = reader.resource_entries(entries, f"node group `{name}`")
        if size is not None and isinstance(count, int):
            groups.append(NodeGroup(name, count, size))
    return tuple(groups)


def _misspelt_group_keys(reader: ConfigReader, entries: Entries, index: int) -> None:
    """Report, and drop, a key of a node group that is `count` or `name` misspelt (`cont: 4`), which would otherwise be
    read as a resource while the group silently took one node: a group without `count` whose key is close to it, or
    without `name` whose key is close to it and holds no number."""
    for word in ("count", "name"):
        if word in entries:
            continue
        for key in list(entries):
            value = entries[key][1]
            if close_to(key, [word]) is None or key in ALIASES or key == units.MEMORY:
                continue
            if word == "name" and isinstance(value, yaml.ScalarNode) and _is_number(str(value.value)):
                continue
            reader.sink.add(reader.span(entries[key][0]), f"node group {index + 1} has `{key}`, which is neither a "
                            f"resource's amount nor a key of a node group (`name`, `count`)",
                            hint=f"did you mean `{word}`?")
            del entries[key]
            break


def _is_number(text: str) -> bool:
    try:
        units.split_number(text)
    except ValueError:
        return False
    return True


# Per node group, its name and the key node of each resource it names: where a misspelt resource is written.
NodeKeys = list[tuple[str, dict[str, yaml.Node]]]


def node_resource_keys(reader: ConfigReader, node: yaml.Node) -> NodeKeys:
    """For each node group of `nodes:`, its name and its resources' key nodes (read once with `node_groups`)."""
    if not isinstance(node, yaml.SequenceNode):
        return []
    found = []
    for index, item in enumerate(node.value):
        entries = reader.mapping(item, f"node group {index + 1}")
        name = str(entries["name"][1].value) if "name" in entries else f"group{index + 1}"
        found.append((name, {k: key for k, (key, _) in entries.items() if k not in ("name", "count")}))
    return found


def close_to(word: str, choices: list[str], cutoff: float = 0.6) -> str | None:
    """The closest of `choices` to `word`, by the same measure as `did_you_mean` (at `cutoff`), or None."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return close[0] if close else None


def check_node_resource_names(reader: ConfigReader, groups: NodeKeys) -> None:
    """Report a resource that one node group names and the others spell otherwise (`vcore` beside `vcores`),
    at that group's key; of two spellings, the one fewer groups use (or the later, on a tie) is the typo."""
    counts: dict[str, int] = {}
    for _, keys in groups:
        for name in keys:
            counts[name] = counts.get(name, 0) + 1
    order = list(counts)
    for group, keys in groups:
        for name, key in keys.items():
            other = close_to(name, [n for n in order if n not in keys])
            if other is not None and (counts[other], -order.index(other)) > (counts[name], -order.index(name)):
                reader.sink.add(reader.span(key), f"node group `{group}` names resource `{name}` where the other "
                                f"node groups name `{other}`", hint=f"did you mean `{other}`?")


def _positive_int(text: str) -> int:
    value = float(text)
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got `{text}`")
    return int(value)
