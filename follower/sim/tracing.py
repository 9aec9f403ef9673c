"""The simulator's event log (`rayon simulate --trace-out`): one JSON line per event, in the order they happen."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO


class EventLog:
    """Writes events as JSON lines to `out`; with no `out`, writes nothing."""

    def __init__(self, out: TextIO | None):
        self.out = out

    def write(self, now: float, application: str | None, event: str, queue: str | None, node: str | None = None,
              resources: Mapping[str, float] | None = None, detail: str | None = None,
              container: str | None = None) -> None:
        """One event: when, whose, what, where, and on which node with which resources."""
        if self.out is None:
            return
        line: dict[str, Any] = {"time": now, "application": application, "event": event, "queue": queue,
                                "node": node, "resources": dict(sorted(resources.items())) if resources else None}
        if container:
            line["container"] = container
        if detail:
            line["detail"] = detail
        self.out.write(json.dumps(line, sort_keys=False) + "\n")
