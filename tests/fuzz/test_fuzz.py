"""The fuzz tier: generated inputs of every kind through `rayon check`, `plan` and `simulate` (see harness.py).

Marked `fuzz` and `slow`: not in the default run; `pytest -m fuzz` runs it (budget: conftest.py).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import serving, strategies
from tests.fuzz.harness import describe, examine, signature

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

EXAMPLES = int(os.environ.get("RAYON_FUZZ_EXAMPLES", "40"))
COLLECT = os.environ.get("RAYON_FUZZ_COLLECT")
SEEN: set[str] = set()
INPUTS = strategies.INPUTS | serving.INPUTS

fuzz_settings = settings(max_examples=EXAMPLES, deadline=None, database=None if COLLECT else settings().database,
                         suppress_health_check=list(HealthCheck), print_blob=True)


def judge(kind: str, data: bytes) -> None:
    verdict = examine(kind, data)
    if not verdict.problems:
        return
    if COLLECT:  # keep one input per kind of failure, and go on
        key = f"{kind}: {signature(verdict)}"
        if key not in SEEN:
            SEEN.add(key)
            folder = Path(COLLECT)
            folder.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha1(data).hexdigest()[:10]
            path = folder / f"{kind}-{digest}.input"
            path.write_bytes(data)
            path.with_suffix(".txt").write_text(describe(kind, data, verdict))
        return
    raise AssertionError(describe(kind, data, verdict))


@pytest.mark.parametrize("kind", list(INPUTS))
@fuzz_settings
@given(data=st.data())
def test_no_input_breaks_the_commands(kind: str, data: st.DataObject) -> None:
    judge(kind, data.draw(INPUTS[kind](), label=kind))
