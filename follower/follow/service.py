"""The plan follower inside `rayon serve`: the queue capacities of now, served and published as the clock moves.

Every tick of the service's clock (each plan step) the follower works out the round at the plan's clock:
`GET /v1/queues` answers it with the time of the next change point, and `--follow-to yunikorn:FILE` writes the
YuniKorn `queues.yaml` for now to FILE, replaced atomically and only when it changes (a ConfigMap sync or
YuniKorn's admission controller picks it up); `--follow-to yunikorn-configmap[:NAMESPACE/NAME]` writes it into
YuniKorn's ConfigMap through the Kubernetes API instead (follower/follow/configmap.py), when the round's queue
settings change. A server that was stopped publishes the current round at once when it starts again; a write
that fails is logged and tried again at the next tick. With a queue log (planner/store/queuelog.py) each tick's
round is recorded there too, and, with `--follow-allocated`, what YuniKorn reports each queue holds
(follower/follow/allocated.py): the dashboard's plan against reality reads both (`GET /v1/queues/history`).

With the follower's `on_expiry: kill` (`rayon serve --on-expiry kill`), a reservation whose queue left the round
(its window closed, or it was cancelled) less than KEEP_ENDED ago (at least one step) stays in the document, closed,
so that YuniKorn's quota preemption ends its pods (follower/follow/yunikorn.py); then it leaves the document, as
under `move` at once. The publisher remembers which queues were open: a server started after a window closed does
not know it was, and leaves the queue to drain.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any as AnyType

import numpy as np
from fastapi import APIRouter, Depends, FastAPI

from follower.follow import yunikorn
from follower.follow.allocated import YuniKornAllocated
from follower.follow.configmap import TARGET as CONFIGMAP
from follower.follow.configmap import Applied, ConfigMapApplier, ConfigMapRef
from follower.follow.follower import Follower, FollowerError, PlanView
from follower.follow.rounds import Round
from follower.follow.seen import seen_by
from planner.api.auth import Principal
from planner.api.context import Service, caller
from planner.api.native import ERRORS
from planner.store.facade import Store
from planner.store.queuelog import FOLLOWER, QueueFigures, QueueLog
from rdl import units

log = logging.getLogger("rayon.follow")
TARGETS = ("yunikorn", CONFIGMAP)
MAX_TARGET = 1024 * 1024  # bytes of a queues.yaml read to tell whether it is one
MARKER = "# kept by `rayon serve --follow-to`: the plan's queues now, replaced whenever they change\n"
KEEP_ENDED = 30  # seconds of plan time an ended queue stays closed in the document under kill (at least one step)


@dataclass(frozen=True)
class FollowTo:
    """Where the follower publishes: `yunikorn:FILE` (`path`) or `yunikorn-configmap[:NAMESPACE/NAME]` (`configmap`)."""

    kind: str
    path: Path | None = None
    configmap: ConfigMapRef | None = None
    replace: bool = False  # replace FILE even when it is not a queues.yaml this command wrote

    @classmethod
    def parse(cls, text: str) -> FollowTo:
        """`yunikorn:FILE` or `yunikorn-configmap[:NAMESPACE/NAME]`; a ValueError saying what is expected otherwise."""
        kind, _, rest = text.partition(":")
        if kind == CONFIGMAP:
            return cls(kind, configmap=ConfigMapRef.target(text))
        if kind not in TARGETS or not rest:
            raise ValueError(f"`{text}` is not a target: give `yunikorn:FILE` (the queues.yaml to keep current) or "
                             f"`{CONFIGMAP}[:NAMESPACE/NAME]` (YuniKorn's ConfigMap, through the Kubernetes API)")
        return cls(kind, Path(rest).expanduser())


def check_target(target: FollowTo) -> None:
    """Refuse (FollowerError) a target file that exists and is not a queues.yaml this command wrote (its first line
    is MARKER, or it is a YuniKorn queues document; an empty file is taken too), unless the target says `replace`:
    pointed at another file by mistake, the follower must not destroy it."""
    path = target.path
    if path is None or target.replace or not path.exists():
        return
    try:
        ours = path.is_file() and (path.stat().st_size == 0 or _queues_document(path))
    except OSError as error:
        raise FollowerError(f"cannot read {path}, the file to keep the queues in: {error.strerror}") from None
    if not ours:
        raise FollowerError(f"{path} is not a queues.yaml that `rayon serve --follow-to` wrote: refusing to "
                            "replace it", "give a new file, or --follow-replace to replace this one")


def _queues_document(path: Path) -> bool:
    """Whether the file starts with MARKER, or (written before the marker) is a YuniKorn queues document."""
    with path.open("rb") as file:
        head = file.read(MAX_TARGET + 1)
    if head.startswith(MARKER.encode()):
        return True
    try:
        yunikorn.load_base(head.decode("utf-8"), str(path))
    except (FollowerError, UnicodeDecodeError):
        return False
    return len(head) <= MAX_TARGET


@dataclass(frozen=True)
class Current:
    """The round in force at the plan's clock, and when the queues next change (None: not within the horizon)."""

    version: tuple[str, str, str]  # plan id, plan version, clock: what it was worked out from
    round: Round
    next_change: datetime | None
    view: PlanView  # the plan's windows it was worked out on: the next version's view reuses those unchanged


