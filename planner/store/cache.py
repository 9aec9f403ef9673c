"""The plan a Store last read, tagged with the plan version it is as of, and how it catches up with the rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from planner.admission import Planner
from planner.core.compile import Clock
from planner.core.plan import Accepted, Plan, window_cluster, window_offset
from planner.store import schema
from planner.store.axis import allocations_on_window, window_start
from planner.store.records import parse_stored
from planner.store.rendering import Instants
from rdl import units
from rdl.cluster import Cluster, parse_cluster


def plan_key(meta: dict[str, str]) -> tuple[str, str, str]:
    """What a submission's validation depends on: the plan, the version its cluster was last changed at, its clock."""
    return meta["plan_id"], meta["rebuild_version"], meta["now"]


@dataclass
class _Cached:
    """The plan as of `version` of the plan `plan_id`, with a Planner over it, and the `plan_key` of that version."""

    plan_id: str
    version: int
    planner: Planner
    key: tuple[str, str, str]


@dataclass(frozen=True)
class Known:
    """The cached plan as this Store last knew it, without a read: its plan and version, its key, and where the
    plan's window begins on the store's axis. Current unless another process wrote since (a write finds out)."""

    version: tuple[str, int]
    planner: Planner
    key: tuple[str, str, str]
    cluster: Cluster


class PlanCache:
    """The cached plan, cluster and formatted instants of one Store; not thread-safe (the Store's lock guards it)."""

    def __init__(self) -> None:
        self._cached: _Cached | None = None
        self._cluster: tuple[tuple[str, str], Cluster] | None = None
        self._instants: Instants | None = None

    @property
    def empty(self) -> bool:
        """Whether no plan is cached (the next read builds it from every row)."""
        return self._cached is None

    def forget(self) -> None:
        """Drop the cached plan and cluster: the plan they belong to is gone."""
        self._cached, self._cluster = None, None

    def rebuilt(self, meta: dict[str, str], planner: Planner, cluster: Cluster) -> None:
        """Cache a plan and cluster just committed (`meta`: as that transaction left it), a change that rebuilt the
        plan's base."""
        self._cached = _Cached(meta["plan_id"], int(meta["plan_version"]), planner, plan_key(meta))
        self._cluster = ((meta["plan_id"], meta["rebuild_version"]), cluster)

    def known(self) -> Known | None:
        """The cached plan with its key and cluster, read from nothing; None when either is not cached."""
        cached, cluster = self._cached, self._cluster
        if cached is None or cluster is None or cluster[0] != (cached.plan_id, cached.key[1]):
            return None
        return Known((cached.plan_id, cached.version), cached.planner, cached.key, cluster[1])

    def planner(self, connection: Connection, meta: dict[str, str]) -> Planner:
        """A Planner over the plan as of this transaction: the cached one brought up to date, or a fresh one."""
        version, cached = int(meta["plan_version"]), self._cached
        if cached is None or cached.plan_id != meta["plan_id"] or not \
                int(meta["rebuild_version"]) <= cached.version <= version:
            cached = _Cached(meta["plan_id"], version, self._build(connection, meta), plan_key(meta))
        elif cached.version < version:
            self._cached = None  # a catch-up that fails halfway leaves no half-updated plan behind
            plan = cached.planner.plan
            _catch_up(connection, plan, cached.version, window_start(plan, self.cluster(connection, meta)))
            cached.version, cached.key = version, plan_key(meta)
        self._cached = cached
        return cached.planner

    def committed(self, plan_id: str, version: int, planner: Planner, key: tuple[str, str, str]) -> None:
        """Cache a planner whose plan is the store's as of `version`, just committed by this Store (same base, so
        the same `key` as the plan it was decided on)."""
        self._cached = _Cached(plan_id, version, planner, key)

    def advance(self, version: int, change: Callable[[Planner], object]) -> None:
        """Apply a just-committed change to the cached plan if it was current; otherwise a later read catches up."""
        cached = self._cached
        if cached is None or cached.version != version - 1:
            return
        try:
            change(cached.planner)
            cached.version = version
        except Exception:
            self._cached = None
            raise

    def cluster(self, connection: Connection, meta: dict[str, str]) -> Cluster:
        """The stored cluster, parsed once per plan (and again only when its base is rebuilt)."""
        key = (meta["plan_id"], meta["rebuild_version"])
        if self._cluster is None or self._cluster[0] != key:
            row = connection.execute(sa.select(schema.cluster.c.yaml, schema.cluster.c.source)).one()
            self._cluster = (key, parse_cluster(row.yaml, row.source))
        return self._cluster[1]

    def instants(self, clock: Clock) -> Instants:
        """The memo of formatted instants for this plan's clock."""
        if self._instants is None or self._instants.clock != clock:
            self._instants = Instants(clock)
        return self._instants

    def _build(self, connection: Connection, meta: dict[str, str]) -> Planner:
        """The plan from scratch: its window at the stored clock, then every accepted reservation with its leases."""
        cluster, now = self.cluster(connection, meta), units.read_instant(meta["now"])
        planner = Planner(window_cluster(cluster, now), now)
        _catch_up(connection, planner.plan, None, window_offset(cluster, now))
        return planner


def swapping(moved: dict[str, Accepted]) -> Callable[[Planner], None]:
    """A change to a cached planner: these reservations, with their new leases, instead of their old selves."""

    def swap(planner: Planner) -> None:
        for name, accepted in moved.items():
            planner.plan.remove(name)
            planner.plan.add(accepted)

    return swap


def _catch_up(connection: Connection, plan: Plan, since: int | None, window: int) -> None:
    """Re-apply every row changed after version `since` (all rows when None); applying twice is harmless.

    `window`: the step of the store's axis at which the plan's window begins."""
    table = schema.reservations
    changed = [table.c.version > since] if since is not None else [table.c.state == "accepted"]
    rows = connection.execute(sa.select(table.c.id, table.c.name, table.c.rdl, table.c.submitted,
                                        table.c.state).where(*changed).order_by(table.c.id)).all()
    held = allocations_on_window(
        schema.read_leases(connection, sa.select(table.c.id).where(table.c.state == "accepted", *changed)), window)
    for row in rows:
        if row.name in plan.accepted:
            plan.remove(row.name)
        if row.state == "accepted":
            plan.add(Accepted(parse_stored(row.rdl, row.name), row.submitted, held.get(row.id, [])))
