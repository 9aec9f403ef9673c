"""Suite-wide test settings."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's timing checks (a 200 ms deadline per example, the too-slow health check) fail on a busy machine
# however correct the code: no test of ours depends on how fast an example runs (speed lives in benchmarks/).
settings.register_profile("rayon", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rayon")

# The MILP agent is solver-heavy on hypothesis's random plans and on the week-long example plans:
# those runs belong to `-m slow`; its conformance and brute-force cases stay in the fast default.
SOLVER_HEAVY = ("tests/planner/agents/test_properties.py", "tests/test_examples.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SOLVER_HEAVY) and "milp" in item.nodeid:
            item.add_marker(pytest.mark.slow)
