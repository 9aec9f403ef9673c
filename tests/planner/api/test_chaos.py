"""Chaos: clients submit over HTTP while their servers are killed (SIGKILL) and restarted at random moments.

Four client threads, each its own user, submit a share of an over-full day: two in RDL (`POST /v1/reservations`,
each reservation once), two in YARN's dialect (an id from `new-reservation`, then `submit`, retried with the
same id and definition until an answer arrives, as YARN's clients do). A killer thread kills a server with
SIGKILL at seeded random moments (every 1 to 12 answers the servers give, so that a busy machine sees as many
kills per decision as an idle one) and starts it again. On SQLite: one server over one file. On PostgreSQL: two
servers over one plan, the killer picking either, the clients spread over both. With processes (issue #29 found
the worst of its 503s there): servers of `--workers 2` (and, on PostgreSQL, a second one of `--decider process`),
the killer picking a server, one of its workers or its deciding process; a server replaces a killed worker or
decider itself, a killed server is started again.

A decision is *acknowledged* when its answer arrived; an answer that did not (connection refused or reset, the
server gone) says nothing, so the reservation may be stored or not. Afterwards:

- the store holds together (tests/planner/store/consistency.py: the independent plan checker, `load_plan`
  against the records' leases, the decision log replayed from the start, SQLite's own checks);
- every acknowledged decision is stored whole: the same state and exactly the answered leases;
- every unacknowledged one is stored whole or not at all (the checks above see half-written ones).

Slow tier: `pytest -m slow tests/planner/api/test_chaos.py` (a few minutes). RAYON_CHAOS_SEED=N replays a
run; every failure names its seed. At full strength: `RAYON_CHAOS_ROUNDS=R` storms of each kind (seeds SEED,
SEED+10, ...), `RAYON_CHAOS_PER_CLIENT=N` reservations per client (60, the default, or more); each storm prints its
kills and decisions (`pytest -s`). PostgreSQL's storms need RAYON_TEST_POSTGRES_URL (.ci/run starts one).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any as AnyType

import httpx
import pytest

from planner.store.facade import Store
from rdl.syntax.parser import parse_text
from tests.planner.api.support import (
    CLUSTER,
    Load,
    Server,
    descendants,
    make_tokens,
    pinned,
    post_json,
    start,
    stop,
    submit,
    yarn_body,
)
from tests.planner.api.test_workers import command, decider_lock
from tests.planner.store.consistency import allocations_json, store_problems

SEED = int(os.environ.get("RAYON_CHAOS_SEED", "20261124"))
ROUNDS = int(os.environ.get("RAYON_CHAOS_ROUNDS", "1"))
CLIENTS = 4
PER_CLIENT = int(os.environ.get("RAYON_CHAOS_PER_CLIENT", "60"))
KILLS = 4  # at least this many kills land while the clients run (the killer goes on until they end)
# Answers the servers give between two kills: the killer follows the servers' progress, not the wall clock, so that
# a busy machine (where a server takes many seconds to start) sees as many kills per decision as an idle one.
BETWEEN = (1, 12)
LAND = 0.3  # at most this many seconds more before a kill: it lands inside a request as often as between two
YARN = "/ws/v1/cluster/reservation"


@dataclass
class Cluster:
    """The servers over one store, restarted under the clients' feet; what was answered and what was not."""

    state: Path | str
    tokens_file: Path
    tokens: dict[str, str]
    servers: list[Server]
    lock: threading.Lock = field(default_factory=threading.Lock)
    answered: dict[str, dict[str, AnyType]] = field(default_factory=dict)  # name: the decision answered
    unanswered: set[str] = field(default_factory=set)  # sent, no answer arrived
    failures: list[str] = field(default_factory=list)
    kills: int = 0
    responses: int = 0  # answers of any kind the servers gave
    arguments: list[tuple[str, ...]] = field(default_factory=list)  # each server's own flags (`--workers 2`)
    killed: dict[str, int] = field(default_factory=dict)  # kills by what was killed: server, worker, decider

    def url(self, index: int) -> str:
        with self.lock:
            return self.servers[index % len(self.servers)].url

    def kill_and_restart(self, index: int) -> None:
        with self.lock:
            victim = self.servers[index]
        victim.process.kill()
        victim.process.wait()
        self.count("server")
        restarted = start(self.state, self.tokens_file, self.tokens, *self.flags(index))
        with self.lock:
            self.servers[index] = restarted

    def kill_a_process_of(self, index: int, kind: str) -> bool:
        """SIGKILL the index'th server's deciding process (whichever holds the decider's lock: while a new decider
        starts, a worker decides in its place), or one of its other workers; False when it has none now."""
        with self.lock:
            server = self.servers[index]
        pids = [pid for pid in descendants(server.process.pid) if b"spawn_main" in command(pid)]
        holders = lock_holders(pids)
        decider = next((pid for pid in pids if pid in holders), None)
        if decider is None:  # being started again; and without it, a worker is not told apart
            return False
        victims = [decider] if kind == "decider" else [pid for pid in pids if pid != decider]
        if not victims:
            return False
        try:
            os.kill(victims[self.kills % len(victims)], signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.count(kind)
        return True

    def count(self, kind: str) -> None:
        self.kills += 1
        self.killed[kind] = self.killed.get(kind, 0) + 1

    def flags(self, index: int) -> tuple[str, ...]:
        return self.arguments[index] if self.arguments else ()

    def client(self, user: str, index: int) -> httpx.Client:
        return httpx.Client(base_url=self.url(index), headers={"Authorization": f"Bearer {self.tokens[user]}"},
                            timeout=30.0)




@pytest.fixture
def load() -> Load:
    if PER_CLIENT < 60:  # the cluster is sized to the load: a smaller one cannot hold its largest gangs at all
        pytest.fail(f"RAYON_CHAOS_PER_CLIENT={PER_CLIENT}: give 60 or more (the cluster is sized to the load)")
    return Load.make(CLIENTS, PER_CLIENT, seed=SEED % 1000)


def lock_holders(pids: list[int]) -> set[int]:
    """Which of these processes hold the deciding process's lock now (at most one: the decider)."""
    for pid in pids:
        try:
            lock = decider_lock(pid)
            inode = str(lock.stat().st_ino)
        except (OSError, KeyError):  # a process that has gone, or that was not given the folder
            continue
        holders = set()
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == inode:
                holders.add(int(fields[4]))
        return holders
    return set()


def started(state: Path | str, load: Load, tmp_path: Path, servers: list[tuple[str, ...]]) -> Iterator[Cluster]:
    """A cluster of one server per entry of `servers` (its flags), over a fresh plan."""
    with Store.open(state) as store:
        store.init(load.cluster, "cluster.yaml", force=True)
    tokens_file = tmp_path / "tokens.yaml"
    tokens = make_tokens(tokens_file, {f"u{client}": "user" for client in range(CLIENTS)})
    cluster = Cluster(state, tokens_file, tokens, [], arguments=servers)
    try:
        for flags in servers:
            cluster.servers.append(start(state, tokens_file, tokens, *flags))
        yield cluster
    finally:
        for server in cluster.servers:
            stop(server)


INLINE: tuple[str, ...] = ()
WORKERS = ("--workers", "2")  # two workers and a deciding process of their own
DECIDER = ("--decider", "process")  # one worker and a deciding process


@pytest.fixture
def on_sqlite(tmp_path: Path, load: Load) -> Iterator[Cluster]:
    yield from started(tmp_path / "plan.db", load, tmp_path, [INLINE])


@pytest.fixture
def on_sqlite_with_processes(tmp_path: Path, load: Load) -> Iterator[Cluster]:
    yield from started(tmp_path / "plan.db", load, tmp_path, [WORKERS])


@pytest.fixture
def on_postgres(postgres: str, tmp_path: Path, load: Load) -> Iterator[Cluster]:
    yield from started(postgres, load, tmp_path, [INLINE, INLINE])


@pytest.fixture
def on_postgres_with_processes(postgres: str, tmp_path: Path, load: Load) -> Iterator[Cluster]:
    yield from started(postgres, load, tmp_path, [WORKERS, DECIDER])


# -- the clients ----------------------------------------------------------------------------------------------


def attempt(cluster: Cluster, index: int, user: str, send: Callable[[httpx.Client], httpx.Response]) -> \
        httpx.Response | None:
    """One request to the index'th server; None if no answer arrived (the server was killed), after waiting
    until a server answers again (so that the clients keep loading the servers rather than running dry)."""
    try:
        with cluster.client(user, index) as client:
            answer = send(client)
        with cluster.lock:
            cluster.responses += 1
        return answer
    except httpx.TransportError:
        await_a_server(cluster, index)
        return None


def await_a_server(cluster: Cluster, index: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{cluster.url(index)}/v1/ready", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)


def rdl_client(cluster: Cluster, load: Load, client: int) -> None:
    """Each reservation sent once: an answer is acknowledged, a lost one is left to the store."""
    user = f"u{client}"
    for number, (name, text) in enumerate(load.shares[client]):
        answer = attempt(cluster, client + number, user, partial(submit, text=text))
        if answer is None or answer.status_code == 503:
            cluster.unanswered.add(name)
        elif answer.status_code in (200, 201):
            cluster.answered[name] = answer.json()
        else:
            cluster.failures.append(f"{name}: HTTP {answer.status_code} {answer.text[:300]}")


def yarn_client(cluster: Cluster, load: Load, client: int, rng: random.Random) -> None:
    """Each reservation given an id, then submitted with that id until an answer arrives."""
    user = f"u{client}"
    for number in range(len(load.shares[client])):
        rid = None
        while rid is None:
            answer = attempt(cluster, client + number, user, lambda c: c.post(f"{YARN}/new-reservation"))
            if answer is not None and answer.status_code == 200:
                rid = str(answer.json()["reservation-id"])
        arrival = rng.randrange(0, 20 * 60)
        body = yarn_body(rid, arrival, arrival + rng.choice([60, 120, 240]), containers=rng.choice([2, 4, 8]),
                         minutes=rng.choice([10, 20, 30]), memory=1024, vcores=1, gang=rng.choice([1, 2]),
                         name=f"y{client}_{number}")
        tries = 0
        while True:
            tries += 1
            send = partial(post_json, path=f"{YARN}/submit", data=body)
            answer = attempt(cluster, client + number + tries, user, send)
            if answer is not None and answer.status_code in (202, 400) and "decision" in answer.json():
                cluster.answered[rid] = answer.json()["decision"]
                break
            if answer is not None and answer.status_code != 503:
                cluster.failures.append(f"{rid}: HTTP {answer.status_code} {answer.text[:300]}")
                break
            if tries > 200:
                cluster.failures.append(f"{rid}: no answer in 200 tries")
                break


def killer(cluster: Cluster, rng: random.Random, running: threading.Event) -> None:
    """Kill a server (and start it again), or, where servers run processes, one of its workers or its decider (if
    it has none at the moment, being still at its start, nobody is killed this turn)."""
    while running.is_set():
        target = cluster.responses + rng.randint(*BETWEEN)
        while running.is_set() and cluster.responses < target:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, LAND))
        if not running.is_set():
            break
        index = rng.randrange(len(cluster.servers))
        kind = rng.choice(("server", "worker", "decider")) if cluster.flags(index) else "server"
        if kind == "server":
            cluster.kill_and_restart(index)
        else:
            cluster.kill_a_process_of(index, kind)


