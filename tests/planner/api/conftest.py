"""Fixtures of the API tests: one real server process per test module, its plan started over for each test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.store.facade import Store, StoreError
from tests.planner.api.support import CLUSTER, Server, make_tokens, running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`rayon serve` over a one-day plan, with tokens for alice and bob (users) and ops (admin)."""
    root = tmp_path_factory.mktemp("api")
    state = root / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    tokens_file = root / "tokens.yaml"
    tokens = make_tokens(tokens_file)
    with running(state, tokens_file, tokens) as started:
        yield started


@pytest.fixture
def api(server: Server) -> Server:
    """The module's server with an empty plan."""
    server.reset()
    return server


@pytest.fixture
def state(api: Server) -> Path:
    return api.state


POSTGRES_ENV = "RAYON_TEST_POSTGRES_URL"


@pytest.fixture
def postgres() -> str:
    """The URL of a throwaway PostgreSQL database (as `.ci/run` starts one); without one the test is skipped."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"the API's PostgreSQL tests need {POSTGRES_ENV}=postgresql+psycopg://USER@HOST:PORT/DB")
    try:
        Store.open(url).close()
    except StoreError as exc:
        pytest.skip(f"no PostgreSQL plan store at {POSTGRES_ENV}: {exc}")
    return url
