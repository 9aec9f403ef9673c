"""One deciding process for the worker processes of one server: the workers forward their submissions to it.

Every worker of `rayon serve --workers N` could decide submissions itself (each write checks the plan's version),
but then each must first catch up with every decision the others committed: read their rows, parse their RDL,
add them to its own plan, on every batch. With two workers that cost more than the second process gave
(`benchmarks/api.py --wrk 10 --workers 2`: 2.3-2.9 ms of CPU per submission, against 1.6-2.1 ms for one). So
the process holding the lock `decider.lock` in the server's shared folder decides for all (the server's deciding
process, planner/api/decider.py, or a worker in its place): it listens on `decider.sock` (Python's
multiprocessing.connection, with a key only the server's processes can read), and the workers hand it each of
their batches and get back its decisions, with the plan's meta rows they were made on. The workers still parse,
validate and answer their own requests; they only stop deciding. The batches waiting together, from any
workers, are decided as one: one write transaction, one flush to disk.

Should the decider go (a crash, a restart), a worker finds nobody listening, decides that batch itself (the
store's version checks keep that correct), and takes the lock if it is free, becoming the decider. A batch the
decider took and never answered is an error for its submissions (committed or not, only the store can say), not
decided again: a second decision would refuse the name the first one may have accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import secrets
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener, wait
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any as AnyType

from planner.store.errors import StoreError
from planner.store.keeper import FileKeeper
from rdl.errors import EXIT_INTERNAL, RayonError

ENV_FOLDER = "RAYON_DECIDER_DIR"  # the workers' shared folder, set by the server for its worker processes
LOCK, SOCKET, KEY = "decider.lock", "decider.sock", "decider.key"
LOST = ("the process deciding for every worker of this server stopped while it decided this submission, which may "
        "or may not be committed")
LOST_HINT = "read the reservation back to see where it stands"
_SIZE, _LONG_SIZE, _SIZE_MAX = struct.Struct("!i"), struct.Struct("!Q"), 0x7FFFFFFF  # Connection's frame header
CLOSE_WAIT = 30.0  # seconds the decider waits, as it closes, for the batches it is deciding to be answered

log = logging.getLogger("rayon.store")

# What deciding a batch gives: an outcome per item (a decision, or the error that refused it), and the plan's meta
# rows it was decided on (None when the batch failed whole).
Answered = tuple[list[AnyType], dict[str, str] | None]


def make_folder(folder: Path) -> None:
    """Ready `folder` (made by the caller, private to it) for a server's workers: the key they authenticate with."""
    key = folder / KEY
    key.write_bytes(secrets.token_bytes(32))
    os.chmod(key, 0o600)


def _picklable(outcomes: Sequence[AnyType]) -> list[AnyType]:
    """The outcomes with each error as one of ours saying what it was (our errors pickle: rdl/errors.py), for an
    answer whose errors did not pickle."""
    return [RayonError(f"{type(o).__name__}: {o}", code="internal", exit_code=EXIT_INTERNAL)
            if isinstance(o, BaseException) and not isinstance(o, RayonError) else o for o in outcomes]


