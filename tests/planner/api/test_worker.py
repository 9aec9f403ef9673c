"""The replan worker (`python -m planner.api.worker`) as the server runs it: its job on standard input, which stays
open while the server lives, its answer on standard output, and a clean exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from planner.store.facade import Store
from tests.planner.api.support import CLUSTER


def test_a_worker_exits_0_while_its_server_keeps_its_input_open(tmp_path: Path) -> None:
    """As the server does: the answer is read to its end and the worker waited for before its input is closed. The
    thread watching that input must not stop the interpreter's shutdown (it aborted with `_enter_buffered_busy`,
    exit 134, once per replan)."""
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    job = {"target": str(state), "actor": "ops", "time_limit": 5, "solver": None, "gap": None}
    worker = subprocess.Popen([sys.executable, "-m", "planner.api.worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert worker.stdin is not None and worker.stdout is not None and worker.stderr is not None
    worker.stdin.write(json.dumps(job).encode() + b"\n")
    worker.stdin.flush()
    answer = json.loads(worker.stdout.read())
    errors = worker.stderr.read().decode()
    code = worker.wait(120)
    worker.stdin.close()
    assert "error" not in answer and answer["result"]["changed"] is False, answer
    assert code == 0 and "Fatal Python error" not in errors, errors
