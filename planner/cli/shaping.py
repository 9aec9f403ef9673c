"""Output shaping of the listing commands: `-o table|wide|json|yaml|name`, `--no-headers`, `--watch`, colour.

`--json`, `-o json` and `-o yaml` print a listing in the one shape the API answers a list with, `{items, total,
offset, limit, next}` (`GET /v1/reservations`, `GET /v1/history`), whichever listing it is (`list`, `log`,
`history`). Colour only on a terminal, and never with `NO_COLOR` set
(no-color.org); tables fit 100 columns with the default columns, `-o wide` shows every one.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any as AnyType

import click
import yaml

from rdl import units

OUTPUTS = ("table", "wide", "json", "yaml", "name")
STATE_COLOURS = {"accepted": "green", "rejected": "red", "dropped": "yellow", "cancelled": "bright_black",
                 "expired": "bright_black", "updated": "green", "moved": "cyan"}


def output_options(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    """`-o/--output` and `--no-headers`."""
    command = click.option("--no-headers", is_flag=True, help="Tables without their header and footer lines.")(command)
    return click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table", show_default=True,
                        help="table; wide (every column); json or yaml (a list as the API answers one: items, total, "
                        "offset, limit, next); name (one name a line).")(command)


def listing_json_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    """`--json` of a listing: `-o json`'s document."""
    return click.option("--json", "as_json", is_flag=True, help="The listing as one JSON document, as the API "
                        "answers a list: items, total, offset, limit, next (the same as -o json).")(command)


def page(items: Sequence[Mapping[str, AnyType]], total: int | None = None, offset: int = 0,
         limit: int | None = None) -> dict[str, AnyType]:
    """A listing in the API's list shape (a whole listing: no next page)."""
    return {"items": list(items), "total": len(items) if total is None else total, "offset": offset,
            "limit": limit, "next": None}


def emit_document(data: AnyType, output: str) -> None:
    """A document as JSON or YAML."""
    import json

    if output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
    else:
        click.echo(json.dumps(data, indent=2))


def without_headers(table: str) -> str:
    """A table's rows only (its header and rule dropped)."""
    return "\n".join(table.splitlines()[2:])


def colour_enabled() -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (to anything but empty)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def coloured(table: str, column: str, enabled: bool | None = None) -> str:
    """The table with the first word of each row's `column` cell coloured by state (same widths as before)."""
    if not (colour_enabled() if enabled is None else enabled):
        return table
    lines = table.splitlines()
    if not lines or column not in lines[0]:
        return table
    at = lines[0].index(column)
    for index in range(2, len(lines)):
        line = lines[index]
        if not line.strip():  # the table ends at the first blank line; what follows is prose
            break
        word = line[at:].split(" ", 1)[0]
        colour = STATE_COLOURS.get(word)
        if colour is not None and line[at - 1:at] in ("", " "):
            lines[index] = line[:at] + click.style(word, fg=colour) + line[at + len(word):]
    return "\n".join(lines)


def watch_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("-w", "--watch", "interval", is_flag=False, flag_value="2s", default=None,
                        metavar="[DURATION]", help="Show it again every DURATION (2s when none is given) until "
                        "Ctrl-C.")(command)


def watching(interval: str | None, show: Callable[[], None], clear: bool | None = None) -> None:
    """`show()` once, or, with an interval, again and again (the screen cleared on a terminal) until Ctrl-C, which
    ends the watch with exit status 0."""
    if interval is None:
        show()
        return
    try:
        seconds = units.parse_duration(interval)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--watch") from None
    if not seconds > 0:
        raise click.BadParameter("must be longer than zero", param_hint="--watch")
    clear = sys.stdout.isatty() if clear is None else clear
    try:
        while True:
            if clear:
                click.clear()
            show()
            time.sleep(seconds)
            if not clear:
                click.echo("")
    except KeyboardInterrupt:
        return
