"""Errors of the language: each names its place (`FILE:LINE:COL`) and what was expected."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Span(NamedTuple):
    """Where a piece of input came from: a file position, or a JSON path for JSON input."""

    file: str
    line: int = 0
    col: int = 0
    json_path: str | None = None

    def __str__(self) -> str:
        if self.json_path is not None:
            return f"{self.file}:{self.json_path}"
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file


NOWHERE = Span("<input>")


class RDLError(Exception):
    """One problem in the input, at one place."""

    def __init__(self, span: Span, message: str, *, expected: str | None = None, hint: str | None = None):
        self.span = span
        self.message = message
        self.expected = expected
        self.hint = hint
        super().__init__(self.headline())

    def headline(self) -> str:
        """`FILE:LINE:COL: message (expected …; hint)` on one line."""
        text = f"{self.span}: {self.message}"
        if self.expected:
            text += f"; expected {self.expected}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def render(self, sources: Mapping[str, str] | None = None) -> str:
        """The headline, then the source line and a caret under the column when the source is known."""
        text = self.headline()
        source = (sources or {}).get(self.span.file)
        if source is None or not self.span.line:
            return text
        lines = source.splitlines()
        if self.span.line > len(lines):
            return text
        line = lines[self.span.line - 1].expandtabs(1)
        return f"{text}\n    {line}\n    {' ' * (self.span.col - 1)}^"


class RDLErrors(Exception):
    """Every problem found in one pass, sorted by place; raised instead of a half-valid result."""

    def __init__(self, errors: Iterable[RDLError], sources: Mapping[str, str] | None = None):
        self.errors = sorted(errors, key=lambda e: (e.span.file, e.span.line, e.span.col))
        self.sources = dict(sources or {})
        super().__init__("\n".join(e.headline() for e in self.errors))

    def render(self) -> str:
        """All errors with carets, one block each."""
        return "\n".join(e.render(self.sources) for e in self.errors)

    def with_sources(self, sources: Mapping[str, str]) -> RDLErrors:
        """The same errors, able to print the source lines they point at."""
        return RDLErrors(self.errors, {**self.sources, **sources})


class ErrorSink:
    """Collects errors during one pass so that all of them are reported at once."""

    def __init__(self) -> None:
        self.errors: list[RDLError] = []

    def add(self, span: Span, message: str, *, expected: str | None = None, hint: str | None = None) -> None:
        self.errors.append(RDLError(span, message, expected=expected, hint=hint))

    def raise_if_any(self, sources: Mapping[str, str] | None = None) -> None:
        if self.errors:
            raise RDLErrors(self.errors, sources)
