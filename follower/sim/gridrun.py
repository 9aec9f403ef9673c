"""Where a grid's runs execute: in this process, or on Dask's `distributed` (a local cluster of this machine's cores
by default, a user's cluster by its scheduler's address).

Runs are independent and each is deterministic for its seed, so where one runs changes none of its figures. A run
lost with a worker that dies is given to another worker by Dask's scheduler and done again; its outcome is taken
once, from the future that finished (none is counted twice). The caller keeps each outcome as it comes
(`follower.sim.checkpoint`), so a grid stopped by a crash resumes with only the missing runs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
LOOPBACK = "127.0.0.1"  # a local cluster listens on loopback only
ALLOWED_FAILURES = 3  # times a run may lose its worker before the grid gives up on it (Dask's KilledWorker)


@contextlib.contextmanager
def grid_client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A Dask client: of the scheduler at `scheduler` (`tcp://HOST:8786`), or of a local cluster of `workers`
    single-threaded worker processes on loopback, closed when the block ends."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        if scheduler is not None:
            with Client(scheduler) as client:
                yield client
            return
        # No dashboard; the scheduler's HTTP server (health checks) on any free loopback port, not 8787. The workers
        # log nothing below CRITICAL: a run that fails raises here through its future, and on a busy machine a
        # worker's heartbeat racing the cluster's close logged a harmless traceback after a finished grid.
        local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host=LOOPBACK,
                             dashboard_address=None, worker_dashboard_address=None, silence_logs=logging.CRITICAL,
                             scheduler_kwargs={"dashboard_address": f"{LOOPBACK}:0"})
        with local as cluster, Client(cluster) as client:
            yield client


def run_each(client: Any, function: Callable[..., R], items: Sequence[T], args: tuple[Any, ...],
             finished: Callable[[int, R], None]) -> None:
    """`function(item, *args)` for each item on the client's workers; `finished(index, result)` as each comes back,
    in the order they finish. A run that fails raises here, after the ones finished before it were handed over."""
    from distributed import as_completed

    futures = {client.submit(function, item, *args, pure=False, key=f"run-{index}"): index
               for index, item in enumerate(items)}
    for future in as_completed(futures):
        finished(futures[future], future.result())