class Desk:
    """The decider's side: one thread answers every worker through `decide`, the batches that are waiting together
    decided as one (one write transaction for all of them, as group commit does within a process)."""

    def __init__(self, folder: Path, decide: Callable[[list[AnyType]], Answered]):
        address = folder / SOCKET
        with contextlib.suppress(FileNotFoundError):
            address.unlink()  # a socket file a dead decider left behind
        self._decide = decide
        self._listener = Listener(str(address), family="AF_UNIX", authkey=(folder / KEY).read_bytes())
        self._connections: list[Connection] = []
        self._wake_reader, self._wake_writer = socket.socketpair()  # a new connection, or close(), wakes the loop
        self._guard = threading.Condition()
        self._busy = False  # deciding: close() waits for those batches to be answered
        self._closed = False
        threading.Thread(target=self._accept, name="rayon-decider-accept", daemon=True).start()
        self._server = threading.Thread(target=self._serve, name="rayon-decider", daemon=True)
        self._server.start()

    def _accept(self) -> None:
        while True:
            try:
                connection = self._listener.accept()
            except (OSError, EOFError, AuthenticationError) as error:  # closed, or a caller without the key
                if self._closed:
                    return
                log.warning("a worker could not connect to the decider: %s", error)
                continue
            with self._guard:
                self._connections.append(connection)
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def _serve(self) -> None:
        with self._wake_reader, self._wake_writer:
            while not self._closed:
                with self._guard:
                    connections = list(self._connections)
                ready = wait([*connections, self._wake_reader])
                if self._wake_reader in ready:
                    with contextlib.suppress(OSError):
                        self._wake_reader.recv(4096)
                asking = [(c, tickets) for c in connections if c in ready and (tickets := self._receive(c)) is not None]
                if asking:
                    self._answer(asking)
        with self._guard:  # closed: a batch sent meanwhile is answered "decide it yourself", not left unanswered
            for connection in self._connections:
                with contextlib.suppress(OSError, EOFError):
                    while connection.poll(0):
                        connection.recv()
                        connection.send(None)
                connection.close()
            self._connections.clear()

    def _receive(self, connection: Connection) -> list[AnyType] | None:
        """A worker's batch; None when it has gone (then its connection is forgotten: a service that runs for
        months keeps no dead worker's connection)."""
        try:
            tickets: list[AnyType] = connection.recv()
            return tickets
        except (OSError, EOFError):
            with self._guard:
                self._connections.remove(connection)
            connection.close()
            return None

    def _answer(self, asking: list[tuple[Connection, list[AnyType]]]) -> None:
        with self._guard:
            closing = self._closed
            self._busy = not closing
        try:
            if closing:  # not decided: each worker decides its batch itself
                for connection, _ in asking:
                    with contextlib.suppress(OSError):
                        connection.send(None)
                return
            tickets = [ticket for _, batch in asking for ticket in batch]
            try:
                outcomes, meta = self._decide(tickets)
            except Exception as error:  # every ticket's, as a batch run here gives it
                outcomes, meta = [error] * len(tickets), None
            at = 0
            for connection, batch in asking:
                self._send(connection, (outcomes[at:at + len(batch)], meta))
                at += len(batch)
        finally:
            with self._guard:
                self._busy = False
                self._guard.notify_all()

    @staticmethod
    def _send(connection: Connection, answer: Answered) -> None:
        outcomes, meta = answer
        with contextlib.suppress(OSError):
            try:
                connection.send(answer)
            except (pickle.PicklingError, TypeError, AttributeError):  # nothing was sent: an error did not pickle
                connection.send((_picklable(outcomes), meta))

    def close(self) -> None:
        """Stop answering, once the batches being decided are answered: the workers then decide for themselves
        (or one of them becomes the decider)."""
        with self._guard:
            self._closed = True
            self._listener.close()
            self._guard.wait_for(lambda: not self._busy, timeout=CLOSE_WAIT)
        self._wake()
        self._server.join(CLOSE_WAIT)


class _Link:
    """A worker's one connection to the decider, made when first needed."""

    def __init__(self, folder: Path):
        self._address = str(folder / SOCKET)
        self._key = (folder / KEY).read_bytes()
        self._connection: Connection | None = None

    def _connect(self) -> Connection:
        return Client(self._address, family="AF_UNIX", authkey=self._key)

    def _drop_if_closed(self) -> None:
        if self._connection is not None and self._connection.poll(0):
            self._drop()  # it answers only what it is asked: readable now means it closed since

    def _drop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(OSError):
                self._connection.close()
            self._connection = None


