"""Split RDL text into tokens that know their line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rdl.errors import RDLError, Span

_TOKEN = re.compile(
    r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f]+)
  | (?P<comment>\#[^\n]*)
  | (?P<time>\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)
  | (?P<relative>\+[0-9][0-9.]*(?:[eE][+-]?\d+)?[A-Za-z]*)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[(){},:=])
    """,
    re.VERBOSE,
)

KINDS_SKIPPED = {"newline", "space", "comment"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # name | number | time | relative | string | punct | eof
    text: str
    span: Span

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind == "eof":
            return "the end of the file"
        return f"`{self.text}`"


def tokenize(text: str, file: str) -> list[Token]:
    """All tokens of `text`, ending with an `eof` token; raises RDLError on a character the language lacks."""
    tokens: list[Token] = []
    line, line_start, pos = 1, 0, 0
    match = _TOKEN.match
    while pos < len(text):
        found = match(text, pos)
        if found is None:
            span = Span(file, line, pos - line_start + 1)
            char = text[pos]
            hint = "strings go in double quotes" if char == "'" else None
            raise RDLError(span, f"unexpected character `{char}`", hint=hint)
        kind = found.lastgroup or ""
        if kind == "newline":
            line, line_start = line + 1, found.end()
        elif kind not in KINDS_SKIPPED:
            tokens.append(Token(kind, found.group(), Span(file, line, pos - line_start + 1)))
        pos = found.end()
    tokens.append(Token("eof", "", Span(file, line, pos - line_start + 1)))
    return tokens
