"""What an importer skipped and why: every bad line named `FILE:LINE: reason`, collected and counted.

Two sorts of skipped line: *malformed* (the line breaks the format: a wrong field count, a
value that is not a number) and *unusable* (a well-formed line the simulator cannot run,
such as a job without a run time). A strict import raises on the first malformed line;
unusable lines are always skipped and counted, since real traces hold them by design.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rdl.errors import RayonError

MALFORMED = "malformed"
UNUSABLE = "unusable"


@dataclass(frozen=True, slots=True)
class LineIssue:
    """One skipped line: where, which sort, and why."""

    file: str
    line: int
    sort: str  # MALFORMED | UNUSABLE
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


class TraceError(RayonError, ValueError):
    """A malformed line in a strict import; names the file and line."""

    code = "trace"

    def __init__(self, issue: LineIssue):
        self.issue = issue
        super().__init__(issue.reason, place=f"{issue.file}:{issue.line}")


@dataclass
class ImportReport:
    """Counts of one import: data lines read, jobs kept, lines outside the slice, and every skipped line."""

    file: str
    strict: bool = False
    read: int = 0
    kept: int = 0
    outside: int = 0
    issues: list[LineIssue] = field(default_factory=list)

    def malformed(self, line: int, reason: str) -> None:
        """Record a line that breaks the format; raises TraceError in strict mode."""
        issue = LineIssue(self.file, line, MALFORMED, reason)
        if self.strict:
            raise TraceError(issue)
        self.issues.append(issue)

    def unusable(self, line: int, reason: str) -> None:
        """Record a well-formed line that cannot be simulated."""
        self.issues.append(LineIssue(self.file, line, UNUSABLE, reason))

    @property
    def skipped(self) -> int:
        return len(self.issues)

    def counts(self) -> Counter[str]:
        """Skipped lines by reason, without the detail after a `:` (`run time missing: -1` → `run time missing`)."""
        return Counter(issue.reason.split(":")[0] for issue in self.issues)

    def summary(self) -> str:
        """One line for people: read, kept, outside the slice, skipped by reason."""
        text = f"{self.file}: {self.read} lines read, {self.kept} jobs kept"
        if self.outside:
            text += f", {self.outside} outside the slice"
        if self.issues:
            reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.counts().items()))
            text += f", {self.skipped} skipped ({reasons})"
        return text
