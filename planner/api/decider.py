"""The deciding process of `rayon serve --workers N`: one process beside the workers that decides every submission.

The workers parse, validate and answer the requests; they hand their batches to the decider (planner/store/
forward.py). When the decider was one of the workers it also served its share of the HTTP requests, and on two
cores that share made it the bottleneck: a process of its own leaves its interpreter to deciding. It is started
before the workers (they find it listening), started again if it dies (meanwhile a worker decides in its place,
and the new one stands by until that worker lets the lock go), and ended after the workers have finished their
requests.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path

from planner.store.forward import CLOSE_WAIT, SOCKET

READY_WAIT = 60.0  # seconds the server waits for its deciding process to listen before starting the workers anyway
WATCH_EVERY = 1.0  # seconds between two looks at whether the deciding process is still there

log = logging.getLogger("rayon.api")


class DeciderProcess:
    """Runs `target` (which decides for the workers sharing `folder` until SIGTERM) in a process of its own."""

    def __init__(self, target: Callable[[], None], folder: Path):
        self._target, self._folder = target, folder
        self._context = multiprocessing.get_context("spawn")  # a fresh interpreter, as uvicorn's workers are
        self._process: BaseProcess | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        """Start the process and wait until it listens (or gave up: then the workers decide for themselves)."""
        process = self._spawn()
        deadline = time.monotonic() + READY_WAIT
        while not (self._folder / SOCKET).exists():
            if not process.is_alive() or time.monotonic() > deadline:
                log.error("the deciding process did not start (exit status %s): each worker decides itself",
                          process.exitcode)
                break
            time.sleep(0.02)
        self._watcher = threading.Thread(target=self._watch, name="rayon-decider-watch", daemon=True)
        self._watcher.start()

    def _spawn(self) -> BaseProcess:
        self._process = self._context.Process(target=self._target, name="rayon-decider")
        self._process.start()
        return self._process

    def _watch(self) -> None:
        """Start the process again when it died of anything but the end it was asked for (exit status 0)."""
        while not self._stopping.wait(WATCH_EVERY):
            process = self._process
            if process is not None and not process.is_alive() and process.exitcode != 0:
                log.warning("the deciding process (pid %s) died (exit status %s): a worker decides until a new one "
                            "can", process.pid, process.exitcode)
                self._spawn()

    def stop(self) -> None:
        """End the process (SIGTERM: it finishes the batches it is deciding) and wait for it; kill it if it hangs."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
        process = self._process
        if process is None:
            return
        if process.is_alive():
            process.terminate()
            process.join(CLOSE_WAIT + 5)
            if process.is_alive():
                log.error("the deciding process (pid %s) did not end on SIGTERM: killed", process.pid)
                process.kill()
        process.join()
        process.close()
        self._process = None
