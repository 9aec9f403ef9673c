"""The one positioned YAML reader: cluster files, scenarios and their sections are read through it.

It reads YAML's node graph rather than plain `safe_load`, so that every error names its
`FILE:LINE:COL` and YAML's own guesses (timestamps, sexagesimal numbers) never change what
the user wrote. Errors are collected in one pass (`sink`) and raised together by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import yaml

from rdl import units
from rdl.errors import ErrorSink, Span, did_you_mean
from rdl.tree import Resources

Entries = dict[str, tuple[yaml.Node, yaml.Node]]  # a mapping's entries by key: (key node, value node)
MAX_DEPTH = 100  # levels of YAML collections: PyYAML's composer recurses per level (RecursionError near 500)


class TooDeep(yaml.YAMLError):
    """A YAML document nested deeper than MAX_DEPTH: a YAML error, at the collection that goes too deep."""

    def __init__(self, mark: Any):
        super().__init__(f"collections nested deeper than {MAX_DEPTH} levels")
        self.problem, self.problem_mark = str(self), mark


def check_depth(text: str) -> None:
    """Raise TooDeep when the document nests collections deeper than MAX_DEPTH (read as a stream of events,
    without recursion), before anything composes it."""
    depth = 0
    for event in yaml.parse(text):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise TooDeep(event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def compose(text: str) -> yaml.Node | None:
    """`yaml.compose`, refusing a document too deep to compose (TooDeep, a YAMLError)."""
    check_depth(text)
    return yaml.compose(text)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, refusing a document too deep to load (TooDeep, a YAMLError)."""
    check_depth(text)
    return yaml.safe_load(text)


class ConfigReader:
    """Reads YAML nodes of one file into values, collecting every problem with its position."""

    def __init__(self, file: str):
        self.file = file
        self.sink = ErrorSink()
        self._read: dict[int, Entries] = {}

    def span(self, node: yaml.Node) -> Span:
        return Span(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def compose(self, text: str, what: str, expected: str) -> yaml.Node | None:
        """The document's root node; None (with the error recorded) when it is not YAML or is empty."""
        try:
            root = compose(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            span = Span(self.file, mark.line + 1, mark.column + 1) if mark else Span(self.file)
            self.sink.add(span, f"not valid YAML: {getattr(exc, 'problem', exc)}")
            return None
        if root is None:
            self.sink.add(Span(self.file, 1, 1), f"{what} is empty", expected=expected)
        return root

    def mapping(self, node: yaml.Node, what: str) -> Entries:
        """The entries of a mapping node, read (and its duplicate keys reported) once however often asked."""
        if id(node) not in self._read:
            self._read[id(node)] = self._entries(node, what)
        return self._read[id(node)]

    def _entries(self, node: yaml.Node, what: str) -> Entries:
        if not isinstance(node, yaml.MappingNode):
            self.sink.add(self.span(node), f"{what} must be a mapping of `key: value`")
            return {}
        entries: Entries = {}
        for key, value in node.value:
            name = str(key.value)
            if name in entries:
                self.sink.add(self.span(key), f"`{name}` is given twice in {what}")
            entries[name] = (key, value)
        return entries

    def unknown(self, key: yaml.Node, name: str, known: Iterable[str], what: str) -> None:
        """Record a key that `what` does not have, listing those it does."""
        known = list(known)
        self.sink.add(self.span(key), f"unknown key `{name}` in {what}", expected="one of " + ", ".join(known),
                      hint=did_you_mean(name, known))

    def required(self, entries: Mapping[str, Any], names: tuple[str, ...], node: yaml.Node, what: str) -> bool:
        """Whether every name is present; reports the missing ones at the mapping."""
        missing = [name for name in names if name not in entries]
        for name in missing:
            self.sink.add(self.span(node), f"{what} needs `{name}`")
        return not missing

    def scalar(self, node: yaml.Node, parse: Callable[[str], object], what: str) -> object:
        """One value read by `parse`; None (with the error recorded) when it is not a scalar or does not parse."""
        if not isinstance(node, yaml.ScalarNode):
            self.sink.add(self.span(node), f"{what} must be a single value")
            return None
        try:
            return parse(str(node.value))
        except ValueError as exc:
            self.sink.add(self.span(node), f"{what}: {exc}")
            return None

    def resources(self, node: yaml.Node, what: str, zero: bool = False) -> Resources | None:
        """A resource vector `{name: quantity, ...}` of positive quantities (or zero, with `zero`: an outage)."""
        return self.resource_entries(self.mapping(node, what), what, zero)

    def resource_entries(self, entries: Entries, what: str, zero: bool = False) -> Resources | None:
        values = {}
        for name, (_, value) in entries.items():
            quantity = self.scalar(value, partial(units.parse_quantity, name), f"`{name}`")
            if isinstance(quantity, float):
                if quantity < 0 or (quantity == 0 and not zero):
                    self.sink.add(self.span(value), f"`{name}` in {what} must be "
                                  f"{'zero or more' if zero else 'positive'}, got {value.value}")
                values[name] = quantity
        return Resources.of(values) if values else None

    def time(self, node: yaml.Node, start: datetime | None, what: str) -> datetime | None:
        """An absolute time, or one relative to `start` (`+2d`)."""
        def parse(text: str) -> datetime:
            if text.startswith("+"):
                offset = units.parse_relative(text)
                if start is None:
                    raise ValueError("a relative time needs a valid `start`")
                try:
                    return units.in_range(start + timedelta(seconds=offset))
                except (OverflowError, ValueError):  # `+4294967296h`: past the calendar's end
                    raise ValueError(f"`{text}` after `start` lies outside the calendar ({units.TIME_RANGE})") from None
            return units.parse_instant(text)

        value = self.scalar(node, parse, what)
        return value if isinstance(value, datetime) else None

    def plain(self, node: yaml.Node, what: str) -> dict[str, Any]:
        """A section as plain data (for another loader), refusing tags that `safe_load` refuses."""
        try:
            data = yaml.safe_load(yaml.serialize(node))
        except yaml.YAMLError as exc:
            self.sink.add(self.span(node), f"{what}: {getattr(exc, 'problem', exc)}")
            return {}
        if data is None:
            return {}
        if not isinstance(data, dict):
            self.sink.add(self.span(node), f"{what} must be a mapping of `key: value`")
            return {}
        return data

    def locator(self, node: yaml.Node, prefix: str) -> Callable[[str, bool], Span]:
        """Where a dotted key path under `node` (itself at path `prefix`) is written: the deepest value it
        reaches, or with `key` the last key it reaches (for errors about the key itself)."""
        def locate(path: str, key: bool = False) -> Span:
            inside = path == prefix or path.startswith(prefix + ".")
            current, name_node = node, node
            for name in path.split(".")[len(prefix.split(".")):] if inside else []:
                found = next(((k, v) for k, v in current.value if str(k.value) == name), None) \
                    if isinstance(current, yaml.MappingNode) else None
                if found is None:
                    break
                name_node, current = found
            return self.span(name_node if key else current)

        return locate
