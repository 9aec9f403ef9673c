"""The server tunes Python's garbage collector before it serves (planner/api/server.py `tune_collector`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from planner.api import server


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector's settings as they were, back after the test."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_what_lives_at_start_is_frozen_out_of_collections_and_collections_come_less_often(collector: None) -> None:
    kept = [[index] for index in range(1000)]  # long-lived objects the collector can track
    server.tune_collector()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == server.COLLECTOR_THRESHOLDS
    assert gc.get_threshold()[0] > 700 and gc.get_threshold()[2] > 10  # Python's defaults: (700, 10, 10)
