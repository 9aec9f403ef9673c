"""Units of the language: durations, points in time and resource quantities, parsed and printed.

Parsers raise `ValueError` with a message fit for a user; callers attach the place.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

DURATION_UNITS: dict[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MEMORY_UNITS: dict[str, float] = {
    "KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1024 * 1024,
    "Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024,  # Kubernetes spells the binary units so
    "KB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024,  # YARN spells them so
}
MEMORY = "memory"
MAX_INTEGER = 2**31 - 1  # the largest count (g, h, priority, containers) a user may write: YARN's int
DURATION_CHOICES = "one of s, m, h, d, w (or several, largest first, such as `1h30m`)"
MEMORY_CHOICES = "KiB, MiB, GiB or TiB (or Ki, Mi, Gi, Ti, or KB, MB, GB, TB for the same), or none for MiB"
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)  # the times a user may write, so that every sum the plan makes of
LATEST = datetime(9001, 1, 1, tzinfo=UTC)  # a time and a bounded duration stays inside the calendar (1 to 9999)
TIME_RANGE = "times must fall between the years 1970 and 9000"
MAX_DURATION = 36525 * 86400.0  # a century: longer than any plan, horizon or series period means
TIME_FORMS = "write an ISO-8601 time with a zone such as `2026-11-23T08:00:00Z`, or a relative time such as `+6h`"

NUMBER_WITH_UNIT = re.compile(r"^(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)([A-Za-z]*)$")
_COMPOUND = re.compile(r"^(?:\d+(?:\.\d+)?[A-Za-z]+)+$")
_COMPOUND_PART = re.compile(r"(\d+(?:\.\d+)?)([A-Za-z]+)")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$")


def split_number(text: str) -> tuple[float, str]:
    """`'1.5h'` → `(1.5, 'h')`; raises ValueError when the text is not a number with an optional unit."""
    match = NUMBER_WITH_UNIT.match(text.strip())
    if not match:
        raise ValueError(f"`{text}` is not a number")
    return finite(float(match.group(1)), text), match.group(2)


def finite(value: float, text: str) -> float:
    """The value, or ValueError when it overflowed to infinity (`1e400`, `1e306w`)."""
    if not math.isfinite(value):
        raise ValueError(f"`{text}` is too large")
    return value


def parse_duration(text: str, likely_unit: str = "m") -> float:
    """A duration of time such as `90m`, `1.5h` or `1h30m` (units largest first, each once), in seconds; at most a
    century; a bare number is an error suggesting `likely_unit` (what the setting is usually given in), except zero,
    which is zero in every unit (`gap=0`)."""
    return bounded(parse_work(text, likely_unit), text)


def parse_work(text: str, likely_unit: str = "m") -> float:
    """Bundle-time written as a duration (`w=50h`), in bundle-seconds: like a duration, with no bound but finite."""
    if _COMPOUND.match(text.strip()) and not NUMBER_WITH_UNIT.match(text.strip()):
        return _compound_duration(text)
    number, unit = split_number(text)
    if not unit and number == 0:
        return 0.0
    if not unit:
        raise ValueError(f"`{text}` needs a unit for a duration (did you mean `{text}{likely_unit}`?)")
    return finite(number * _duration_unit(unit, text), text)


def bounded(seconds: float, text: str) -> float:
    """The duration, or ValueError when it is longer than a century (`99999999999d`, `1e300h`)."""
    if abs(seconds) > MAX_DURATION:
        raise ValueError(f"`{text}` is longer than 100 years, the longest duration the planner takes")
    return seconds


def _duration_unit(unit: str, text: str) -> int:
    """Seconds in one `unit`; ValueError naming every accepted unit otherwise."""
    if unit not in DURATION_UNITS:
        raise ValueError(f"unknown duration unit `{unit}` in `{text}`; use {DURATION_CHOICES}")
    return DURATION_UNITS[unit]


def _compound_duration(text: str) -> float:
    """`1h30m` → 5400.0: the parts' sum, with units strictly largest first (`30m1h`, `1h1h` are errors)."""
    total, last = 0.0, math.inf
    for number, unit in _COMPOUND_PART.findall(text):
        size = _duration_unit(unit, text)
        if size >= last:
            raise ValueError(f"`{text}` repeats or misorders its units; write them largest first, such as `1h30m`")
        total, last = total + float(number) * size, size
    return finite(total, text)


