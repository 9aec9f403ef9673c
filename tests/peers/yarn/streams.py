"""Seeded streams of YARN-shaped reservations, with the cluster each is planned on, for YARN's agents and ours.

Every stream is a `Stream` (agent_harness): YARN REST bodies and the trees read back from them, so both sides
plan exactly the same reservations. Arrivals are spread over the horizon and each stream is submitted in arrival
order, as an online planner sees it.

- `yarn_shaped`: what a YARN user writes: one to four requests under R_ANY, R_ALL, R_ORDER or R_ORDER_NO_GAP,
  containers of a few MB/vcore sizes in gangs of 1-8, durations in seconds, on a plan of one-second steps;
- `tight`: windows at most 1.5x the least time the reservation needs (one-minute steps);
- `gangs`: one gang-scheduled request each, gangs of 8-64 containers held together for 10 minutes to 2 hours;
- `mixed_week` (benchmarks/admission.py's week, in the benchmark): made YARN-shaped by `yarn_shaped_copy`.

`at_step` moves any of them to another step (the resolution sweep of benchmarks/peers/yarn_agents.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from rdl import parse_cluster, units
from rdl.cluster import Cluster
from rdl.errors import RDLErrors
from rdl.forms.yarn import from_yarn
from rdl.forms.yarn_body import EPOCH, R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP
from rdl.tree import Atom, Expr, Reservation, Window
from tests.peers.yarn.agent_harness import Stream

START = "2026-11-23T00:00:00Z"
SIZES = ((1024, 1), (2048, 1), (4096, 2), (8192, 4))  # (MB, vcores) of one container


def _cluster(step: str, horizon: str, vcores: int) -> Cluster:
    return parse_cluster(f"start: {START}\nstep: {step}\nhorizon: {horizon}\n"
                         f"capacity: {{memory: {vcores * 2048}, vcores: {vcores}}}\n", "stream-cluster.yaml")


def at_step(cluster: Cluster, stream: Stream, step: str) -> tuple[Cluster, Stream]:
    """The stream on its cluster planned at another step (`10s`, `1m`): the same start, horizon and capacity, and
    each reservation rounded to the new steps as our compiler reads it (arrival up, deadline down, each request's
    duration up), so that YARN's agents, which plan whatever milliseconds they are given, are asked the same (GREE,
    the same decisions; GREE-L splits an order's window by its stages' work as written, so its split may move). A
    reservation whose rounded window is shorter than it needs is left out: no placement on the new steps holds it
    (our planner refuses it) and YARN's validator refuses the rounded body before any agent sees it."""
    moved = _cluster(step, units.format_duration(cluster.horizon), int(cluster.capacity["vcores"]))
    if (moved.start, moved.capacity, moved.horizon) != (cluster.start, cluster.capacity, cluster.horizon):
        raise ValueError("at_step moves the streams' own clusters only (start, horizon, 2 GiB per vcore)")
    origin, step_ms = round((moved.start - EPOCH) / timedelta(milliseconds=1)), moved.step * 1000
    bodies, trees, users, values = [], [], [], []
    for body, tree, user, value in zip(stream.bodies, stream.reservations, stream.users, stream.values, strict=True):
        rounded = _rounded(body, origin, step_ms)
        try:
            trees.append(tree if rounded == body else from_yarn(rounded))  # an aligned one stays the tree it was
        except RDLErrors:
            continue  # its window holds it on no whole steps
        bodies.append(rounded)
        users.append(user)
        values.append(value)
    return moved, Stream(tuple(bodies), tuple(trees), tuple(users), tuple(values))


