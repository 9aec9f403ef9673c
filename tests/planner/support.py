"""Shared helpers of the planner tests: tiny clusters, step-indexed times, and planning with the checker.

Plain functions live here (not in conftest.py) so that hypothesis tests and brute-force
enumerators can import them directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any as AnyType

import numpy as np
import pytest

from planner.admission import Planner
from planner.agents.registry import AGENTS
from planner.core.check import check_plan
from rdl import units
from rdl.cluster import Cluster, parse_cluster
from rdl.syntax.parser import parse_text
from rdl.tree import Reservation

AGENT_NAMES: list[str] = list(AGENTS)

START = datetime(2026, 11, 23, tzinfo=UTC)
STEP = 60  # seconds: every test cluster uses one-minute steps


def at(step: int) -> str:
    """The ISO instant of a plan step (one-minute steps from START): `at(5)` → `2026-11-23T00:05:00Z`."""
    return units.format_instant(START + timedelta(seconds=step * STEP))


def instant(step: int) -> datetime:
    return START + timedelta(seconds=step * STEP)


def step_of(iso: str) -> int:
    """The plan step of an ISO instant (must lie on the grid)."""
    seconds = (units.parse_instant(iso) - START) / timedelta(seconds=1)
    assert seconds % STEP == 0, f"{iso} is off the one-minute grid"
    return int(seconds // STEP)


def _vector(values: Mapping[str, AnyType]) -> str:
    return "{" + ", ".join(f"{name}: {value}" for name, value in values.items()) + "}"


def cluster_text(capacity: Mapping[str, AnyType], steps: int,
                 changes: Sequence[tuple[int, Mapping[str, AnyType]]] = ()) -> str:
    """Cluster YAML: origin START, one-minute steps, `steps` steps, `capacity`, changes as (step, capacity)."""
    lines = [f"start: {at(0)}", "step: 1m", f"horizon: {steps}m", f"capacity: {_vector(capacity)}"]
    if changes:
        lines.append("changes:")
        lines += [f"  - {{at: {at(step)}, capacity: {_vector(values)}}}" for step, values in changes]
    return "\n".join(lines) + "\n"


def make_cluster(capacity: Mapping[str, AnyType], steps: int,
                 changes: Sequence[tuple[int, Mapping[str, AnyType]]] = ()) -> Cluster:
    """A tiny cluster through the real cluster-file parser."""
    return parse_cluster(cluster_text(capacity, steps, changes), "test-cluster.yaml")


def parse(text: str) -> list[Reservation]:
    return parse_text(text, "test.rdl")


def one(text: str) -> Reservation:
    (reservation,) = parse(text)
    return reservation


def pinned(name: str, start: int, length: int, bundles: int, resource: str = "vcores") -> str:
    """A reservation with exactly one placement: a gang of `bundles` unit bundles on [start, start+length)."""
    return (f"reservation {name} {{ window(s={at(start)}, e={at(start + length)}, "
            f"atom(b={{{resource}: 1}}, g={bundles}, h={bundles}, l={length}m, w={bundles * length}m)) }}")


@dataclass(frozen=True)
class Lease:
    """An allocation entry read back from decision JSON onto the step grid."""

    atom: str
    start: int
    end: int
    bundles: int
    instance: int = 0


@dataclass
class Run:
    """Reservations submitted one by one to a Planner with one agent, their decisions and the checker's verdict."""

    cluster: Cluster
    planner: Planner
    agent: str
    now: datetime | None = None
    reservations: list[Reservation] = field(default_factory=list)
    decisions: list[dict[str, AnyType]] = field(default_factory=list)

    def submit(self, rdl: str | Iterable[Reservation], dry_run: bool = False) -> list[dict[str, AnyType]]:
        """Submit every reservation of the text (or list), in order; returns their decision records."""
        batch = parse(rdl) if isinstance(rdl, str) else list(rdl)
        out = []
        for reservation in batch:
            decision = self.planner.submit(reservation, self.agent, dry_run=dry_run)
            record = decision.to_json(self.planner.plan.clock)
            out.append(record)
            if not dry_run:
                self.reservations.append(reservation)
                self.decisions.append(record)
        return out

    @property
    def violations(self) -> list[str]:
        return check_plan(self.cluster, self.reservations, self.decisions, submitted=self.now, now=self.now)

    def decision(self, name: str) -> dict[str, AnyType]:
        (found,) = [d for d in self.decisions if d["reservation"] == name]
        return found

    def accepted(self, name: str) -> bool:
        return bool(self.decision(name)["accepted"])

    def leases(self, name: str) -> list[Lease]:
        return leases_of(self.decision(name))

    @property
    def used(self) -> np.ndarray:
        return self.planner.plan.used


def leases_of(record: Mapping[str, AnyType]) -> list[Lease]:
    return [Lease(a["atom"], step_of(a["start"]), step_of(a["end"]), int(a["bundles"]), int(a.get("instance", 0)))
            for a in record.get("allocations", [])]


def run_plan(cluster: Cluster, rdl: str | Iterable[Reservation], agent: str, now: datetime | None = None) -> Run:
    """Plan reservations one by one on a fresh Planner; check `run.violations == []` afterwards."""
    run = Run(cluster, Planner(cluster, now=now), agent, now)
    run.submit(rdl)
    return run


def use_of(cluster: Cluster, records: Iterable[Mapping[str, AnyType]]) -> np.ndarray:
    """Resources × steps held by the accepted decisions, rebuilt from their JSON alone."""
    names = cluster.resource_names
    use = np.zeros((len(names), cluster.steps))
    for record in records:
        if not record["accepted"]:
            continue
        for entry in record["allocations"]:
            start, end = step_of(entry["start"]), step_of(entry["end"])
            for index, name in enumerate(names):
                use[index, start:end] += float(entry["resources"].get(name, 0))
    return use


GREEDY_AGENTS = frozenset({"gree", "gree-l"})


def xfail_greedy(request: pytest.FixtureRequest, agent: str, reason: str) -> None:
    """Mark this test a strict expected failure for the greedy agents only (others, such as MILP, must pass)."""
    if agent in GREEDY_AGENTS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{agent}: {reason}"))


class Ticks:
    """A clock for tests: each reading moves it on by `tick` seconds (0: it stands still), so that what an agent
    decides from its time limit depends on the work it did (how often it read the clock), not on how fast the
    machine is."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now, self.tick, self.readings = 0.0, tick, 0

    def __call__(self) -> float:
        now = self.now
        self.now += self.tick
        self.readings += 1
        return now


def numpy_kernels(patch: pytest.MonkeyPatch) -> None:
    """Every greedy kernel on its numpy path, whatever the window's length and whatever this process has compiled
    (pack.compiled_for): the reference the compiled kernels are held to."""
    from planner.agents.greedy import pack

    patch.setattr(pack, "COMPILED_FROM", 10**9)
    patch.setattr(pack, "LOADED_FROM", 10**9)
