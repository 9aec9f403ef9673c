"""What every trace importer shares: reading (gzip or plain) with line numbers, CSV rows, the time slice."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from follower.sim.workloads.fields import duration
from follower.sim.workloads.report import ImportReport


@dataclass(frozen=True, slots=True)
class Slice:
    """Keep jobs submitted in `[start, start + length)` of the trace's clock, shifted so that `start` is time 0."""

    start: float = field(default=0.0, metadata=duration())
    length: float = field(default=math.inf, metadata=duration())

    def __post_init__(self) -> None:
        if self.start < 0 or not self.length > 0:
            raise ValueError("a slice starts at 0 or later and has a positive length")

    def shift(self, submit: float) -> float | None:
        """The submission time inside the slice, or None when it falls outside."""
        if self.start <= submit < self.start + self.length:
            return submit - self.start
        return None


def open_text(path: str | Path) -> IO[str]:
    """A text file, decompressed when its name ends in `.gz`."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def csv_rows(path: str | Path, required: Sequence[str], report: ImportReport) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row by column name) for each data row; a row with the wrong field count is reported, not given.

    Raises ValueError naming `FILE:1` when the header lacks a required column: then it is not this format.
    """
    with open_text(path) as stream:
        reader = csv.reader(stream)
        header = next(reader, None)
        missing = [name for name in required if header is None or name not in header]
        if header is None or missing:
            raise ValueError(f"{report.file}:1: the header lacks the column(s) {', '.join(missing)}; "
                             f"expected {', '.join(required)}")
        for row in reader:
            report.read += 1
            if len(row) != len(header):
                report.malformed(reader.line_num, f"wrong field count: {len(row)} fields, the header has {len(header)}")
                continue
            yield reader.line_num, dict(zip(header, row, strict=True))


def number(text: str, what: str) -> float:
    """A finite number, or ValueError saying which field held what."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} is not a number: `{text}`") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} is not a finite number: `{text}`")
    return value