def storm(cluster: Cluster, load: Load, seed: int) -> None:
    rng = random.Random(seed)
    running = threading.Event()
    running.set()
    clients = [threading.Thread(target=rdl_client, args=(cluster, load, client)) for client in range(2)]
    clients += [threading.Thread(target=yarn_client, args=(cluster, load, client, random.Random(seed + client)))
                for client in range(2, CLIENTS)]
    chaos = threading.Thread(target=killer, args=(cluster, rng, running))
    chaos.start()
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    running.clear()
    chaos.join()


# -- afterwards -------------------------------------------------------------------------------------------------


def acknowledged_problems(cluster: Cluster) -> list[str]:
    """Every answered decision is in the store as answered: the same state, exactly the answered leases."""
    problems = []
    with Store.open(cluster.state) as store:
        records = {record.name: record for record in store.list()}
        clock = store.clock()
    for name, decision in sorted(cluster.answered.items()):
        record = records.get(name)
        if record is None:
            problems.append(f"`{name}` was answered ({'accepted' if decision['accepted'] else 'rejected'}) "
                            "but is not stored")
        elif decision["accepted"] != (record.state == "accepted"):
            problems.append(f"`{name}` was answered accepted={decision['accepted']} but is stored {record.state}")
        elif allocations_json(decision.get("allocations", []), clock) != allocations_json(record.allocations, clock):
            problems.append(f"`{name}` is stored with other leases than it was answered with")
    return problems


