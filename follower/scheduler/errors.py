"""The queue scheduler's errors: each names the place (a key path, a queue, an application) and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rdl.errors import RayonError


class SchedulerError(RayonError):
    """Base of the scheduler's errors."""

    code = "scheduler"


@dataclass(frozen=True, slots=True)
class Problem:
    """One configuration mistake: the dotted key path and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(SchedulerError, ValueError):
    """A scheduler configuration with one or more mistakes, every one listed."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


class PlacementRejected(SchedulerError):
    """An application no queue accepts; `reason` says why."""

    def __init__(self, app_id: str, reason: str) -> None:
        self.app_id = app_id
        self.reason = reason
        super().__init__(f"application `{app_id}` rejected: {reason}")


class QueueError(SchedulerError, ValueError):
    """A queue operation that cannot be done as asked (unknown queue, a parent where a leaf is needed, ...)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"queue `{path}`: {message}")


class UnknownError(SchedulerError, KeyError):
    """An application, ask, container or node the scheduler does not hold."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        super().__init__(f"unknown {kind} `{name}`")

    def __str__(self) -> str:
        return str(self.args[0])
