"""Reading a user's file as text: UTF-8 (a leading byte-order mark accepted), or an error naming the file and byte.

Every command that reads a file goes through `read_text`, so a binary or mis-encoded file is
bad input (exit 2, `FILE: not UTF-8 text ...`), never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from rdl.errors import RDLError, RDLErrors, Span

BOM = "\ufeff"


def decode(data: bytes, name: str) -> str:
    """The bytes as text; RDLErrors naming the first byte that is not UTF-8, or a NUL byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise RDLErrors([RDLError(Span(name, line, col), f"not UTF-8 text (byte {data[exc.start]:#04x} at offset "
                                  f"{exc.start})", hint="save the file as UTF-8")]) from None
    if "\x00" in text:
        offset = text.index("\x00")
        raise RDLErrors([RDLError(Span(name), f"not a text file (a NUL byte at offset {offset})")])
    return text.removeprefix(BOM)


def read_text(path: str | Path) -> str:
    """A file's text; RDLErrors when it cannot be read or is not UTF-8 text."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise RDLErrors([RDLError(Span(str(path)), f"cannot read: {exc.strerror or exc}")]) from None
    return decode(data, str(path))
