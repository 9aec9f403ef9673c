"""Limits on a connection before any request reaches the app: how many connections a server holds open, and how
large and how slow a request's headers may be (issue #29: one 300 MB header doubled a server's memory, 800
connections trickling headers stayed open 70 s, and 19,980 of them took every file descriptor, health checks'
included).

uvicorn's HTTP protocol (httptools) with three checks added: a connection beyond `max_connections` is answered
503 and closed at once; headers larger than `header_bytes` are answered 431, and headers not whole within
`header_seconds` of a request's first byte 408, each closing the connection. The limits travel on uvicorn's
Config (`LIMITS`), which worker processes receive pickled.

It also ignores an upgrade it does not speak, as a server may (RFC 9110, 7.8), keeping the request's body: Java's
HttpClient asks every plain-HTTP request to upgrade to h2c, and httptools stops parsing at the end of such a
request's headers, so uvicorn answered it as if its body were empty (issue #33).
"""

from __future__ import annotations

import asyncio
from typing import Any as AnyType

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from planner.api.limits import ConnectionLimits

LIMITS = "rayon_connection_limits"  # the attribute of uvicorn's Config holding a ConnectionLimits


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing connections and headers past the limits on its Config."""

    def __init__(self, config: AnyType, *args: AnyType, **kwargs: AnyType):
        super().__init__(config, *args, **kwargs)
        self.limits: ConnectionLimits = getattr(config, LIMITS, None) or ConnectionLimits()
        self._header_bytes = 0
        self._reading_headers = True
        self._header_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._body_left = 0  # bytes still to come of the body of a request whose upgrade was ignored

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refuse(503, "Service Unavailable", "too many connections: try again shortly")
            return
        self._time_headers()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._body_left:  # past the headers of an ignored upgrade: what comes is its body
            self._take_body(data)
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.logger.warning("Invalid HTTP request received.")
            self.send_400_response("Invalid HTTP request received.")
            return
        except httptools.HttpParserUpgrade as upgrade:  # its headers ended: the rest of `data` is the body
            if self._should_upgrade():
                self.handle_websocket_upgrade()
                return
            if self._body_left:
                self._take_body(data[upgrade.args[0]:])
        if self._reading_headers and not self._refused:
            self._header_bytes += len(data)  # checked after parsing: a body arriving with its headers is no header
            if self._header_bytes > self.limits.header_bytes:
                self._refuse(431, "Request Header Fields Too Large",
                             f"the request line and headers are larger than {self.limits.header_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_headers, self._header_bytes = True, 0
        self._time_headers()

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        self._stop_timer()
        super().on_headers_complete()
        if self.parser.should_upgrade() and not self._should_upgrade():
            length = next((value for name, value in self.headers if name == b"content-length"), b"0")
            self._body_left = int(length) if length.isdigit() else 0
            self.cycle.keep_alive = False  # the parser stopped at the upgrade: this connection serves no other

    def on_message_complete(self) -> None:
        if not self._body_left:  # an ignored upgrade's body is still coming: the message is not complete yet
            super().on_message_complete()

    def _take_body(self, data: bytes) -> None:
        """Hand what arrived of an ignored upgrade's body to the request; complete it once it is whole."""
        taken = data[:self._body_left]
        self._body_left -= len(taken)
        if taken:
            self.on_body(taken)
        if not self._body_left:
            self.on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _time_headers(self) -> None:
        self._stop_timer()
        self._header_timer = asyncio.get_running_loop().call_later(self.limits.header_seconds, self._too_slow)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        if self._reading_headers and not self._refused:
            self._refuse(408, "Request Timeout",
                         f"the request's headers did not arrive within {self.limits.header_seconds:g} seconds")

    def _refuse(self, status: int, phrase: str, message: str) -> None:
        """Answer `status` with `message` and close the connection (the app never sees the request)."""
        self._refused = True
        self._stop_timer()
        body = message.encode()
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
                             b"content-length: %d\r\n\r\n%s" % (status, phrase.encode(), len(body), body))
        self.transport.close()