class QueuePublisher:
    """The follower as an extension of the API (planner/api/extension.py): `/v1/queues`, and the file it keeps."""

    def __init__(self, store: Store, target: FollowTo | None = None, follower: Follower | None = None,
                 applier: ConfigMapApplier | None = None, history: QueueLog | None = None,
                 allocated: YuniKornAllocated | None = None):
        """`applier`: the connected ConfigMap writer a `yunikorn-configmap` target needs (configmap.connect);
        `history`: where each tick's round is recorded (and `allocated`'s answers: what YuniKorn holds)."""
        if target is not None and target.kind == CONFIGMAP and applier is None:
            raise ValueError("a ConfigMap target needs its applier (follower.follow.configmap.connect)")
        self.store, self.target, self.applier = store, target, applier
        self.follower = follower or Follower()
        self._lock = threading.Lock()
        self._current: Current | None = None
        self._written: str | None = None
        self._applied: tuple[object, ...] | None = None  # the settings last in the ConfigMap
        self.history, self.allocated = history, allocated
        self._open: set[str] = set()  # under kill: the reservations open at the last round published
        self._ended: dict[str, datetime] = {}  # and those kept closed since: when each was first not open

    def install(self, app: FastAPI, service: Service) -> None:
        router = APIRouter()

        @router.get("/v1/queues", tags=["plan"], responses={k: ERRORS[k] for k in (401, 503)})
        def queues(who: Principal = Depends(caller)) -> dict[str, AnyType]:
            """The queue capacities the plan asks for now (the plan follower's round at the plan's clock), and the
            time of the next change point within the horizon (null: none). A user sees their own reservations'
            queues, and the others' only as one anonymous `others` load; an admin sees every queue."""
            return self.answer() if who.admin else self.answer_for(who.user)

        app.include_router(router)

    def tick(self) -> None:
        """With a target, work out the round now and publish it if it changed. Without one there is nothing to
        publish: `/v1/queues` works the round out when asked. With a queue log, record the round (and what the
        scheduler holds) for this step."""
        if self.history is not None:
            self.record(self.current())
        if self.applier is None and self.target is None:
            return
        current = self.current()
        ended = self.ended(current)
        if self.applier is not None:
            self.apply(current.round, ended)
        elif self.target is not None:
            self.publish(yunikorn.document(current.round, ended=ended))

    def ended(self, current: Current) -> tuple[str, ...] | None:
        """Under `on_expiry: kill`, the reservations whose queue was open at an earlier round and is not now, for
        KEEP_ENDED of plan time (at least one step) from the first round without it: the document keeps their queues,
        closed, until YuniKorn has preempted their pods. None under `move`: an ended queue leaves the document at once.

        Remembered from round to round: the plan drops a reservation once its window has passed."""
        if self.follower.on_expiry != "kill":
            return None
        now = current.round.time
        open_now = {target.reservation for target in current.round.reservations if target.reservation}
        for name in self._open - open_now:
            self._ended.setdefault(name, now)
        keep = timedelta(seconds=max(KEEP_ENDED, current.view.plan.clock.step))
        self._ended = {name: t for name, t in self._ended.items() if name not in open_now and now < t + keep}
        self._open = open_now
        return tuple(sorted(self._ended))

    def current(self) -> Current:
        """The round at the plan's clock, worked out again only when the plan or its clock changed."""
        meta = self.store.meta()
        version = (meta["plan_id"], meta["plan_version"], meta["now"])
        with self._lock:
            if self._current is not None and self._current.version == version:
                return self._current
            plan = self.store.load_plan()
            # Reservations unchanged since the last round keep their windows: one compile per new reservation,
            # not one per accepted reservation at every step of a service that runs for months.
            view = PlanView(plan, earlier=self._current.view if self._current is not None else None)
            now = units.read_instant(meta["now"])
            (round,) = self.follower.rounds(view, now, plan.clock.at(view.step_of(now) + 1))
            self._current = Current(version, round, self._next_change(view, round), view)
            return self._current

    def answer(self) -> dict[str, AnyType]:
        current = self.current()
        return {"time": units.format_instant(current.round.time),
                "next_change": units.format_instant(current.next_change) if current.next_change else None,
                **{key: value for key, value in current.round.to_json().items() if key not in ("time", "step")}}

    def answer_for(self, user: str) -> dict[str, AnyType]:
        """The answer as `user` may see it: other users' reservation queues as anonymous load."""
        current = self.current()
        owners = {name: accepted.reservation.user for name, accepted in current.view.plan.accepted.items()}
        return seen_by(self.answer(), owners, user)

    def record(self, current: Current) -> None:
        """Record the round's queues over its step in the queue log, each reservation queue with its owner; then
        what YuniKorn holds, if asked (a poll that fails is logged: the step goes without it)."""
        assert self.history is not None
        round, plan = current.round, current.view.plan
        start, end = round.time, plan.clock.at(round.step + 1)
        owners = {name: accepted.reservation.user for name, accepted in plan.accepted.items()}
        self.history.record(FOLLOWER, start, end, [
            QueueFigures(q.path, {k: v for k, v in q.to_json().items() if k in ("guaranteed", "max", "planned")},
                         q.kind, q.reservation, owners.get(q.reservation) if q.reservation else None)
            for q in round.queues])
        if self.allocated is None:
            return
        try:
            held = self.allocated.poll()
        except FollowerError as error:
            log.warning("follow: %s; no allocations recorded for this step", error)
            return
        self.history.record("yunikorn", start, end, [
            QueueFigures(queue, {"allocated": vector}) for queue, vector in sorted(held.items())])

    def publish(self, text: str) -> bool:
        """Replace the target file with `text` after MARKER (atomically: a reader sees the old file or the new
        one, in the old one's mode), unless it holds it already; whether it wrote. A file that is not one this
        command wrote is never replaced, unless the target says `replace`."""
        assert self.target is not None and self.target.path is not None
        path, text = self.target.path, MARKER + text
        if self._written is None and path.exists():
            check_target(self.target)
            self._written = path.read_text(encoding="utf-8", errors="replace")
        if text == self._written:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False) as temporary:
            temporary.write(text)
            temporary.flush()
            os.fsync(temporary.fileno())
        if path.exists():
            os.chmod(temporary.name, path.stat().st_mode & 0o7777)
        os.replace(temporary.name, path)
        self._written = text
        log.info("follow: wrote %s (the queues from %s)", path, units.format_instant(self._current.round.time)
                 if self._current else "now")
        return True

    def apply(self, round: Round, ended: tuple[str, ...] | None = None) -> Applied | None:
        """Put `round`'s document (with the `ended` queues kept closed: `ended`) into the ConfigMap, unless its
        settings are the ones put there last; what was done (None: nothing asked of the API server, or a failure,
        logged: the next tick tries again)."""
        assert self.applier is not None
        settings = (*round.settings(), ended)
        if settings == self._applied:
            return None
        try:
            applied = self.applier.apply(lambda base: yunikorn.document(round, base, ended=ended))
        except FollowerError as error:  # the API server's refusal, or a queues.yaml there that does not read
            log.warning("follow: %s; trying again at the next step", error)
            return None
        self._applied = settings
        if applied.outcome != "unchanged":
            log.info("follow: %s (the queues from %s)", applied, units.format_instant(round.time))
        return applied

    def _next_change(self, view: PlanView, now: Round) -> datetime | None:
        """The start of the first step after `now` whose queue settings differ (None: none within the horizon).

        Settings can change only where a window opens or closes, a lease starts or ends, or the capacity
        changes: only those steps are tried, in order."""
        plan = view.plan
        clock = plan.clock
        candidates = {edge for r in view.reservations for window in r.windows for edge in window}
        candidates |= {edge for accepted in plan.accepted.values() for a in accepted.allocations
                       for edge in (a.start, a.end)}
        candidates |= {int(step) + 1 for step in np.nonzero(np.any(np.diff(plan.capacity, axis=1) != 0, axis=0))[0]}
        settings = now.settings()
        for step in sorted(c for c in candidates if now.step < c < clock.steps):
            (later,) = self.follower.rounds(view, clock.at(step), clock.at(step + 1))
            if later.settings() != settings:
                return later.time
        return None
