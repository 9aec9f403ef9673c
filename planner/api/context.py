"""What every route shares (the store, the tokens, the jobs) and the dependencies that hand it out.

Routes get the service and the caller through FastAPI dependencies; the caller comes from the
`Authorization: Bearer TOKEN` header: no token or an unknown one answers 401, a user acting on
another's reservation 403 (`Principal.may_act_for`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from planner.api.auth import Principal, TokenRegistry, utcnow
from planner.api.errors import ApiError
from planner.api.jobs import Jobs
from planner.api.metrics import Metrics
from planner.core.compile import Clock
from planner.store.facade import Store, plan_key
from planner.store.records import Owner
from planner.store.rendering import Instants
from rdl import units
from rdl.cluster import Cluster
from rdl.errors import did_you_mean

bearer = HTTPBearer(auto_error=False, description="A token made with `rayon token USER`.")
CHALLENGE = 'Bearer realm="rayon"'


@dataclass(frozen=True)
class View:
    """What one request sees of the plan, read in one snapshot: its clock and cluster, and a reservation's owner."""

    now: datetime
    cluster: Cluster
    instants: Instants  # formatted plan steps (and the plan's clock, `instants.clock`)
    owner: Owner | None


@dataclass
class Service:
    """The server's state: the store it serves, who may call, long work, its metrics, and the write lock."""

    store: Store
    target: str  # the store's path or URL, for worker processes (Store.where hides a URL's password)
    tokens: TokenRegistry
    jobs: Jobs
    metrics: Metrics = field(default_factory=Metrics)
    # Held from an ownership check to the write it guards (updates, cancels), so that the view answered with is
    # the one written to; the store checks the owner again inside the write (`owner=mine(who)`), which holds
    # across servers on one PostgreSQL plan too. Submissions, native and YARN's, take no lock: they are batched
    # by the store (group commit), which checks their names' owners inside the write.
    writes: threading.Lock = field(default_factory=threading.Lock)
    clock_stuck: Callable[[], str | None] = lambda: None  # why the service's clock cannot move, if it cannot
    _cluster: tuple[tuple[str, str], Cluster, Instants] | None = None

    def close(self) -> None:
        """End the jobs' workers and release the store (again: nothing more)."""
        self.jobs.close()
        self.store.close()

    def view(self, name: str | None = None) -> View:
        """The plan's clock, its cluster (parsed again only when it changed), and the named reservation's owner."""
        meta, owner = self.store.meta_and_owner(name)
        return self._view(meta, owner)

    def recent_view(self, fresh: bool = False) -> tuple[View, tuple[str, str, str]]:
        """The plan as this server's store last read it, without reading it again (no owner; `fresh`: read now),
        and its plan key: what a submission is checked against before its batch decides it (`Store.submit`'s
        `validated_on`)."""
        meta = self.store.meta() if fresh else self.store.recent_meta()
        return self._view(meta, None), plan_key(meta)

    def recent_view_known(self) -> tuple[View, tuple[str, str, str]] | None:
        """`recent_view()` when it needs no read of the store (this server has read the plan and its cluster):
        what a coroutine may call on the event loop; None otherwise."""
        meta = self.store.known_meta()
        cached = self._cluster
        if meta is None or cached is None or cached[0] != (meta["plan_id"], meta["rebuild_version"]):
            return None
        return self._view(meta, None), plan_key(meta)  # its cluster is cached: no read

    def _view(self, meta: dict[str, str], owner: Owner | None) -> View:
        key = (meta["plan_id"], meta["rebuild_version"])  # what the store's own cache of the cluster is keyed by
        cached = self._cluster
        if cached is None or cached[0] != key:
            cluster = self.store.cluster()
            cached = self._cluster = (key, cluster, Instants(Clock(cluster.start, cluster.step, cluster.steps)))
        return View(units.read_instant(meta["now"]), cached[1], cached[2], owner)

    def owned(self, name: str, caller: Principal) -> View:
        """A view with the owner of a reservation the caller may act on; 404 (suggesting only their own) or 403."""
        view = self.view(name)
        found = view.owner
        if found is None:
            mine = self.store.names(None if caller.admin else caller.user)
            raise ApiError(404, "unknown", f"no reservation named `{name}` in the plan",
                           did_you_mean(name, mine))
        if not caller.may_act_for(found.user):
            raise ApiError(403, "forbidden", f"reservation `{name}` belongs to another user",
                           "only its owner or an admin may see or change it")
        return view


def mine(who: Principal) -> str | None:
    """The owner a write must find, checked by the store inside the write (so across servers too): the caller's
    own name, unless the caller is an admin."""
    return None if who.admin else who.user


async def service(request: Request) -> Service:
    """The service of the app serving this request (async, as every dependency here: a sync one costs each request
    a hop to a worker thread and back)."""
    found: Service = request.app.state.service
    return found


async def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
    """Who is calling, from the bearer token; 401 without one or with an unknown one."""
    if credentials is None:
        raise ApiError(401, "unauthenticated", "this request needs a bearer token",
                       "send `Authorization: Bearer TOKEN`; an admin makes tokens with `rayon token USER`",
                       headers={"WWW-Authenticate": CHALLENGE})
    principal = (await service(request)).tokens.authenticate(credentials.credentials)
    if principal is None:
        raise ApiError(401, "unauthenticated", "the bearer token is not known to this server",
                       "check the token, or ask an admin for a new one",
                       headers={"WWW-Authenticate": f'{CHALLENGE}, error="invalid_token"'})
    if principal.expired(utcnow()):
        assert principal.expires is not None
        raise ApiError(401, "unauthenticated", f"the bearer token expired at {units.format_instant(principal.expires)}",
                       "ask an admin for a new one (`rayon token USER --expires 30d`)",
                       headers={"WWW-Authenticate": f'{CHALLENGE}, error="invalid_token"'})
    return principal


async def admin(principal: Principal = Depends(caller)) -> Principal:
    """The caller, who must hold an admin token; 403 otherwise."""
    if not principal.admin:
        raise ApiError(403, "forbidden", f"`{principal.user}` is not an admin", "this needs an admin token")
    return principal


async def body(request: Request) -> bytes:
    """The raw request body (the size limit is enforced before it arrives here)."""
    return await request.body()
