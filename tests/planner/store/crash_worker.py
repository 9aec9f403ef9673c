"""The process tests/planner/store/test_crash.py kills: many plan-store operations in a loop, with a journal.

    python -m tests.planner.store.crash_worker STATE JOURNAL SEED TAG [--ops N] [--no-replan]
                                               [--kill-at K [--kill-in OP]]

Opens the store at STATE (initialised already), prints `ready` on standard output, then performs up
to N operations chosen by a `random.Random(f"{SEED}/{TAG}")`: submissions of generated reservations
(gangs, malleable atoms, orders, alternatives, recurring ones), re-submissions of rejected or
cancelled names, updates, cancellations, capacity changes, clock advances and short MILP
re-plannings. Every operation passes `actor=TAG-INDEX`, so the decision log says which operation
wrote each row. Before an operation the worker appends a `begin` line to JOURNAL (JSON lines), and
an `end` line with the answer once the store has returned it (or an `error` line, for a StoreError).

With `--kill-at K` the worker kills itself with SIGKILL at the K-th *kill point*: before and after
every SQL statement of the store's write transactions (from `BEGIN IMMEDIATE` on), before their
COMMIT, and after every store call returns (before its `end` line). With `--kill-in OP` too, only
the points of that kind of operation count (submit, update, cancel, capacity, advance, replan), and
that kind makes up about half of the operations. The point is journalled before the kill, so such
a kill is reproducible (up to the MILP's time limit). Without `--kill-at`, the parent kills the
worker from outside after a random delay.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any as AnyType
from typing import TextIO

import sqlalchemy as sa

from planner.store.facade import Store, StoreError
from planner.store.schema import WRITE_OPTION
from rdl import units
from rdl.syntax.parser import parse_text
from tests.planner.support import START, at, cluster_text

STEPS = 240  # one-minute steps
CLUSTER = cluster_text({"vcores": 16, "memory": "64GiB"}, steps=STEPS)
AGENTS = ("gree", "gree-l")
USERS = ("ann", "bob", "cy")
LAST_CLOCK = 100  # the clock is advanced no further than this step (then it stays put), so there is room to plan
REPLAN_SECONDS = 1.0
# What each operation is, for --kill-in (a re-submission is a submission).
ACTION = {"submit": "submit", "resubmit": "submit", "update": "update", "cancel": "cancel", "capacity": "capacity",
          "advance": "advance", "replan": "replan"}
# Operation weights: submissions most often, re-planning rarely (it takes a second or two).
WEIGHTS = {"submit": 40, "resubmit": 6, "update": 16, "cancel": 10, "capacity": 8, "advance": 4, "replan": 1}


def step_of(instant: datetime) -> int:
    return int((instant - START) / timedelta(minutes=1))


def reservation_text(rng: random.Random, name: str, now: int) -> str:
    """A random, well-formed reservation whose windows lie inside [now, STEPS)."""
    start = min(now + rng.randrange(0, 150), STEPS - 20)
    end = min(start + rng.randrange(15, 100), STEPS)
    head = f"reservation {name} user={rng.choice(USERS)} priority={rng.randrange(4)} value={rng.randrange(1, 9)}"
    kind = rng.choice(("gang", "gang", "malleable", "order", "any", "recurring"))
    if kind == "gang":
        gang, length = rng.choice((1, 2, 4, 8)), rng.choice((2, 5, 10))
        body = f"atom(b={{vcores: 1, memory: 2GiB}}, g={gang}, h={gang}, l={length}m, w={gang * length}m)"
    elif kind == "malleable":
        length, parallel = rng.choice((1, 2, 5)), rng.choice((2, 4, 8))
        body = f"atom(b={{vcores: 1}}, h={parallel}, l={length}m, w={length * rng.randrange(2, 13)}m)"
    elif kind == "order":
        body = ("order(prep: atom(b={vcores: 2, memory: 4GiB}, h=4, l=3m, w=12m), "
                f"run: atom(b={{vcores: 1}}, g=4, h=4, l={rng.choice((5, 10))}m, w=40m), gap=10m)")
    elif kind == "any":
        body = ("any(wide: atom(b={vcores: 2}, g=8, h=8, l=5m, w=40m), "
                "narrow: atom(b={vcores: 2}, g=2, h=2, l=20m, w=40m))")
    else:
        arrival = min(now + rng.randrange(0, 60), STEPS - 60)
        return (f"{head} arrival={at(arrival)} deadline=+30m every=1h "
                f"{{ atom(b={{vcores: 1}}, g=2, h=2, l=5m, w={rng.choice((10, 20))}m) }}")
    return f"{head} {{ window(s={at(start)}, e={at(end)}, {body}) }}"


def writing(connection: sa.Connection) -> bool:
    """Whether the connection is in one of the store's write transactions (which hold the writer lock)."""
    return bool(connection.get_execution_options().get(WRITE_OPTION))


