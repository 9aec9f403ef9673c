"""A request body size limit, as ASGI middleware: too large answers 413 before the body is read or parsed.

A declared `Content-Length` over the limit is refused at once; a body sent without one (chunked)
is counted as it arrives and refused as soon as it passes the limit.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner.api.errors import YARN_PREFIX, ApiError

DEFAULT_MAX_BODY = 1024 * 1024  # bytes: a reservation is a few kilobytes; a thousand of them still fit


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse request bodies larger than `limit` bytes with 413, in the dialect of the request."""

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_BODY):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if started:
                raise
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        error = ApiError(413, "too_large", f"the request body is larger than the limit of {self.limit} bytes",
                         "send one reservation per request; the server's limit is `rayon serve --max-body`")
        body = json.dumps(error.yarn() if scope["path"].startswith(YARN_PREFIX) else error.native()).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
