"""The server's logs, through the standard `logging` module: text as uvicorn writes it, or JSON lines.

Every logger of the process (rayon's, uvicorn's, any library's, and Python's warnings) writes to
standard error through one handler, in one format (`configure`). A JSON line is one object: `time`
(UTC), `level`, `logger`, `message`, and for an access line (`AccessLog`, logger `rayon.access`)
`client`, `method`, `path`, `query` (when there is one), `status` and `duration` in seconds; an
exception adds its traceback as `exception`.
"""

from __future__ import annotations

import json
import logging
import logging.config
import time
from datetime import UTC, datetime
from typing import Any as AnyType

from starlette.types import ASGIApp, Message, Receive, Scope, Send

FORMATS = ("text", "json")
ACCESS_FIELDS = ("client", "method", "path", "query", "status", "duration")
access_log = logging.getLogger("rayon.access")


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, AnyType] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                                         "Z"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        data.update((name, getattr(record, name)) for name in ACCESS_FIELDS if hasattr(record, name))
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return json.dumps(data, default=str)


def configure(form: str, level: str, access: bool) -> None:
    """Send every log of this process to standard error in `form` (text or json): uvicorn's and rayon's at
    `level`, access lines only with `access`, other libraries' warnings and errors; the start line always."""
    formatters: dict[str, AnyType] = {
        "text": {"()": "uvicorn.logging.DefaultFormatter", "fmt": "%(levelprefix)s %(message)s"},
        "json": {"()": JsonFormatter}}
    logging.config.dictConfig({
        "version": 1, "disable_existing_loggers": False,
        "formatters": {form: formatters[form]},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": form}},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {"uvicorn": {"level": level.upper()}, "rayon": {"level": level.upper()},
                    "rayon.serve": {"level": "INFO"},
                    "rayon.access": {"level": level.upper() if access else "WARNING"},
                    # the access lines are AccessLog's; uvicorn's own would repeat each (in a worker process this
                    # runs after uvicorn silenced its logger, and dictConfig would otherwise make it propagate again)
                    "uvicorn.access": {"handlers": [], "propagate": False}}})
    logging.captureWarnings(True)


class AccessLog:
    """ASGI middleware: one line per HTTP request once it is answered (INFO on `rayon.access`)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500  # the server answers 500 if the app fails before answering

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            _log_access(scope, status, time.perf_counter() - started)


def _log_access(scope: Scope, status: int, seconds: float) -> None:
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    query = scope.get("query_string", b"").decode("latin-1")
    fields: dict[str, AnyType] = {"client": where, "method": scope["method"], "path": scope["path"],
                                  "status": status, "duration": round(seconds, 6)}
    if query:
        fields["query"] = query
    target = scope["path"] + (f"?{query}" if query else "")
    access_log.info('%s - "%s %s HTTP/%s" %d %.1f ms', where, scope["method"], target, scope.get("http_version", "1.1"),
                    status, seconds * 1000, extra=fields)