def run_chaos(cluster: Cluster, load: Load, seed: int) -> None:
    storm(cluster, load, seed)
    where = f"(seed {seed}: RAYON_CHAOS_SEED={seed} pytest -m slow {__file__})"
    assert not cluster.failures, f"{where}: {cluster.failures[:5]}"
    assert cluster.kills >= KILLS, f"{where}: only {cluster.kills} kills landed"
    accepted = sum(1 for decision in cluster.answered.values() if decision["accepted"])
    assert 0 < accepted < len(cluster.answered), f"{where}: the load should be over capacity"
    with Store.open(cluster.state) as store:
        landed = len(cluster.unanswered & {record.name for record in store.list()})
    problems = store_problems(cluster.state) + acknowledged_problems(cluster)
    killed = ", ".join(f"{kind} {count}" for kind, count in sorted(cluster.killed.items()))
    print(f"\nchaos seed {seed}: {cluster.kills} kills ({killed}); {len(cluster.answered)} decisions answered "
          f"({accepted} accepted), {len(cluster.unanswered)} submissions unanswered ({landed} of them stored); "
          f"{len(problems)} problems")
    assert not problems, f"{where}: " + "\n".join(problems[:20])


def test_the_checks_see_an_acknowledged_decision_lost_or_changed(tmp_path: Path) -> None:
    """Not slow: the checks of the chaos test are not vacuous."""
    state = tmp_path / "plan.db"
    with Store.open(state) as store:
        store.init(CLUSTER, "cluster.yaml")
        kept = store.submit(parse_text(pinned("kept", 0, 30, 2))[0]).to_json(store.clock())
    cluster = Cluster(state, tmp_path / "tokens.yaml", {}, [], answered={"kept": kept})
    assert acknowledged_problems(cluster) == []
    cluster.answered["lost"] = kept
    changed = dict(kept, allocations=[dict(kept["allocations"][0], start=kept["allocations"][0]["end"])])
    cluster.answered["kept"] = changed
    problems = acknowledged_problems(cluster)
    assert any("`lost` was answered (accepted) but is not stored" in p for p in problems)
    assert any("`kept` is stored with other leases" in p for p in problems)


