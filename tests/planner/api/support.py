"""Helpers of the API tests: a real `rayon serve` server process on a free loopback port, and bodies."""

from __future__ import annotations

import json
import math
import queue
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any as AnyType

import httpx

from planner.api.auth import append_token
from planner.core.check import check_plan
from planner.store.facade import Store
from tests.planner.store.consistency import archived_instances
from tests.planner.support import at, cluster_text, instant

ROOT = Path(__file__).resolve().parents[3]
RAYON = Path(sys.executable).with_name("rayon")  # the installed command, as users run it
EXAMPLES = ROOT / "examples"
# A day at one-minute steps, with both of YARN's resources.
CLUSTER = cluster_text({"memory": "64GiB", "vcores": 16}, steps=24 * 60)
USERS = {"alice": "user", "bob": "user", "ops": "admin"}
STARTUP_TIMEOUT = 60.0
END = "<end of standard error>"
LISTENING = re.compile(r"listening on (http://[^\s\"]+)")


@dataclass
class Server:
    """A running server process: its URL, store, and a token per user."""

    url: str
    state: Path | str  # a SQLite file, or a PostgreSQL URL
    tokens: dict[str, str]
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)  # standard error up to the line saying where it listens
    more: queue.Queue[str] = field(default_factory=queue.Queue)  # the lines of standard error after it

    def output(self) -> list[str]:
        """Every line of standard error from the start to the server's end (wait for that first)."""
        lines = list(self.log)
        while True:
            try:
                lines.append(self.more.get(timeout=5.0))
            except queue.Empty:
                return lines
            if lines[-1] == END:
                return lines[:-1]

    def client(self, user: str | None = None, **kwargs: AnyType) -> httpx.Client:
        """An HTTP client for the server, with the user's bearer token (none for None)."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0, **kwargs)

    def reset(self, cluster: str = CLUSTER) -> None:
        """Start the plan over (the server re-reads it: a new plan id invalidates its cache)."""
        with Store.open(self.state) as store:
            store.init(cluster, "cluster.yaml", force=True)


def make_tokens(path: Path, users: dict[str, str] = USERS) -> dict[str, str]:
    """A token file with a token per user; the tokens themselves."""
    return {user: append_token(path, user, role) for user, role in users.items()}


@contextmanager
def running(state: Path | str, tokens_file: Path, tokens: dict[str, str], *args: str) -> Iterator[Server]:
    """`rayon serve` on port 0 (any free one), until the block ends."""
    server = start(state, tokens_file, tokens, *args)
    try:
        yield server
    finally:
        stop(server)


def start(state: Path | str, tokens_file: Path, tokens: dict[str, str], *args: str) -> Server:
    """Start `rayon serve` on port 0 (any free one), its plan's clock moved only by the test (a later `--clock`
    in `args` wins); the server once it listens."""
    return launch(state, tokens, "--state", str(state), "--port", "0", "--tokens", str(tokens_file),
                  "--no-access-log", "--log-level", "warning", "--clock", "manual", *args)


def launch(state: Path | str, tokens: dict[str, str], *args: str, cwd: Path = ROOT) -> Server:
    """Start `rayon serve ARGS` (which must listen on port 0, as start's do); the server once it listens."""
    process = subprocess.Popen([str(RAYON), "serve", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stream = process.stderr
    threading.Thread(target=lambda: [*(lines.put(line) for line in stream), lines.put(END)], daemon=True).start()
    log: list[str] = []
    try:
        url = _wait_for_url(lines, log, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Server(url, state, tokens, process, log, lines)


def stop(server: Server) -> None:
    """End the server as an operator would (SIGTERM), or kill it if it does not end in 15 s."""
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def _wait_for_url(lines: queue.Queue[str], log: list[str], process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}: {''.join(log)}") from None
            continue
        if line == END:
            continue  # the server has exited: poll() says so at the next turn
        log.append(line)
        found = LISTENING.search(line)  # in a text line or a JSON one
        if found:
            return found[1]
    raise RuntimeError(f"the server did not start in {STARTUP_TIMEOUT}s: {''.join(log)}")


def descendants(pid: int) -> list[int]:
    """The processes a process has started, and theirs, from /proc (Linux)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:  # the thread or the process has ended
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def exists(pid: int) -> bool:
    """Whether a process of that id exists, running or a zombie not yet collected by its parent."""
    return Path(f"/proc/{pid}").exists()


def pinned(name: str, start: int, length: int, bundles: int, user: str | None = None) -> str:
    """RDL text of a reservation with one placement: `bundles` one-vcore bundles on [start, start+length)."""
    who = f" user={user}" if user else ""
    return (f"reservation {name}{who} {{ window(s={at(start)}, e={at(start + length)}, "
            f"atom(b={{vcores: 1}}, g={bundles}, h={bundles}, l={length}m, w={bundles * length}m)) }}")


def epoch_ms(step: int) -> int:
    return int(instant(step).timestamp() * 1000)


def yarn_body(rid: str | None, arrival: int, deadline: int, containers: int = 4, minutes: int = 10,
              memory: int = 1024, vcores: int = 1, gang: int = 1, name: str = "job", queue: str = "prod",
              interpreter: int = 1) -> dict[str, AnyType]:
    """A YARN submission body with one reservation request, times in plan steps."""
    body: dict[str, AnyType] = {"queue": queue, "reservation-definition": {
        "arrival": epoch_ms(arrival), "deadline": epoch_ms(deadline), "reservation-name": name, "priority": 0,
        "reservation-requests": {"reservation-request-interpreter": interpreter, "reservation-request": [
            {"capability": {"memory": memory, "vCores": vcores}, "num-containers": containers,
             "min-concurrency": gang, "duration": minutes * 60_000}]}}}
    if rid is not None:
        body["reservation-id"] = rid
    return body


def submit(client: httpx.Client, text: str, **params: AnyType) -> httpx.Response:
    return client.post("/v1/reservations", content=text, headers={"Content-Type": "text/plain"}, params=params)


def post_json(client: httpx.Client, path: str, data: AnyType) -> httpx.Response:
    return client.post(path, content=json.dumps(data), headers={"Content-Type": "application/json"})


def stored_violations(state: Path | str) -> list[str]:
    """What the independent plan checker finds wrong with the plan as stored (a series whole: with its past
    instances, in the history)."""
    with Store.open(state) as store:
        cluster, records, clock = store.cluster(), store.list(), store.clock()
        archived = archived_instances(store, {r.name: r for r in records})
        records = [replace(r, allocations=[*r.allocations, *archived.get(r.name, [])]) for r in records]
        decisions = [r.decision().to_json(clock) for r in records]
        return check_plan(cluster, [r.reservation() for r in records], decisions,
                          submitted={r.name: r.submitted for r in records}, rolled_to=store.now())


def snapshot(state: Path | str) -> tuple[list[AnyType], list[AnyType], bytes]:
    """Everything a failed request must leave as it was: records, the log, the plan's use."""
    with Store.open(state) as store:
        return store.list(), [(e.id, e.action, e.reservation) for e in store.log()], store.load_plan().used.tobytes()


# -- the concurrent load (tests/planner/api/test_concurrency.py and benchmarks/api.py) -----------------------

LOAD_STEPS = 24 * 60
LOAD_SHAPES = [(1, 1, 10, 40), (2, 2, 10, 40), (1, 4, 30, 120), (4, 4, 20, 80), (2, 8, 15, 240)]  # vcores, g, l, w


@dataclass(frozen=True)
class Load:
    """Each client thread's submissions (name, RDL text), and a one-day cluster they ask about 1.5 times of."""

    shares: list[list[tuple[str, str]]]
    cluster: str

    @classmethod
    def make(cls, threads: int, count: int, seed: int = 11) -> Load:
        made = [load_share(thread, count, seed) for thread in range(threads)]
        vcores = math.ceil(sum(asked for _, asked in made) / 1.5 / LOAD_STEPS)
        return cls([share for share, _ in made],
                   cluster_text({"vcores": vcores, "memory": f"{2 * vcores}GiB"}, steps=LOAD_STEPS))


def load_share(thread: int, count: int, seed: int) -> tuple[list[tuple[str, str]], int]:
    """One thread's `count` submissions (random shapes in random windows over the day) and their vcore-minutes."""
    rng = random.Random(seed * 1000 + thread)
    found, asked = [], 0
    for index in range(count):
        vcores, gang, length, work = rng.choice(LOAD_SHAPES)
        span = rng.choice([60, 120, 240])
        start = rng.randrange(0, LOAD_STEPS - span)
        name = f"t{thread}_{index}"
        atom = f"atom(b={{vcores: {vcores}, memory: {2 * vcores}GiB}}, g={gang}, h={2 * gang}, l={length}m, w={work}m)"
        found.append((name, f"reservation {name} {{ window(s={at(start)}, e={at(start + span)}, {atom}) }}"))
        asked += vcores * work
    return found, asked


def submit_shares(load: Load, server_of: Callable[[int], Server]) -> dict[str, bool]:
    """Every thread of the load submits its share at once (thread i as user `u{i}`, to `server_of(i)`), each answer
    a decision; whether each reservation was accepted, by name."""
    answers: dict[str, bool] = {}

    def run(thread: int) -> None:
        with server_of(thread).client(f"u{thread}") as client:
            for name, text in load.shares[thread]:
                answer = submit(client, text)
                assert answer.status_code in (200, 201), answer.text
                answers[name] = answer.json()["accepted"]

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(len(load.shares))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


PATIENCE = 120.0  # seconds a busy machine may take to do what a test waits for: a bound on liveness, not on speed


def eventually(condition: Callable[[], bool], failure: str, within: float = PATIENCE) -> None:
    """Wait for `condition` (what the server does, however long a busy machine makes it take, up to `within`)."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.1)


def clock_moves(state: Path | str) -> list[dict[str, AnyType] | None]:
    """The clock's moves in the plan's log."""
    with Store.open(state) as store:
        return [e.decision for e in store.log() if e.action == "advance" and e.reservation is None]


def now_of(state: Path | str) -> datetime:
    """The plan's clock."""
    with Store.open(state) as store:
        return store.now()
