"""Which windows run compiled (pack.compiled_for): long ones, which load the kernels, then every window, so that a
process that never plans a long window never pays the compiler's load."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.agents.greedy import pack

ROOT = Path(__file__).resolve().parents[3]


def test_short_windows_run_compiled_once_the_kernels_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    kernels = importlib.import_module(pack._KERNELS)
    monkeypatch.delitem(sys.modules, pack._KERNELS)  # as in a process that has not loaded them
    assert [pack.compiled_for(size) for size in (1, pack.COMPILED_FROM - 1, pack.COMPILED_FROM)] == [
        False, False, True]
    monkeypatch.setitem(sys.modules, pack._KERNELS, kernels)
    assert [pack.compiled_for(size) for size in (0, 1, pack.COMPILED_FROM - 1)] == [False, True, True]


PROBE = """
import json, sys
from planner.admission import Planner
from tests.planner.support import make_cluster, one
planner = Planner(make_cluster({"vcores": 10}, 24 * 60))
said = []
for window in sys.argv[1:]:
    decision = planner.submit(one("reservation r%s { window(s=+0m, e=+%s, atom(b={vcores: 2}, w=20m, l=10m)) }"
                                  % (len(said), window)), "gree")
    said.append([decision.accepted, "planner.agents.greedy.compiled" in sys.modules])
print(json.dumps(said))
"""


def _decide(*windows: str) -> list[list[bool]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *windows], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_process_of_short_windows_never_loads_the_compiler_and_a_long_one_loads_it() -> None:
    assert _decide("30m", "45m") == [[True, False], [True, False]]  # windows of 30 and 45 one-minute steps
    assert _decide("30m", "2h", "30m") == [[True, False], [True, True], [True, True]]