class Forwarder(_Link):
    """A worker's side: hands batches to the decider over one connection, made when first needed."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self._guard = threading.Lock()

    def forward(self, tickets: list[AnyType]) -> Answered | None:
        """The decider's outcomes for `tickets` and the meta they were decided on; None when no decider took them
        (then decide here). A StoreError when the decider went while deciding them: committed or not, nobody
        can say here, and deciding them again could refuse what was just accepted."""
        with self._guard:
            self._drop_if_closed()
            try:
                if self._connection is None:
                    self._connection = self._connect()
                self._connection.send(tickets)
            except (OSError, EOFError):
                self._drop()
                return None  # it never had them
            try:
                answer = self._connection.recv()
            except (OSError, EOFError):
                self._drop()
                raise StoreError("database", LOST, LOST_HINT) from None
        return answer  # None: it was closing and did not decide them

    def close(self) -> None:
        """Close the connection to the decider."""
        with self._guard:
            self._drop()


class LoopForwarder(_Link):
    """A worker's side on its event loop (the HTTP server's submissions): what arrives within one turn of the loop
    goes to the decider as one batch, with no thread between the request and the socket.

    A thread between them (`Forwarder` under the store's group commit) cost each batch two hand-overs of the
    interpreter, and on two cores those waits were much of a submission's time. Only connecting waits in a
    thread, as a decider that accepts but does not answer the handshake must not stall the loop."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self._waiting: list[tuple[AnyType, asyncio.Future[AnyType]]] = []
        self._flushing = False
        self._flusher: asyncio.Task[None] | None = None  # held here: the loop keeps only a weak reference to a task
        self._socket: socket.socket | None = None  # the connection's, non-blocking, for the loop's reads and writes

    async def forward(self, ticket: AnyType) -> tuple[AnyType, dict[str, str] | None] | None:
        """The decider's outcome for `ticket` and the meta it was decided on; None when no decider took it (then
        decide here). Raises the StoreError `Forwarder.forward` raises for a batch taken and never answered."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AnyType] = loop.create_future()
        self._waiting.append((ticket, future))
        if not self._flushing:
            self._flushing = True
            loop.call_soon(self._start_flush, loop)  # after this turn's other requests
        result: tuple[AnyType, dict[str, str] | None] | None = await future
        return result

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        self._flusher = loop.create_task(self._flush())

    async def _flush(self) -> None:
        """Send the waiting tickets as one batch, again and again while more have come meanwhile."""
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    answered = await self._exchange([ticket for ticket, _ in batch])
                except BaseException as error:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    if not isinstance(error, Exception):
                        raise
                    continue
                for index, (_, future) in enumerate(batch):
                    if not future.done():
                        future.set_result(None if answered is None else (answered[0][index], answered[1]))
        finally:
            self._flushing = False

    async def _exchange(self, tickets: list[AnyType]) -> Answered | None:
        self._drop_if_closed()
        loop = asyncio.get_running_loop()
        try:
            if self._connection is None:
                self._connection = await asyncio.to_thread(self._connect)
                self._socket = socket.socket(fileno=os.dup(self._connection.fileno()))
                self._socket.setblocking(False)  # the event loop's reader makes it so anyway (uvloop)
            assert self._socket is not None
            await loop.sock_sendall(self._socket, frame(tickets))
        except (OSError, EOFError):
            self._drop()
            return None  # it never had them: a frame cut short is never decided
        try:
            answer: Answered | None = await read_frame(loop, self._socket)
        except (OSError, EOFError):
            self._drop()
            raise StoreError("database", LOST, LOST_HINT) from None
        return answer

    def _drop(self) -> None:
        super()._drop()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
            self._socket = None

    def close(self) -> None:
        """Close the connection to the decider."""
        self._drop()


def frame(value: AnyType) -> bytes:
    """`value` pickled and framed as multiprocessing's `Connection.send` frames it (the decider reads it so)."""
    payload = ForkingPickler.dumps(value)
    size = len(payload)
    header = _SIZE.pack(size) if size <= _SIZE_MAX else _SIZE.pack(-1) + _LONG_SIZE.pack(size)
    return header + bytes(payload)


async def read_frame(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> AnyType:
    """One value framed as `Connection.send` frames it, read from a non-blocking socket as it arrives (an answer
    of thousands of allocations is larger than the socket's buffer: it comes in pieces)."""
    (size,) = _SIZE.unpack(await _read_exactly(loop, sock, _SIZE.size))
    if size == -1:
        (size,) = _LONG_SIZE.unpack(await _read_exactly(loop, sock, _LONG_SIZE.size))
    return ForkingPickler.loads(await _read_exactly(loop, sock, size))


async def _read_exactly(loop: asyncio.AbstractEventLoop, sock: socket.socket, size: int) -> bytearray:
    """`size` bytes from `sock`; EOFError when it closes first."""
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        count = await loop.sock_recv_into(sock, view[got:])
        if count == 0:
            raise EOFError("the decider closed the connection")
        got += count
    return buffer


class SharedDecider:
    """One worker's part in deciding for all the workers sharing `folder`: the decider's desk when this process
    holds the lock, else a forwarder to the process that does."""

    def __init__(self, folder: Path, decide: Callable[[list[AnyType]], Answered]):
        self._folder, self._decide = folder, decide
        self._lock = FileKeeper(str(folder / LOCK))
        self._desk: Desk | None = None
        self._forwarder = Forwarder(folder)
        self._loop_forwarder = LoopForwarder(folder)
        self._elect()

    @property
    def deciding(self) -> bool:
        """Whether this process decides for the others."""
        return self._desk is not None

    def _elect(self) -> None:
        try:
            elected = self._desk is None and self._lock.holds()
        except OSError as error:
            # The folder is gone: its server was killed and the next one swept it. This worker decides for itself,
            # as without a decider, until it notices that its server is gone and ends (a 500 before: issue #29).
            log.warning("cannot take the decider's lock (%s): this process decides for itself", error)
            return
        if elected:
            self._forwarder.close()
            self._desk = Desk(self._folder, self._decide)
            log.info("this process (pid %d) decides the submissions of every worker", os.getpid())

    def stand_by(self, stop: threading.Event, every: float) -> bool:
        """Try to become the decider every `every` seconds until this process is one, or `stop` is set; whether it
        is (the server's deciding process, started again after a crash while a worker decides in its place)."""
        while True:
            self._elect()
            if self.deciding or stop.wait(every):
                return self.deciding

    def forward(self, tickets: list[AnyType]) -> Answered | None:
        """The decider's answer to `tickets`, or None when this process must decide them itself: it is the decider,
        or the decider did not answer (then this process becomes the decider if the lock is free)."""
        if self._desk is None:
            answered = self._forwarder.forward(tickets)
            if answered is not None:
                return answered
            self._elect()
        return None

    async def forward_async(self, ticket: AnyType) -> tuple[AnyType, dict[str, str] | None] | None:
        """The decider's outcome for one ticket, forwarded from the event loop with the others of its turn, and the
        meta it was decided on; None when this process must decide it itself (the store's own batches then
        forward it again or elect this process)."""
        if self._desk is not None:
            return None
        return await self._loop_forwarder.forward(ticket)

    def close(self) -> None:
        """Stop deciding for others (and let the lock go) or forwarding to them."""
        self._forwarder.close()
        self._loop_forwarder.close()
        if self._desk is not None:
            self._desk.close()  # closing its listener removes the socket file
            self._desk = None
        self._lock.release()
