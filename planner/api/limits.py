"""Limits on a request, as ASGI middleware: its body's size and the time it may take to arrive, and a 500
that never costs the client its connection.

A declared `Content-Length` over the size limit is refused at once (413); a body sent without one
(chunked) is counted as it arrives and refused as soon as it passes the limit. A body that has not
arrived whole within `BODY_SECONDS` of the first read is refused (408): a client trickling bytes
holds nothing for long. A NUL anywhere in a request is refused (422) before any backend sees it. An
unexpected failure answers 500 here, inside the server, so that the connection stays open for the client's
next request (an error escaping to the server closes it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner.api.errors import YARN_PREFIX, ApiError

DEFAULT_MAX_BODY = 1024 * 1024  # bytes: a reservation is a few kilobytes; a thousand of them still fit
BODY_SECONDS = 30.0  # for the whole body to arrive: a megabyte over a slow link, not a trickle
log = logging.getLogger("rayon.api")


@dataclass(frozen=True)
class ConnectionLimits:
    """A server's limits on its connections, checked before a request reaches the app (planner/api/guard.py;
    `rayon serve --max-connections --max-header-bytes --header-timeout`)."""

    max_connections: int = 1000  # per server process: well below a process's usual 1024..65536 open files
    header_bytes: int = 64 * 1024  # a request line and headers: a token and a few cookies take a few KiB
    header_seconds: float = 10.0  # from a request's first byte to the end of its headers


class _Refused(Exception):
    """A request refused before it was read whole: the answer to give."""

    def __init__(self, error: ApiError):
        self.error = error


class RequestLimits:
    """Refuse request bodies larger than `limit` bytes (413) or slower than `seconds` (408), in the request's
    dialect; answer an unexpected failure with 500 on a connection that stays open."""

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_BODY, seconds: float = BODY_SECONDS):
        self.app = app
        self.limit = limit
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if any(b"\0" in part or b"%00" in part for part in (scope.get("raw_path") or scope["path"].encode(),
                                                             scope.get("query_string", b""))):
            await _answer(scope, send, _nul(scope), close=False)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _answer(scope, send, self._too_large(), close=True)
            return
        seen, started, deadline, tail = 0, False, None, b""

        async def limited() -> Message:
            nonlocal seen, deadline
            deadline = deadline or time.monotonic() + self.seconds
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise _Refused(self._too_slow()) from None
            if message["type"] == "http.request":
                nonlocal tail
                body = message.get("body", b"")
                seen += len(body)
                if seen > self.limit:
                    raise _Refused(self._too_large())
                if b"\0" in body or _ESCAPED_NUL in tail + body:
                    raise _Refused(_nul(scope))
                tail = (tail + body)[-len(_ESCAPED_NUL):]  # an escaped NUL may straddle two chunks
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _Refused as refused:
            if started:
                raise
            await _answer(scope, send, refused.error, close=True)
        except ClientDisconnect:  # gone before its body arrived whole (the server answered a malformed one 400)
            log.info("client went away before its request was read: %s %s", scope.get("method"), scope.get("path"))
        except Exception as exc:  # the app's own handlers missed it: answer here, keep the connection
            if started:
                raise
            log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            await _answer(scope, send, _internal(exc), close=False)

    def _too_large(self) -> ApiError:
        return ApiError(413, "too_large", f"the request body is larger than the limit of {self.limit} bytes",
                        "send one reservation per request; the server's limit is `rayon serve --max-body`")

    def _too_slow(self) -> ApiError:
        return ApiError(408, "too_slow", f"the request body did not arrive whole within {self.seconds:g} seconds",
                        "send the body at once")


_ESCAPED_NUL = b"\\u0000"  # as JSON writes a NUL


def _nul(scope: Scope) -> ApiError:
    """A NUL in a request (as itself, percent-encoded in its path or query, JSON-escaped in its body): no input of
    ours holds one, and PostgreSQL refuses it in text (a 503 `database` before, where SQLite answered 422). Bad input
    is 422 in our API and 400 in YARN's dialect, as everywhere else in each."""
    return ApiError(400 if scope["path"].startswith(YARN_PREFIX) else 422, "input",
                    "the request holds a NUL character (in its path, its query or its body)",
                    "names, queues and reservations are text without control characters")


def _internal(exc: Exception) -> ApiError:
    return ApiError(500, "internal", f"internal error: {type(exc).__name__}: {exc}",
                    "the plan store commits each decision whole or not at all; read the reservation back to see "
                    "where it stands", changed=None)


async def _answer(scope: Scope, send: Send, error: ApiError, close: bool) -> None:
    """Send `error` as the whole response, in the dialect of the request."""
    body = json.dumps(error.yarn() if scope["path"].startswith(YARN_PREFIX) else error.native()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the rest of the body was never read: the connection cannot carry another request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
