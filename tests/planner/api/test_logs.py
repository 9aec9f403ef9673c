"""`rayon serve --log-format json`: every line of standard error is one JSON object, uvicorn's lines too, and a
request's line carries its method, path, status and duration."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

from planner.api.logs import JsonFormatter
from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, make_tokens, pinned, start, submit


def test_json_logs_are_one_object_a_line_for_uvicorn_rayon_and_every_request(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    server = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"),
                   "--log-format", "json", "--log-level", "info", "--access-log")
    try:
        with server.client("alice") as alice, server.client() as anonymous:
            assert submit(alice, pinned("one", 0, 10, 1), dry_run="true").status_code == 200
            assert anonymous.get("/v1/whoami").status_code == 401
    finally:  # a failing assertion must not leave the server running
        server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    lines = [json.loads(line) for line in server.output()]  # a line that is not JSON fails here
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert all(line["time"].endswith("Z") for line in lines)
    loggers = {line["logger"] for line in lines}
    assert {"rayon.serve", "uvicorn.error", "rayon.access"} <= loggers
    assert any("listening on http://127.0.0.1:" in line["message"] for line in lines if line["logger"] == "rayon.serve")
    access = [line for line in lines if line["logger"] == "rayon.access"]
    assert [(a["method"], a["path"], a.get("query"), a["status"]) for a in access] == [
        ("POST", "/v1/reservations", "dry_run=true", 200), ("GET", "/v1/whoami", None, 401)]
    assert all(0 < a["duration"] < 30 and a["level"] == "INFO" for a in access)


def test_the_server_s_text_logs_name_each_request_with_its_status_and_duration(tmp_path: Path) -> None:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    server = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"), "--access-log",
                   "--log-level", "info")
    try:
        with server.client() as anonymous:
            assert anonymous.get("/v1/health", params={"probe": "1"}).status_code == 200
    finally:  # a failing assertion must not leave the server running
        server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    requests = [line for line in server.output() if "/v1/health" in line]
    assert len(requests) == 1 and requests[0].startswith("INFO:")
    assert '"GET /v1/health?probe=1 HTTP/1.1" 200 ' in requests[0] and requests[0].rstrip().endswith(" ms")


def test_an_exception_is_kept_in_its_line_with_its_traceback() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        record = logging.LogRecord("rayon.api", logging.ERROR, __file__, 1, "internal error on %s", ("GET /",),
                                   sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == "internal error on GET /" and data["level"] == "ERROR"
    assert data["exception"].startswith("Traceback") and "ValueError: boom" in data["exception"]
