"""Limits on connections before a request reaches the app (planner/api/guard.py; issue #29): a header too large is
431, headers too slow 408, a connection beyond the limit 503, each closed; the server answers others meanwhile."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.store.facade import Store
from tests.planner.api.support import CLUSTER, Server, make_tokens, start, stop


def served(tmp_path: Path, *args: str) -> Iterator[Server]:
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
    server = start(state, tmp_path / "tokens.yaml", make_tokens(tmp_path / "tokens.yaml"), *args)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[Server]:
    """A server holding at most 3 connections, with headers of at most 2 KiB (and a minute to send them)."""
    yield from served(tmp_path, "--max-connections", "3", "--max-header-bytes", "2048", "--header-timeout", "60")


def connect(server: Server) -> socket.socket:
    host, port = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_header_larger_than_the_limit_is_431_and_the_connection_closed(strict: Server) -> None:
    with connect(strict) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: rayon\r\nX-Big: " + b"x" * 4096)
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 431 ") and b"larger than 2048 bytes" in reply
    assert strict.client().get("/v1/health").status_code == 200


def test_a_header_of_hundreds_of_megabytes_is_cut_off_not_read(strict: Server) -> None:
    """The server closes the connection after the limit: the sender cannot even finish sending."""
    with connect(strict) as sock, pytest.raises(OSError):  # reset or broken pipe: nobody reads the rest
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: rayon\r\nX-Big: ")
        for _ in range(300):
            sock.sendall(b"x" * 1_000_000)
    assert strict.client().get("/v1/health").status_code == 200


def test_a_body_arriving_with_its_headers_is_no_header(strict: Server) -> None:
    with strict.client("alice") as alice:
        refused = alice.post("/v1/reservations", content=b"#" * 100_000, headers={"Content-Type": "text/plain"})
    assert refused.status_code in (400, 422)  # read by the app (not a reservation), not refused as a header


def test_a_connection_beyond_the_limit_is_503_and_others_are_served_once_it_drops(strict: Server) -> None:
    idle = [connect(strict) for _ in range(3)]  # they send nothing: each holds its place for the header timeout
    try:
        with connect(strict) as one_more:
            assert answer(one_more).startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in idle:
            sock.close()
    assert strict.client().get("/v1/health").status_code == 200


def test_headers_that_do_not_arrive_within_the_timeout_are_408_and_the_connection_closed(tmp_path: Path) -> None:
    for server in served(tmp_path, "--header-timeout", "0.5"):
        with connect(server) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: ra")  # and then nothing more
            assert answer(sock).startswith(b"HTTP/1.1 408 ")
        assert server.client().get("/v1/health").status_code == 200


def test_worker_processes_keep_the_limits_too(tmp_path: Path) -> None:
    for server in served(tmp_path, "--workers", "2", "--max-header-bytes", "2048"):
        with connect(server) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: rayon\r\nX-Big: " + b"x" * 4096)
            assert answer(sock).startswith(b"HTTP/1.1 431 ")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with the default limits, shared by the module's tests that leave its plan as it was (dry runs and
    health checks) and close their connections."""
    yield from served(tmp_path_factory.mktemp("plain"))


H2C = b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQBAAAAAAIAAAAA\r\n"


@pytest.mark.parametrize("split", [False, True], ids=["body-with-headers", "body-later"])
def test_an_upgrade_to_h2c_is_ignored_and_the_request_s_body_kept(plain: Server, split: bool) -> None:
    """Java's HttpClient asks every plain-HTTP request to upgrade to h2c; the body was lost (answered "the body is
    empty", 400): the server now answers it as HTTP/1.1 with its body (issue #33), then closes the connection."""
    body = b"reservation probe { atom(b={memory: 1GiB, vcores: 1}, w=1h) }"
    head = (b"POST /v1/reservations?dry_run=true HTTP/1.1\r\nHost: rayon\r\nContent-Type: text/plain\r\n"
            b"Authorization: Bearer " + plain.tokens["alice"].encode() + b"\r\n" + H2C
            + b"Content-Length: %d\r\n\r\n" % len(body))
    with connect(plain) as sock:
        if split:
            sock.sendall(head)
            sock.sendall(body[:10])
            sock.sendall(body[10:])
        else:
            sock.sendall(head + body)
        reply = answer(sock)  # the connection closes after the answer: nothing else is parsed on it
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:300]
    assert b'"reservation":"probe","accepted":true' in reply
    with plain.client("alice") as alice:  # and nothing was stored: a dry run, answered whole
        assert alice.get("/v1/reservations/probe").status_code == 404


def test_a_get_asking_to_upgrade_to_h2c_is_answered_as_http_1_1(plain: Server) -> None:
    with connect(plain) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: rayon\r\n" + H2C + b"\r\n")
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 200 ")