def format_duration(seconds: float) -> str:
    """The shortest exact spelling of a duration in one unit: `5400` → `90m`, `7200` → `2h`, a week → `7d`;
    a whole count in the largest unit if there is one, else the shortest decimal that parses back exactly
    (`3960.0000000000005`, what `1.1h` reads as, → `1.1h`)."""
    sizes = sorted(((unit, size) for unit, size in DURATION_UNITS.items() if unit != "w"),  # `7d` reads better
                   key=lambda item: -item[1])
    for unit, size in sizes:
        count = seconds / size
        if count == int(count) and count != 0 and count * size == seconds:  # exact both ways, as parsed back
            return f"{int(count)}{unit}"
    exact = [f"{seconds / size!r}{unit}" for unit, size in sizes if float(repr(seconds / size)) * size == seconds]
    return min(exact, key=len, default=f"{seconds!r}s")  # `min` keeps the first (largest unit) of equal length


def parse_instant(text: str) -> datetime:
    """An absolute ISO-8601 time with a zone that a user wrote, as an aware UTC datetime in the years 1970–9000."""
    return in_range(read_instant(text), text)


def read_instant(text: str) -> datetime:
    """An absolute ISO-8601 time with a zone, as an aware UTC datetime (any year: for times the plan stored)."""
    if not _ISO_TIME.match(text):
        raise ValueError(not_a_time(text))
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # astimezone overflows at the ends of the calendar
        raise ValueError(f"`{text}` is not a valid time: {exc}") from None


def in_range(moment: datetime, text: str | None = None) -> datetime:
    """The time, or ValueError when it lies outside the years 1970–9000 (`0999-06-01T00:00:00Z`)."""
    if not EARLIEST <= moment < LATEST:
        raise ValueError(f"`{text or format_instant(moment)}` is outside the times the planner keeps; {TIME_RANGE}")
    return moment


def not_a_time(text: str) -> str:
    """The message for text that is no time: the accepted forms, and the likely meaning when there is one."""
    guess = re.sub(r"^(\d{4}-\d{2}-\d{2})[ t]", r"\1T", text)
    guess = guess[:-1] + "Z" if guess.endswith("z") else guess
    guess = guess + "T00:00:00Z" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", guess) else guess
    hint = f" (did you mean `{guess}`?)" if guess != text and _ISO_TIME.match(guess) else ""
    return f"`{text}` is not a time; {TIME_FORMS}{hint}"


def format_instant(value: datetime) -> str:
    """ISO-8601 in UTC with a `Z`, seconds always shown."""
    value = value.astimezone(UTC)
    text = f"{value.year:04d}-" + value.strftime("%m-%dT%H:%M:%S")  # `%Y` leaves year 999 unpadded
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def parse_relative(text: str) -> float:
    """`+6h` → seconds after the reservation's arrival."""
    if not text.startswith("+"):
        raise ValueError(f"`{text}` is not a relative time; write `+` and a duration, such as `+6h`")
    rest = text[1:]
    if not (NUMBER_WITH_UNIT.match(rest) or _COMPOUND.match(rest)):  # `+25:00`, `+6 h`
        raise ValueError(not_a_time(text))
    return parse_duration(rest)


def parse_quantity(resource: str, text: str) -> float:
    """A resource quantity: memory in MiB (units KiB…TiB or Ki…Ti, bare numbers are MiB); other resources are
    counts."""
    number, unit = split_number(text)
    if resource == MEMORY:
        if unit and unit not in MEMORY_UNITS:
            raise ValueError(f"unknown memory unit `{unit}` in `{text}`; use {MEMORY_CHOICES}")
        return finite(number * MEMORY_UNITS[unit or "MiB"], text)
    if unit:
        raise ValueError(f"`{resource}` is a count and takes no unit, got `{text}`")
    return number


def format_quantity(resource: str, value: float) -> str:
    """Memory with the largest binary unit that keeps it whole; counts as plain numbers."""
    if resource == MEMORY:
        for unit in ("TiB", "GiB", "MiB", "KiB"):
            count = value / MEMORY_UNITS[unit]
            if count == int(count) and count != 0:
                return f"{int(count)}{unit}"
        return f"{value!r}MiB"
    return format_number(value)


def format_number(value: float) -> str:
    """Whole numbers without a decimal point, others exactly."""
    return str(int(value)) if value == int(value) else repr(value)


def ceil_div(numerator: float, denominator: float) -> int:
    """`ceil(n / d)`, tolerant of float noise (`0.1h / 6m` is exactly 1)."""
    ratio = numerator / denominator
    nearest = round(ratio)
    if math.isclose(ratio, nearest, rel_tol=1e-9, abs_tol=1e-9):
        return int(nearest)
    return math.ceil(ratio)


def seconds_between(start: datetime, end: datetime) -> float:
    """Seconds from `start` to `end`: microseconds over a million, as `timedelta / timedelta(seconds=1)` divides."""
    return (end - start).total_seconds()
