"""Split RDL text into tokens that know their line and column."""

from __future__ import annotations

import gc
import re
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from rdl.errors import RDLError, Span

# Alternatives ordered by how often they occur (a large share of lexing time); `time` and
# `relative` come before `number`, which would otherwise take their leading digits.
# A value is lexed whole even when it is malformed, so that its error names all of it: a time is
# a date and whatever time-like text follows it (`2026-11-23`, `2026-11-23 08:00:00Z`, a lower-case
# `z`); a relative time or a number runs on through letters, digits, `.` and `:` (`+25:00`, `1h30m`).
# A name followed by `/` is a zone name (`Europe/Berlin`, `America/Argentina/Buenos_Aires`), read only by `tz=`.
KINDS = (None, "skip", "punct", "name", "zone", "time", "relative", "number", "string", "bad")
_TOKEN = re.compile(
    r"([ \t\r\f\n]+|\#[^\n]*)"
    r"|([(){},:=])"
    r"|([A-Za-z_][A-Za-z0-9_.\-]*+(?!/))"
    r"|([A-Za-z_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.+\-]*)+)"
    r"|(\d{4}-\d{2}-\d{2}(?:[Tt][0-9:.]*| \d\d?:[0-9:.]*)?(?:[+-]\d{2}(?::?\d{2})?|[A-Za-z]\w*)?)"
    r"|(\+\d(?:[eE][+-]\d|[\w.:])*)"
    r"|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z0-9.]*)"
    r'|("(?:[^"\\\n]|\\.)*")'
    r"|(.)"
)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while making many small acyclic objects (tokens, nodes):
    its generation-0 passes would otherwise cost more than the lexing itself on large files."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Source:
    """One text and where its lines start, to turn offsets into `FILE:LINE:COL` only when asked."""

    def __init__(self, file: str, text: str):
        self.file = file
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def span(self, pos: int) -> Span:
        line = bisect_right(self.line_starts, pos)
        return Span(self.file, line, pos - self.line_starts[line - 1] + 1)


class Pinned:
    """A source of one fixed place (a JSON path), for tokens made from JSON values."""

    def __init__(self, span: Span):
        self.fixed = span

    def span(self, pos: int) -> Span:
        return self.fixed


class Token(NamedTuple):
    kind: str  # name | number | time | relative | string | punct | eof
    text: str
    pos: int
    source: Source | Pinned

    @staticmethod
    def pinned(kind: str, text: str, span: Span) -> Token:
        """A token that stands at a fixed place (used for JSON values)."""
        return Token(kind, text, 0, Pinned(span))

    @property
    def span(self) -> Span:
        return self.source.span(self.pos)

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind == "eof":
            return "the end of the file"
        return f"`{self.text}`"


def tokenize(text: str, file: str) -> list[Token]:
    """All tokens of `text`, ending with an `eof` token; raises RDLError on a character the language lacks."""
    source = Source(file, text)
    kinds = KINDS
    with paused_gc():
        tokens = [Token(kinds[found.lastindex], found.group(), found.start(), source)  # type: ignore[arg-type,index]
                  for found in _TOKEN.finditer(text) if found.lastindex != 1]
    for token in tokens:
        if token.kind == "bad":
            hint = "strings go in double quotes" if token.text == "'" else None
            raise RDLError(token.span, f"unexpected character `{token.text}`", hint=hint)
    tokens.append(Token("eof", "", len(text), source))
    return tokens