STORMS = [pytest.param(round, id=f"round{round}") for round in range(ROUNDS)]


@pytest.mark.slow
@pytest.mark.parametrize("storm_round", STORMS)
def test_sigkill_of_a_sqlite_server_under_load_loses_no_acknowledged_decision(on_sqlite: Cluster, load: Load,
                                                                                 storm_round: int) -> None:
    run_chaos(on_sqlite, load, SEED + 10 * storm_round)


@pytest.mark.slow
@pytest.mark.parametrize("storm_round", STORMS)
def test_sigkill_of_a_sqlite_server_its_workers_or_its_decider_loses_no_acknowledged_decision(
        on_sqlite_with_processes: Cluster, load: Load, storm_round: int) -> None:
    run_chaos(on_sqlite_with_processes, load, SEED + 10 * storm_round + 2)


@pytest.mark.slow
@pytest.mark.parametrize("storm_round", STORMS)
def test_sigkill_of_either_of_two_postgresql_servers_loses_no_acknowledged_decision(on_postgres: Cluster, load: Load,
                                                                                    storm_round: int) -> None:
    run_chaos(on_postgres, load, SEED + 10 * storm_round + 1)


@pytest.mark.slow
@pytest.mark.parametrize("storm_round", STORMS)
def test_sigkill_of_postgresql_servers_their_workers_or_deciders_loses_no_acknowledged_decision(
        on_postgres_with_processes: Cluster, load: Load, storm_round: int) -> None:
    run_chaos(on_postgres_with_processes, load, SEED + 10 * storm_round + 3)
