"""A replan worker: `python -m planner.api.worker`, a process the server starts for each replan job (jobs.py).

The job arrives as one JSON line on standard input; the outcome leaves as one JSON document on
standard output. Standard input stays open for as long as the server lives: its end of file means
the server has gone without ending the worker (it was killed), and the worker then kills its own
process group at once, the solver processes it may have started (CBC) with it. The server starts
the worker in a process group of its own, so that Ctrl-C at a terminal reaches the server only,
and the server ends the whole group when it cancels a job.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any as AnyType

from rdl import units


def replan(target: str, actor: str, time_limit: float | None, solver: str | None,
           gap: float | None) -> dict[str, AnyType]:
    """Re-plan the store at `target`; the outcome, or the store's error, as JSON."""
    from planner.core.compile import Clock
    from planner.store.facade import Store, StoreError
    from planner.store.lifecycle import REPLAN_SOLVE_SHARE

    started = units.format_instant(datetime.now(UTC))
    began = time.perf_counter()
    try:
        with Store.open(target) as store:
            # The time limit covers the job: the solver gets most of it, re-admitting what is left.
            solve = None if time_limit is None else time_limit * REPLAN_SOLVE_SHARE
            outcome = store.replan(actor=actor, time_limit=solve, backend=solver, gap=gap)
            skipped: list[str] = []
            until = None if time_limit is None else began + time_limit
            admitted = store.readmit(actor, until, skipped)  # rejections that fit the replanned plan
            cluster = store.cluster()
            result = outcome.to_json(Clock(cluster.start, cluster.step, cluster.steps))
            result["admitted"] = [decision.reservation for decision in admitted]
            result["not_retried"] = skipped
        return {"started": started, "result": result}
    except StoreError as error:
        return {"started": started, "error": {"code": error.code, "message": error.message, "hint": error.hint}}


def end_with_server() -> None:
    """Block until the server closes this process's standard input, then kill this process group."""
    # The descriptor itself, not `sys.stdin`: a daemon thread blocked inside a buffered reader holds its lock, and
    # the interpreter's shutdown, taking that lock to close it, aborts ("_enter_buffered_busy", exit 134).
    while os.read(sys.stdin.fileno(), 4096):
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main() -> None:
    """Read the job, watch for the server's end, re-plan, write the outcome."""
    # The answer gets a descriptor of its own, which no solver process inherits; whatever is printed to standard
    # output from here on (a solver's banner) goes to the server's log instead of into the answer.
    answer = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    job = json.loads(sys.stdin.buffer.readline())
    threading.Thread(target=end_with_server, daemon=True).start()
    try:
        outcome = replan(**job)
    except Exception as exc:  # an internal failure: reported in the job, never lost with the process
        outcome = {"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}}
    with answer:
        answer.write(json.dumps(outcome))


if __name__ == "__main__":
    main()
