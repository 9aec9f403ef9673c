"""Where each value of a JSON text starts, by the JSON path the readers name it with (`$`, `$.key`, `$.list[0]`):
so an error found in decoded JSON can name its line and column in the text, as every error of the language does."""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rdl.errors import Span  # errors.py reads this module where it places an error: no cycle at run time

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def value_offsets(text: str) -> dict[str, int]:
    """The offset in `text` (valid JSON) at which each value starts, by JSON path; what it found before nesting too
    deep for the stack, when it does (the decoder refuses such text first)."""
    found: dict[str, int] = {}
    with contextlib.suppress(RecursionError, IndexError, ValueError):  # deeper than the stack, or not JSON after all
        _value(text, 1 if text.startswith("\ufeff") else 0, "$", found)
    return found


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def _value(text: str, at: int, path: str, found: dict[str, int]) -> int:
    """Record the value at `at` under `path` (and its members and items under theirs); where it ends."""
    at = _skip(text, at)
    found[path] = at
    opening = text[at]
    if opening == "{":
        at = _skip(text, at + 1)
        while text[at] != "}":
            key, at = _DECODER.raw_decode(text, at)  # a key is a JSON string
            at = _value(text, _skip(text, at) + 1, f"{path}.{key}", found)  # past the `:`
            at = _skip(text, at)
            if text[at] == ",":
                at = _skip(text, at + 1)
        return at + 1
    if opening == "[":
        at, index = _skip(text, at + 1), 0
        while text[at] != "]":
            at = _skip(text, _value(text, at, f"{path}[{index}]", found))
            index += 1
            if text[at] == ",":
                at = _skip(text, at + 1)
        return at + 1
    return _DECODER.raw_decode(text, at)[1]


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of an offset in `text`."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def place_of(path: str, offsets: dict[str, int]) -> int | None:
    """The offset of the value at `path`, or of the nearest enclosing one the text has (a missing key's object)."""
    while path:
        if path in offsets:
            return offsets[path]
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            break
        path = path[:cut]
    return offsets.get("$")


def placed(span: Span, text: str, offsets: dict[str, int]) -> Span:
    """`span` (naming a JSON path of `text`) with the line and column of its value; as it was when the text lacks it."""
    at = place_of(span.json_path or "$", offsets)
    if at is None:
        return span
    line, col = line_and_column(text, at)
    return span._replace(line=line, col=col)
