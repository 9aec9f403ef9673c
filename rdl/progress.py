"""Progress of a long command on standard error, so that standard output (tables, `--json`) stays the answer.

On a terminal it is click's bar (count, percent, time left). Elsewhere (a log file, CI, a pipe) click's bar
shows only its label, so a line is written every `PERIOD` seconds instead: done of total, rate, time left.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

import click

PERIOD = 5.0  # seconds between progress lines when standard error is not a terminal


def _interval(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


def progress_line(label: str, done: int, total: int, elapsed: float, unit: str) -> str:
    """`planning: 1,200 of 27,000 reservations (180/s, about 2m23s left)`."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = f", about {_interval((total - done) / rate)} left" if rate > 0 and done < total else ""
    return f"{label}: {done:,} of {total:,} {unit} ({rate:,.0f}/s{left})"


@contextmanager
def progress(total: int, label: str, unit: str = "", enabled: bool = True,
             stream: TextIO | None = None) -> Iterator[Callable[[int], None]]:
    """Yields `update(done)`, to be called with the count done so far; shows nothing when disabled."""
    out = stream or sys.stderr
    if not enabled or total <= 0:
        yield lambda _done: None
        return
    if out.isatty():
        # The unit in the label: click's bar shows the count bare (`3600/86400`), and its time left.
        titled = f"{label} ({unit})" if unit else label
        with click.progressbar(length=total, label=titled, file=out, show_eta=True, show_pos=True) as bar:
            shown = 0

            def advance(done: int) -> None:
                nonlocal shown
                if done > shown:
                    bar.update(min(done, total) - shown)
                    shown = min(done, total)

            yield advance
        return
    started = time.monotonic()
    last = started

    def report(done: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PERIOD:
            last = now
            click.echo(progress_line(label, done, total, now - started, unit), file=out)

    yield report
    if last != started:  # a run long enough to have reported says when it ended too
        click.echo(progress_line(label, total, total, time.monotonic() - started, unit), file=out)
