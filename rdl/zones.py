"""Named time zones (`tz=Europe/Berlin`): which names are zones, and wall times read in one.

The rules come from the standard library's zoneinfo (the system's zone files, else the `tzdata` package);
none are written here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from rdl import units
from rdl.errors import did_you_mean

# A wall time with no zone: the forms of an absolute time, less the `Z` or offset.
_LOCAL_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$")


@cache
def known_zones() -> frozenset[str]:
    """The IANA zone names this machine knows (`UTC`, `Europe/Berlin`, ...)."""
    return frozenset(available_timezones())


def zone_problem(name: str) -> tuple[str, str | None] | None:
    """(message, hint) when `name` is no zone this machine knows, else None."""
    if name in known_zones():
        return None
    hint = did_you_mean(name, known_zones()) or "an IANA name such as `Europe/Berlin`, `America/New_York` or `UTC`"
    return f"`{name}` is not a time zone", hint


def is_local_time(text: str) -> bool:
    """Whether `text` is an absolute time written without a zone (`2026-03-29T06:00`)."""
    return _LOCAL_TIME.match(text) is not None


def read_local(text: str, zone: str) -> datetime:
    """A zone-less time as the wall time it names in `zone`, in UTC; a wall time the zone skips (clocks going
    forward) moves on by the change, one that occurs twice is its first occurrence. ValueError if it is no time."""
    try:
        moment = datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone), fold=0).astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # astimezone overflows at the ends of the calendar
        raise ValueError(f"`{text}` is not a valid time: {exc}") from None
    return units.in_range(moment, text)
