"""Plain-text tables for people: aligned columns, a header rule."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numbers right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [bool(cells) and all(_is_number(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(list(headers)).rstrip(), rule, *(line(r).rstrip() for r in cells)])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
