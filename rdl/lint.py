"""Warnings: input that is valid by the contract but likely not what was meant (printed by `rayon check`).

Kept apart from parsing so the hot path pays nothing: `rayon check` lints the files it has read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any as AnyType

from rdl import units
from rdl.errors import RDLError, Span
from rdl.jsonplaces import placed, value_offsets
from rdl.syntax.lexer import Token, tokenize


class RDLWarning(RDLError):
    """A positioned warning: rendered like an error, after `FILE:LINE:COL: warning:`."""

    code = "warning"

    def headline(self) -> str:
        """`FILE:LINE:COL: warning: message (hint)` on one line."""
        return f"{self.span}: warning: {self.message}" + (f" ({self.hint})" if self.hint else "")


def bare_memory(span: Span, text: str) -> RDLWarning:
    """The warning for `memory: 2`, which the contract reads as 2 MiB."""
    return RDLWarning(span, f"`memory: {text}` is {text} MiB; did you mean {text}GiB?",
                      hint=f"write `{text}MiB` to keep MiB and silence this warning")


def lint_rdl(text: str, file: str) -> list[RDLWarning]:
    """Warnings of RDL text: every bare memory number in a resource vector (`{memory: 2}`)."""
    try:
        tokens = tokenize(text, file)
    except RDLError:
        return []
    triples = zip(tokens, tokens[1:], tokens[2:], strict=False)  # the later lists are shorter by design
    return [bare_memory(value.span, value.text) for name, colon, value in triples
            if _is_bare_memory(name, colon, value)]


def _is_bare_memory(name: Token, colon: Token, value: Token) -> bool:
    """Whether three tokens read `memory : NUMBER` with no unit."""
    return (name.kind == "name" and name.text == units.MEMORY and colon.text == ":" and value.kind == "number"
            and _unitless(value.text))


def _unitless(text: str) -> bool:
    match = units.NUMBER_WITH_UNIT.match(text.strip())
    return match is not None and not match.group(2)


def lint_json(text: str, file: str) -> list[RDLWarning]:
    """Warnings of the JSON form: every bare memory number in a bundle (`"b": {"memory": 2}`)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return []
    offsets = value_offsets(text)
    return [bare_memory(placed(Span(file, json_path=path), text, offsets), str(value))
            for path, value in _bundle_memory(data, "$")]


def _bundle_memory(data: AnyType, path: str) -> Iterator[tuple[str, AnyType]]:
    """Every `b.memory` below `data` that is a number (or a numeric string) without a unit, with its JSON path."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _bundle_memory(item, f"{path}[{index}]")
    elif isinstance(data, dict):
        memory = data.get("b", {}).get(units.MEMORY) if isinstance(data.get("b"), dict) else None
        if (isinstance(memory, (int, float)) and not isinstance(memory, bool)) or \
                (isinstance(memory, str) and _unitless(memory)):
            yield f"{path}.b.{units.MEMORY}", memory
        for key, item in data.items():
            yield from _bundle_memory(item, f"{path}.{key}")


LINTERS = {"rdl": lint_rdl, "json": lint_json}


def lint(form: str, text: str, file: str) -> list[RDLWarning]:
    """The warnings of one file of the given form (none for forms without a linter)."""
    linter = LINTERS.get(form)
    return linter(text, file) if linter else []
