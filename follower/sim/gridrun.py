"""Where a grid's runs execute: in this process, or on Dask's `distributed` (a local cluster of this machine's cores
by default, a user's cluster by its scheduler's address).

Runs are independent and each is deterministic for its seed, so where one runs changes none of its figures. A run
lost with a worker that dies is given to another worker by Dask's scheduler and done again; its outcome is taken
once, from the future that finished (none is counted twice). The caller keeps each outcome as it comes
(`follower.sim.checkpoint`), so a grid stopped by a crash resumes with only the missing runs. A local cluster left
with no worker at all (its worker processes killed, or unable to start) fails the grid after NO_WORKERS_TIMEOUT
instead of waiting for ever; a user's cluster keeps its own setting (an adaptive one may start workers later).
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
NO_WORKERS_TIMEOUT = "120s"  # how long a local cluster's runs wait with no worker running before the grid fails


@contextlib.contextmanager
def grid_client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A Dask client: of the scheduler at `scheduler` (`tcp://HOST:8786`), or of a local cluster of `workers`
    single-threaded worker processes on loopback, closed when the block ends."""
    import dask
    from distributed import Client, LocalCluster

    settings: dict[str, Any] = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
    if scheduler is None:
        settings["distributed.scheduler.no-workers-timeout"] = NO_WORKERS_TIMEOUT
    with dask.config.set(settings):
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
    from distributed.scheduler import NoWorkerError

    futures = {client.submit(function, item, *args, pure=False, key=f"run-{index}"): index
               for index, item in enumerate(items)}
    for future in as_completed(futures):
        try:
            outcome = future.result()
        except NoWorkerError as error:
            raise ConnectionError(f"no Dask worker ran for {NO_WORKERS_TIMEOUT}: the local cluster's workers died "
                                  "or could not start; the runs finished so far are kept") from error
        finished(futures[future], outcome)
