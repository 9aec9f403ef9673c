"""The fuzz tier's settings: how many inputs each fuzz test draws, and a count of inputs in the summary.

`RAYON_FUZZ_EXAMPLES` sets the examples per input kind (default 40: CI's small budget, about a minute on two
cores); a real run gives thousands, e.g. `RAYON_FUZZ_EXAMPLES=2000 pytest -m fuzz` (about 5 inputs a second).
`RAYON_FUZZ_COLLECT=DIR` keeps going after a failure: every failing input is written to DIR (one per kind of
failure) instead of failing the test, so one long run collects every crasher for `corpus/`.
"""

from __future__ import annotations

import pytest

from tests.fuzz.harness import COUNTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if COUNTS:
        counts = ", ".join(f"{kind} {count}" for kind, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fuzz inputs examined: {sum(COUNTS.values())} ({counts})")