def _rounded(body: dict[str, Any], origin: int, step_ms: int) -> dict[str, Any]:
    """A YARN submission body with its window rounded inward and its durations up to whole steps from `origin`."""
    definition = body["reservation-definition"]
    requests = definition["reservation-requests"]
    return {**body, "reservation-definition": {
        **definition,
        "arrival": origin + -(-(definition["arrival"] - origin) // step_ms) * step_ms,
        "deadline": origin + (definition["deadline"] - origin) // step_ms * step_ms,
        "reservation-requests": {**requests, "reservation-request": [
            {**request, "duration": -(-request["duration"] // step_ms) * step_ms}
            for request in requests["reservation-request"]]}}}


def _request(rng: random.Random, gangs: tuple[int, ...], seconds: tuple[int, int]) -> dict[str, object]:
    memory, vcores = rng.choice(SIZES)
    gang = rng.choice(gangs)
    return {"capability": {"memory": memory, "vCores": vcores}, "num-containers": gang * rng.randint(1, 8),
            "min-concurrency": gang, "duration": rng.randint(*seconds) * 1000}


def _body(name: str, arrival_ms: int, deadline_ms: int, interpreter: int,
          requests: list[dict[str, object]]) -> dict[str, object]:
    return {"queue": "dedicated", "reservation-definition": {
        "arrival": arrival_ms, "deadline": deadline_ms, "reservation-name": name, "priority": 0,
        "recurrence-expression": "0",
        "reservation-requests": {"reservation-request-interpreter": interpreter, "reservation-request": requests}}}


def _least_ms(interpreter: int, requests: list[dict[str, object]]) -> int:
    """The shortest window that could hold the reservation: YARN's own rule (ReservationInputValidator)."""
    durations = [int(r["duration"]) for r in requests]  # type: ignore[call-overload]
    if interpreter == R_ANY:
        return min(durations)
    return max(durations) if interpreter == R_ALL else sum(durations)


def _timed(cluster: Cluster, rng: random.Random, count: int,
           draw: Callable[[random.Random], tuple[int, list[dict[str, object]], float]]) -> Stream:
    """`count` reservations drawn by `draw` (interpreter, requests, slack), arriving in order over the horizon."""
    origin = round((cluster.start - EPOCH) / timedelta(milliseconds=1))
    step_ms, horizon_ms = cluster.step * 1000, cluster.steps * cluster.step * 1000
    drawn = []
    for index in range(count):
        interpreter, requests, slack = draw(rng)
        least = _least_ms(interpreter, requests)
        length = -(-int(least * slack) // step_ms) * step_ms
        arrival = rng.randrange(0, max(step_ms, horizon_ms - length), step_ms)
        drawn.append((arrival, index, interpreter, requests, length))
    drawn.sort(key=lambda d: (d[0], d[1]))
    bodies = [_body(f"r{index}", origin + arrival, origin + arrival + length, interpreter, requests)
              for arrival, index, interpreter, requests, length in drawn]
    return Stream.of_bodies(bodies)


def yarn_shaped(count: int = 300, seed: int = 11) -> tuple[Cluster, Stream]:
    """YARN-shaped reservations on a 12-hour plan of one-second steps (256 vcores, 512 GiB)."""
    rng = random.Random(seed)

    def draw(rng: random.Random) -> tuple[int, list[dict[str, object]], float]:
        interpreter = rng.choice((R_ANY, R_ALL, R_ORDER, R_ORDER_NO_GAP))
        requests = [_request(rng, (1, 1, 2, 4, 8), (30, 1800)) for _ in range(rng.randint(1, 4))]
        return interpreter, requests, rng.uniform(1.2, 4.0)

    cluster = _cluster("1s", "12h", 256)
    return cluster, _timed(cluster, rng, count, draw)


def tight(count: int = 300, seed: int = 12) -> tuple[Cluster, Stream]:
    """Windows 1.0-1.5x the least the reservation needs, on a one-day plan of one-minute steps."""
    rng = random.Random(seed)

    def draw(rng: random.Random) -> tuple[int, list[dict[str, object]], float]:
        interpreter = rng.choice((R_ALL, R_ALL, R_ORDER, R_ORDER_NO_GAP))
        requests = [_request(rng, (1, 2, 4), (5 * 60, 90 * 60)) for _ in range(rng.randint(1, 3))]
        for request in requests:  # whole minutes, so that `tight` means tight on this plan's steps too
            request["duration"] = -(-int(request["duration"]) // 60_000) * 60_000  # type: ignore[call-overload]
        return interpreter, requests, rng.uniform(1.0, 1.5)

    cluster = _cluster("1m", "1d", 128)
    return cluster, _timed(cluster, rng, count, draw)


def gangs(count: int = 200, seed: int = 13) -> tuple[Cluster, Stream]:
    """Gangs of 8-64 containers held together, windows 1.5-4x the gang's duration, one-day plan of minutes."""
    rng = random.Random(seed)

    def draw(rng: random.Random) -> tuple[int, list[dict[str, object]], float]:
        memory, vcores = rng.choice(SIZES)
        gang = rng.choice((8, 16, 32, 64))
        request = {"capability": {"memory": memory, "vCores": vcores}, "num-containers": gang * rng.randint(1, 3),
                   "min-concurrency": gang, "duration": rng.choice((10, 30, 60, 120)) * 60_000}
        return R_ALL, [request], rng.uniform(1.5, 4.0)

    cluster = _cluster("1m", "1d", 256)
    return cluster, _timed(cluster, rng, count, draw)


def yarn_shaped_copy(reservation: Reservation) -> Reservation:
    """The reservation with what YARN cannot say taken out: each atom's parallelism cap `h` (a YARN request runs
    as many containers at once as fit), and a queue."""
    return replace(reservation, body=_uncapped(reservation.body), queue=reservation.queue or "dedicated")


def _uncapped(node: Expr) -> Expr:
    if isinstance(node, Atom):
        return replace(node, parallelism=None)
    if isinstance(node, Window):
        return replace(node, child=_uncapped(node.child))
    return replace(node, children=tuple(_uncapped(child) for child in node.children))  # type: ignore[call-arg]