class Worker:
    def __init__(self, store: Store, journal: TextIO, seed: int, tag: str, kill_at: int | None = None,
                 kill_in: str | None = None, replan: bool = True):
        self.store, self.journal, self.tag = store, journal, tag
        self.rng = random.Random(f"{seed}/{tag}")
        self.points, self.kill_at, self.kill_in = 0, kill_at, kill_in
        self.weights = dict(WEIGHTS)
        if kill_in is not None:  # the operation to be killed in makes up about half of the run
            self.weights[kill_in] = sum(WEIGHTS.values())
        if not replan:
            self.weights["replan"] = 0
        self.op: str | None = None
        if kill_at is not None:
            sa.event.listen(store.engine, "before_cursor_execute",
                            lambda c, _cur, statement, *_: writing(c) and self.point("before", statement))
            sa.event.listen(store.engine, "after_cursor_execute",
                            lambda c, _cur, statement, *_: writing(c) and self.point("after", statement))
            sa.event.listen(store.engine, "commit", lambda c: writing(c) and self.point("commit", "COMMIT"))

    def write(self, **entry: AnyType) -> None:
        entry["t"] = round(time.time(), 4)
        self.journal.write(json.dumps(entry) + "\n")
        self.journal.flush()

    def point(self, where: str, statement: str) -> None:
        """One kill point: dies here if it is the chosen one (counting only inside `kill_in` operations, if given)."""
        if self.kill_in is not None and ACTION.get(self.op or "") != self.kill_in:
            return
        self.points += 1
        if self.points == self.kill_at:
            text = " ".join(statement.split())[:90]
            self.write(kill=self.points, tag=self.tag, op=self.op, where=where, statement=text)
            os.kill(os.getpid(), signal.SIGKILL)

    def run(self, operations: int) -> None:
        for index in range(1, operations + 1):
            self.operate(f"{self.tag}-{index}")
        self.write(done=self.tag, points=self.points)

    def operate(self, actor: str) -> None:
        rng, store = self.rng, self.store
        now = step_of(store.now())
        accepted = sorted(store.load_plan().accepted)
        self.op = None  # reading the plan to choose: not part of any operation
        op = rng.choices(list(self.weights), list(self.weights.values()))[0]
        if op in ("update", "cancel") and not accepted:
            op = "submit"
        if op == "resubmit":
            again = [r.name for r in store.list() if r.state in ("rejected", "cancelled", "dropped")]
            if not again:
                op = "submit"
        agent = rng.choice(AGENTS)
        self.op = op
        entry: dict[str, AnyType] = {"actor": actor, "op": op}
        try:
            if op in ("submit", "resubmit"):
                name = actor.replace("-", "_") if op == "submit" else rng.choice(again)
                text = reservation_text(rng, name, now)
                self.write(begin=actor, op=op, name=name, agent=agent, text=text)
                decision = store.submit(parse_text(text, "<crash>")[0], agent, actor=actor)
                entry.update(name=name, accepted=decision.accepted)
            elif op == "update":
                name = rng.choice(accepted)
                text = reservation_text(rng, name, now)
                self.write(begin=actor, op=op, name=name, agent=agent, text=text)
                decision = store.update(name, parse_text(text, "<crash>")[0], agent, actor=actor)
                entry.update(name=name, accepted=decision.accepted)
            elif op == "cancel":
                name = rng.choice(accepted)
                self.write(begin=actor, op=op, name=name)
                store.cancel(name, actor=actor)
                entry.update(name=name, accepted=True)
            elif op == "capacity":
                when = min(now + rng.randrange(0, 200), STEPS - 1)
                capacity: dict[str, float | str] = {"vcores": rng.choice((6, 10, 16, 24))}
                if rng.random() < 0.3:
                    capacity["memory"] = rng.choice(("24GiB", "64GiB", "96GiB"))
                self.write(begin=actor, op=op, at=at(when), capacity=capacity)
                report = store.set_capacity(START + timedelta(minutes=when), capacity, actor=actor, agent=agent)
                entry.update(moved=sorted(report.adaptation.moved), dropped=sorted(report.adaptation.dropped),
                             series=sorted(name for name, _ in report.missed))  # instances dropped alone
            elif op == "advance":
                to = START + timedelta(minutes=max(now, min(now + rng.randint(0, 2), LAST_CLOCK)))  # may stay put
                self.write(begin=actor, op=op, to=units.format_instant(to))
                report = store.advance(to, actor=actor)
                entry.update(expired=sorted(report.expired),
                             series=sorted([name for name, _ in report.placed] + [m[0] for m in report.missed]))
            else:
                self.write(begin=actor, op=op)
                outcome = store.replan(actor=actor, time_limit=REPLAN_SECONDS)
                entry.update(moved=sorted(outcome.moved), status=outcome.status)
        except StoreError as error:
            self.point("returned", f"{op} failed")
            self.write(error=actor, code=error.code, message=str(error))
            return
        self.point("returned", op)
        self.write(end=actor, **entry)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="crash_worker")
    parser.add_argument("state")
    parser.add_argument("journal")
    parser.add_argument("seed", type=int)
    parser.add_argument("tag")
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--kill-in", choices=sorted(set(ACTION.values())))
    parser.add_argument("--no-replan", dest="replan", action="store_false",
                        help="never re-plan (a re-planning takes most of a second or two, so a kill from outside "
                             "lands in the first one started)")
    args = parser.parse_args(argv)
    with Store.open(args.state) as store, Path(args.journal).open("a") as journal:
        store.load_plan()  # the store opens and reads before the parent's clock starts
        print("ready", flush=True)
        Worker(store, journal, args.seed, args.tag, args.kill_at, args.kill_in, args.replan).run(args.ops)


if __name__ == "__main__":
    main(sys.argv[1:])
