"""The product's one error root, `RayonError`, and the language's errors under it.

Every error a user can cause or meet is a `RayonError`: a machine `code`, the exit status it
stands for, the place it points at and a hint. The `rayon` group (follower/cli) prints it and
exits in one place; the HTTP API (planner/api/errors.py) maps its code to a status in one table.
Errors of the language name their place as `FILE:LINE:COL` and say what was expected.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

EXIT_INTERNAL = 1  # the product failed: a database down, a bug
EXIT_BAD_INPUT = 2  # the user's input was refused; nothing was changed
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT), as a shell reports it: what was done is said


class RayonError(Exception):
    """A failure a user is told about: what went wrong, where, the likely fix, and how the command exits."""

    code = "error"
    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None,
                 place: str | None = None, exit_code: int | None = None):
        self.message = message
        self.hint = hint
        self.place = place
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code
        self.consequences: tuple[str, ...] = ()
        super().__init__(self.headline())

    def headline(self) -> str:
        """`PLACE: message (hint)` on one line."""
        text = f"{self.place}: {self.message}" if self.place else self.message
        return text + (f" ({self.hint})" if self.hint else "")

    def render(self) -> str:
        """What a person reads: the headline (`error: ...` when it has no place), then what was left undone."""
        head = self.headline() if self.place else f"error: {self.headline()}"
        return "\n".join((head, *self.consequences))

    def then(self, consequence: str) -> RayonError:
        """This error, also saying what it left undone (`nothing was planned`)."""
        self.consequences += (consequence,)
        return self

    def __str__(self) -> str:
        return self.headline()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles every subclass whatever its constructor takes (errors cross the evaluation's process pool).

        The default would call the class with `args` (the headline), which no subclass's constructor accepts.
        """
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(kind: type[RayonError], args: tuple[Any, ...], state: dict[str, Any]) -> RayonError:
    """The error `RayonError.__reduce__` described, made without calling its constructor again."""
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class Interrupted(RayonError):
    """Ctrl-C: the command stopped; its message says what was done and what was not."""

    code = "interrupted"
    exit_code = EXIT_INTERRUPTED


class Reported(RayonError):
    """A failure already shown to the user (a table of errors, say): only the exit status is left to give."""

    def __init__(self, code: str = "input", exit_code: int = EXIT_BAD_INPUT):
        super().__init__("", code=code, exit_code=exit_code)

    def render(self) -> str:
        return "\n".join(self.consequences)


def shown(value: object, limit: int = 40) -> str:
    """A value as an error message echoes it: whole when short, else its first `limit` characters and how many
    more (a 400-digit number must not fill the terminal)."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """`did you mean `x`?` for the closest choice, or None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else None


class Span(NamedTuple):
    """Where a piece of input came from: a file position, or a JSON path for JSON input."""

    file: str
    line: int = 0
    col: int = 0
    json_path: str | None = None

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        if self.json_path is not None:
            return f"{self.file}:{self.json_path}"
        return self.file


NOWHERE = Span("<input>")


class RDLError(RayonError):
    """One problem in the input, at one place."""

    code = "input"

    def __init__(self, span: Span, message: str, *, expected: str | None = None, hint: str | None = None):
        self.span = span
        self.expected = expected
        super().__init__(message, hint=hint, place=str(span))

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
        if source is not None and self.span.line and self.span.line <= len(source.splitlines()):
            line = source.splitlines()[self.span.line - 1].expandtabs(1)
            text = f"{text}\n    {line}\n    {' ' * (self.span.col - 1)}^"
        return "\n".join((text, *self.consequences))


class RDLErrors(RayonError):
    """Every problem found in one pass, sorted by place; raised instead of a half-valid result."""

    code = "input"

    def __init__(self, errors: Iterable[RDLError], sources: Mapping[str, str] | None = None):
        self.errors = sorted(errors, key=lambda e: (e.span.file, e.span.line, e.span.col))
        self.sources = dict(sources or {})
        super().__init__("\n".join(e.headline() for e in self.errors))

    def headline(self) -> str:
        return self.message

    def render(self) -> str:  # type: ignore[override]
        """All errors with carets, one block each, then what was left undone."""
        return "\n".join((*(e.render(self.sources) for e in self.errors), *self.consequences))

    def with_sources(self, sources: Mapping[str, str]) -> RDLErrors:
        """The same errors, able to print the source lines they point at; an error found in decoded JSON, which
        names a JSON path, also names its line and column in the text now known."""
        offsets: dict[str, dict[str, int]] = {}
        return RDLErrors([_placed(error, sources, offsets) for error in self.errors], {**self.sources, **sources})


def _placed(error: RDLError, sources: Mapping[str, str], offsets: dict[str, dict[str, int]]) -> RDLError:
    """The error at its line and column when it names a JSON path of a text in `sources` (each text read once)."""
    span = error.span
    text = sources.get(span.file)
    if span.json_path is None or span.line or text is None:
        return error
    from rdl.jsonplaces import placed, value_offsets

    if span.file not in offsets:
        offsets[span.file] = value_offsets(text)
    where = placed(span, text, offsets[span.file])
    if where is span:
        return error
    moved = copy.copy(error)  # a warning stays a warning
    moved.span, moved.place = where, str(where)
    moved.args = (moved.headline(),)
    return moved


class ErrorSink:
    """Collects errors during one pass so that all of them are reported at once."""

    def __init__(self) -> None:
        self.errors: list[RDLError] = []

    def add(self, span: Span, message: str, *, expected: str | None = None, hint: str | None = None) -> None:
        self.errors.append(RDLError(span, message, expected=expected, hint=hint))

    def raise_if_any(self, sources: Mapping[str, str] | None = None) -> None:
        if self.errors:
            raise RDLErrors(self.errors, sources)
