"""The sharing policy a cluster file sets (`policies: user_limits: ...`): per-user shares of the plan over time.

This module reads and checks what the file says (shares from 0% to 100%, windows of whole plan
steps); `planner.core.policy` measures a plan's use against it. The format is in docs/cluster.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from rdl import units
from rdl.errors import ErrorSink, Span, did_you_mean

INSTANTANEOUS = "instantaneous"
AVERAGE = "average"
LIMIT_KEYS = (INSTANTANEOUS, AVERAGE, "window")
USER_LIMITS_KEYS = (*LIMIT_KEYS, "users")
POLICY_KEYS = ("user_limits",)
Locate = Callable[[str, bool], Span]  # a key path (and whether the key itself is meant) to where it is written

@dataclass(frozen=True, slots=True)
class SharingPolicy:
    """Per-user limits as shares of capacity: `instantaneous` at each step, `average` over any `window` steps."""

    instantaneous: float | None = None
    average: float | None = None
    window: int | None = None
    users: Mapping[str, SharingPolicy] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in (INSTANTANEOUS, AVERAGE):
            share = getattr(self, name)
            if share is not None and not 0 <= share <= 1:
                raise ValueError(f"`{name}` must be a share from 0 to 1, got {share}")
        if self.window is not None and self.window < 1:
            raise ValueError(f"`window` must be at least one step, got {self.window}")
        if self.average is not None and self.window is None:
            raise ValueError("`average` needs a `window`")

    def for_user(self, user: str | None) -> SharingPolicy:
        """The limits one user is held to: its override, else the defaults (without overrides)."""
        if user is not None and user in self.users:
            return self.users[user]
        return replace(self, users={}) if self.users else self

    @property
    def limited(self) -> bool:
        """Whether any user has any limit beyond no-overcommit."""
        own = self.instantaneous is not None or self.average is not None
        return own or any(limits.limited for limits in self.users.values())


NO_OVERCOMMIT = SharingPolicy()


class _Reader:
    """Reads the raw `policies:` data, collecting every error with the key path it concerns and, when the
    data came from a file, the line and column where that key is written (`locate`)."""

    def __init__(self, file: str, step: int, locate: Locate | None = None, sink: ErrorSink | None = None):
        self.file = file
        self.step = step
        self.locate = locate or (lambda where, key: Span(self.file))
        self.sink = sink or ErrorSink()

    def error(self, where: str, message: str, *, expected: str | None = None, hint: str | None = None,
              key: bool = False) -> None:
        self.sink.add(self.locate(where, key), f"`{where}` {message}", expected=expected, hint=hint)

    def mapping(self, value: object, where: str, keys: tuple[str, ...] | None) -> dict[str, object]:
        """A mapping's entries by key (None is empty); unknown keys are errors when `keys` is given."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(where, "must be a mapping of `key: value`")
            return {}
        entries = {str(key): item for key, item in value.items()}
        for key in entries:
            if keys is not None and key not in keys:
                self.error(f"{where}.{key}", "is not a policy setting", expected="one of " + ", ".join(keys),
                           hint=did_you_mean(key, keys), key=True)
        return entries

    def share(self, value: object, where: str) -> float | None:
        """`"50%"` or `0.5` → 0.5; None (YAML `null`) is no limit."""
        if value is None:
            return None
        try:
            share = _share(value)
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        if not 0 <= share <= 1:
            hint = f"did you mean `{value}%`?" if isinstance(value, int | float) and 1 < share <= 100 else None
            self.error(where, f"must be a share from 0% to 100%, got `{value}`", hint=hint)
            return None
        return share

    def window(self, value: object, where: str) -> int | None:
        """A duration that is a whole number of plan steps, in steps."""
        if value is None:
            return None
        try:
            seconds = units.parse_duration(str(value)) if isinstance(value, str | int | float) else math.nan
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        steps = seconds / self.step
        if not seconds > 0:
            self.error(where, f"must be a positive duration such as `24h`, got `{value}`")
        elif round(steps) < 1 or not math.isclose(steps, round(steps), rel_tol=1e-9):
            whole = max(1, round(steps)) * self.step
            self.error(where, f"must be a whole number of plan steps ({units.format_duration(self.step)}), "
                       f"got `{value}`", hint=f"did you mean `{units.format_duration(whole)}`?")
        else:
            return round(steps)
        return None

    def limits(self, entries: Mapping[str, object], where: str, base: SharingPolicy) -> SharingPolicy:
        """`base` with the limits `entries` set (a `null` entry lifts one)."""
        values: dict[str, float | int | None] = {
            INSTANTANEOUS: base.instantaneous, AVERAGE: base.average, "window": base.window}
        for key in (INSTANTANEOUS, AVERAGE):
            if key in entries:
                values[key] = self.share(entries[key], f"{where}.{key}")
        if "window" in entries:
            values["window"] = self.window(entries["window"], f"{where}.window")
        if values[AVERAGE] is not None and values["window"] is None:
            if entries.get("window") is None:  # else the window's own error is on record
                self.error(f"{where}.average", "needs a `window` to average over", hint="for example `window: 24h`")
            values[AVERAGE] = None
        return SharingPolicy(values[INSTANTANEOUS], values[AVERAGE],
                             None if values["window"] is None else int(values["window"]))


def _share(value: object) -> float:
    """A share as written: `"25%"`, `"0.25"` or `0.25`; ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"must be a share such as `50%` or `0.5`, got `{value}`")
    if not isinstance(value, str):
        return float(value)
    text = value.strip()
    try:
        return float(text[:-1].strip()) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"must be a share such as `50%` or `0.5`, got `{value}`") from None


def parse_policy(raw: object, step_seconds: int, file: str = "<cluster>") -> SharingPolicy:
    """The sharing policy of a cluster file's raw `policies:` mapping; raises RDLErrors naming every problem."""
    reader = _Reader(file, step_seconds)
    policy = read_policy(reader, raw)
    reader.sink.raise_if_any()
    return policy


def check_policy(raw: object, step_seconds: int, file: str, locate: Locate, sink: ErrorSink) -> None:
    """Record in `sink` every problem of a cluster file's `policies:` data, each where `locate` finds its key."""
    read_policy(_Reader(file, step_seconds, locate, sink), raw)


def read_policy(reader: _Reader, raw: object) -> SharingPolicy:
    """The policy `raw` describes, its problems recorded in the reader's sink."""
    top = reader.mapping(raw, "policies", POLICY_KEYS)
    entries = reader.mapping(top.get("user_limits"), "policies.user_limits", USER_LIMITS_KEYS)
    defaults = reader.limits(entries, "policies.user_limits", NO_OVERCOMMIT)
    users = {}
    for name, value in reader.mapping(entries.get("users"), "policies.user_limits.users", None).items():
        where = f"policies.user_limits.users.{name}"
        users[name] = reader.limits(reader.mapping(value, where, LIMIT_KEYS), where, defaults)
    return replace(defaults, users=users)
