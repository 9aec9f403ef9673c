"""The Store's decisions: submissions decided in batches on a snapshot of the plan and committed together.

Submissions arriving together are decided in order, each on the plan the earlier ones left, and committed in one
transaction (group commit, planner/store/group.py); a server's worker processes forward their batches to the one
that decides for all (planner/store/forward.py).
"""

from __future__ import annotations

import builtins
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.engine import Connection

from planner.admission import Planner
from planner.agents.registry import DEFAULT_AGENT, Agent
from planner.core.decision import Decision
from planner.core.plan import Accepted
from planner.store import axis, queries
from planner.store.base import StoreBase
from planner.store.cache import plan_key
from planner.store.errors import StoreError
from planner.store.forward import Answered, SharedDecider
from planner.store.group import Batches
from planner.store.session import Database
from planner.store.writes import Rows, Submission
from rdl.tree import Reservation

# A batch is first decided on the plan this Store has cached, with no read (the write checks its version). When
# that finds another writer's change, the next batches read the plan before deciding: a guess on a plan that
# others change would be decided twice.
DISTRUST_BATCHES = 100
WITHDRAWN = "withdrawn"  # the code of a submission refused because another of its group was (submit_all)
DECIDE_ATTEMPTS = 5  # decisions made again when another writer changed the plan under them, before giving up


class Deciding(StoreBase):
    """Submissions, decided and committed in batches (`submit`), alone or shared with other worker processes."""

    def __init__(self, database: Database):
        super().__init__(database)
        self._submissions = Batches(self._forward_or_decide)
        self._distrust = 0  # batches still to read the plan before deciding (another writer was seen)
        self._shared: SharedDecider | None = None  # the worker processes this one decides with (share_decisions)
        self._on_batch: Callable[[int], None] | None = None  # told each batch's size (count_batches)

    def count_batches(self, hook: Callable[[int], None] | None) -> None:
        """Tell `hook` the size of each batch of submissions committed together (a server's metrics): the batches
        this process writes, other workers' forwarded ones among them (share_decisions), not those it forwards."""
        self._on_batch = hook

    def submit(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, actor: str | None = None,
               submitted: datetime | None = None, dry_run: bool = False, explain: bool = True,
               validated: bool = False, owner: str | None = None,
               validated_on: tuple[str, str, str] | None = None) -> Decision:
        """Decide one reservation and commit the decision (reservation, leases, log row) before answering.

        Submissions arriving together are decided and committed together (group commit, planner/store/group.py):
        one transaction and one flush to disk for all of them, each decided on the plan the earlier ones left.
        The search runs on a private copy of the plan and holds no lock, so a long one stalls no other writer;
        the batch commits only if the plan is still the version it was decided on, else it is decided again on
        the new plan. After DECIDE_ATTEMPTS - 1 such tries the last one decides holding the writer's lock, as
        every writer waits its turn: a busy plan delays a decision, never refuses it. `validated`: the caller
        has validated it against this store's cluster already (no second pass); `validated_on`: against the plan
        of this `plan_key` (a recent one: `recent_meta`), so it is validated again if the plan it is decided on
        has another. `owner`: refuse (`forbidden`) a name another user's reservation holds, checked inside the
        write (so across servers too).
        """
        ticket = _Ticket(reservation, agent, actor, submitted, explain, validated, owner, validated_on)
        if dry_run:
            _, planner, window, key = self._snapshot()
            return axis.decision_on_store(_decide(planner, ticket, key)[0], window)
        return self._submissions(ticket)

    async def submit_async(self, reservation: Reservation, agent: str | Agent = DEFAULT_AGENT, actor: str | None = None,
                           explain: bool = True, validated: bool = False, owner: str | None = None,
                           validated_on: tuple[str, str, str] | None = None) -> Decision:
        """`submit` (not a dry run) for a coroutine: in the same batches, with no thread blocked while it waits
        (the batches' runner thread decides and commits); a worker that shares decisions hands it to the decider
        straight from its loop (planner/store/forward.py `LoopForwarder`)."""
        ticket = _Ticket(reservation, agent, actor, None, explain, validated, owner, validated_on)
        if self._shared is not None and isinstance(agent, str):  # a worker: straight from the loop to the decider
            answered = await self._shared.forward_async(ticket)
            if answered is not None:
                outcome, meta = answered
                if meta is not None:
                    self._db.last_meta = meta
                if isinstance(outcome, BaseException):
                    raise outcome
                decision: Decision = outcome
                return decision
        return await self._submissions.run_async(ticket)

    def submit_all(self, reservations: Sequence[Reservation], agent: str | Agent = DEFAULT_AGENT,
                   actor: str | None = None, dry_run: bool = False, explain: bool = True, validated: bool = False,
                   owner: str | None = None, validated_on: tuple[str, str, str] | None = None,
                   ) -> builtins.list[Decision]:
        """Decide reservations in order, each on the plan the earlier ones left, and commit all their decisions
        in one transaction, or none: when one of them is refused (another user's name, input that no longer
        holds up against the plan), nothing of the others is written and its error is raised. A dry run decides
        them the same way and commits nothing. The options are `submit`'s, for each reservation."""
        group = uuid.uuid4().hex
        tickets = [_Ticket(r, agent, actor, None, explain, validated, owner, validated_on, group) for r in reservations]
        if dry_run:
            _, planner, window, key = self._snapshot()
            outcomes: Sequence[Decision | BaseException] = [
                outcome if isinstance(outcome, BaseException) else axis.decision_on_store(outcome[0], window)
                for outcome in (_attempt(planner, ticket, key) for ticket in tickets)]
        else:
            outcomes = self._submissions.run_many(tickets)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            raise next((e for e in errors if getattr(e, "code", None) != WITHDRAWN), errors[0])
        return [o for o in outcomes if isinstance(o, Decision)]

    def share_decisions(self, folder: Path) -> None:
        """Decide submissions together with the other worker processes of one server, which share `folder`: one
        of them decides every batch, the others forward theirs to it (planner/store/forward.py)."""
        self._shared = SharedDecider(folder, self._decide_for_others)

    def wait_to_decide(self, stop: threading.Event, every: float = 1.0) -> bool:
        """After `share_decisions`: wait until this process decides for the others (trying every `every` seconds)
        or `stop` is set; whether it decides."""
        if self._shared is None:
            raise RuntimeError("wait_to_decide needs share_decisions first")
        return self._shared.stand_by(stop, every)

    def _decide_for_others(self, tickets: builtins.list[_Ticket]) -> Answered:
        """Another worker's batch, decided in this process's next batch: the outcomes, and the meta rows after."""
        outcomes = self._submissions.run_many(tickets)
        return outcomes, dict(self.recent_meta())

    def _forward_or_decide(self, tickets: Sequence[_Ticket]) -> builtins.list[Decision | BaseException]:
        """A batch's outcomes, from the worker that decides for all (share_decisions) or decided here."""
        if self._shared is not None and all(isinstance(ticket.agent, str) for ticket in tickets):
            answered = self._shared.forward(list(tickets))
            if answered is not None:
                outcomes, meta = answered
                if meta is not None:  # the plan as the decider saw it: what the next requests check against
                    self._db.last_meta = meta
                return outcomes
        return self._submit_batch(tickets)

    def _submit_batch(self, tickets: Sequence[_Ticket]) -> builtins.list[Decision | BaseException]:
        """Decide submissions in order, each on the plan the earlier ones left, and commit them in one transaction;
        each one's stored decision, or the error that refused it."""
        refused: dict[int, BaseException] = {}  # tickets left out of the decisions: another user holds the name, or
        # another of their group (submit_all) was refused
        self._distrust = max(0, self._distrust - 1)
        if self._on_batch is not None:
            self._on_batch(len(tickets))
        for attempt in range(DECIDE_ATTEMPTS):
            last = attempt == DECIDE_ATTEMPTS - 1
            if not last:
                trusted = attempt == 0 and self._distrust == 0
                version, planner, _, key = self._snapshot(trusted)
                planner, decided = _decide_batch(planner, tickets, key, refused)
            with self._lock:
                with self._db.session(write=True) as (connection, meta):
                    if last:  # decided holding the writer's lock, on the cache's plan (it learns once committed)
                        planner = Planner.over(self._cache.planner(connection, meta).plan.copy())
                    elif (meta["plan_id"], int(meta["plan_version"])) != version:
                        if trusted:  # others write to this plan: read it before deciding, for a while
                            self._distrust = DISTRUST_BATCHES
                        continue  # another writer changed the plan meanwhile: decide again on the new one
                    stored_rows = queries.named(connection, [ticket.reservation.name for ticket in tickets])
                    found = _withdrawn_with(tickets, _others_names(tickets, stored_rows))
                    if any(i not in refused for i in found):
                        refused.update(found)
                        if not last:
                            continue  # decided beside names it may not take: decide again without them
                    if last:
                        key = plan_key(meta)
                        planner, decided = _decide_batch(planner, tickets, key, refused)
                    rows, stored = self._commit(connection, meta, planner, tickets, decided, stored_rows)
                self._cache.committed(meta["plan_id"], rows.version, planner, key)
                return stored
        raise AssertionError("the last attempt always commits")

    def _commit(self, connection: Connection, meta: dict[str, str], planner: Planner, tickets: Sequence[_Ticket],
                decided: Sequence[tuple[Decision, datetime] | BaseException], named: dict[str, queries.Named],
                ) -> tuple[Rows, builtins.list[Decision | BaseException]]:
        """Write the submissions decided on `planner`'s plan (`named`: the rows their names have now); the writer,
        and each decision on the store's axis."""
        cluster = self._cache.cluster(connection, meta)
        window, clock = axis.window_start(planner.plan, cluster), axis.store_clock(cluster)
        rows = self._rows(connection, meta)
        stored: builtins.list[Decision | BaseException] = []
        batch = []
        for ticket, outcome in zip(tickets, decided, strict=True):
            if isinstance(outcome, BaseException):
                stored.append(outcome)
                continue
            decision, when = outcome
            on_store = axis.decision_on_store(decision, window)
            batch.append(Submission(ticket.reservation, on_store, when, ticket.actor))
            stored.append(on_store)
        rows.submissions(clock, batch, named)
        return rows, stored

    def _snapshot(self, trusted: bool = False) -> tuple[tuple[str, int], Planner, int, tuple[str, str, str]]:
        """A private copy of the current plan, the version it is of (deciding on it needs no lock), the step
        of the store's axis at which its window begins, and its `plan_key`. `trusted`: of the plan this Store
        has cached, without reading the store, when it has one (the write that follows checks the version)."""
        if trusted:
            with self._lock:
                known = self._cache.known()
                if known is not None:
                    return (known.version, Planner.over(known.planner.plan.copy()),
                            axis.window_start(known.planner.plan, known.cluster), known.key)
        with self._lock, self._db.session(write=False) as (connection, meta):
            planner = self._cache.planner(connection, meta)
            window = axis.window_start(planner.plan, self._cache.cluster(connection, meta))
            return ((meta["plan_id"], int(meta["plan_version"])), Planner.over(planner.plan.copy()), window,
                    plan_key(meta))

@dataclass(frozen=True)
class _Ticket:
    """One submission waiting for its batch."""

    reservation: Reservation
    agent: str | Agent
    actor: str | None
    submitted: datetime | None
    explain: bool
    validated: bool
    owner: str | None = None  # refuse the name if another user's reservation holds it
    validated_on: tuple[str, str, str] | None = None  # the plan_key it was validated against
    group: str | None = None  # tickets of one group are committed all together or none (submit_all)


def _decide_batch(planner: Planner, tickets: Sequence[_Ticket], key: tuple[str, str, str],
                  refused: dict[int, BaseException]) -> tuple[Planner, builtins.list[tuple[Decision, datetime] |
                                                                         BaseException]]:
    """The tickets decided in order on `planner`'s plan (`refused`: those refused already, by index), and the
    planner holding the accepted ones. When a ticket of a group is refused, its whole group is (added to
    `refused`) and the batch is decided again on a copy of the plan as it was, without the group's others."""
    original = Planner.over(planner.plan.copy()) if any(t.group is not None for t in tickets) else None
    while True:
        decided = [refused.get(i) or _attempt(planner, t, key) for i, t in enumerate(tickets)]
        failed = {i: o for i, o in enumerate(decided) if isinstance(o, BaseException) and tickets[i].group is not None}
        withdrawn = _withdrawn_with(tickets, failed)
        if original is None or all(i in refused or i in failed for i in withdrawn):
            return planner, decided
        refused.update(withdrawn)  # the failed ones too: decided again without their group, one might pass
        planner = Planner.over(original.plan.copy())


def _withdrawn_with(tickets: Sequence[_Ticket], failed: Mapping[int, BaseException]) -> dict[int, BaseException]:
    """`failed` (tickets refused, by index), and every other ticket of a group one of them is in, refused with it
    (`withdrawn`: none of a group is written when one of it is refused)."""
    groups = {tickets[i].group: tickets[i].reservation.name for i in failed if tickets[i].group is not None}
    found = dict(failed)
    for index, ticket in enumerate(tickets):
        if index not in found and ticket.group in groups:
            found[index] = StoreError(WITHDRAWN, f"`{ticket.reservation.name}` was not submitted: "
                                      f"`{groups[ticket.group]}`, in the same batch, was refused")
    return found


def _others_names(tickets: Sequence[_Ticket], named: dict[str, queries.Named]) -> dict[int, StoreError]:
    """The tickets (by index) whose name another user's stored reservation holds (`named`: the stored rows of
    their names), with the error for each."""
    refused = {}
    for index, ticket in enumerate(tickets):
        found = named.get(ticket.reservation.name)
        if ticket.owner is not None and found is not None and found.user != ticket.owner:
            refused[index] = StoreError("forbidden", f"the name `{ticket.reservation.name}` belongs to another "
                                        "user's reservation", "choose another name")
    return refused


def _decide(planner: Planner, ticket: _Ticket, key: tuple[str, str, str]) -> tuple[Decision, datetime]:
    """A submission decided on `planner`'s plan (whose `plan_key` is `key`) without changing it, and the time it
    is submitted at."""
    when = ticket.submitted or planner.plan.now
    validated = ticket.validated and ticket.validated_on in (None, key)
    return planner.submit(ticket.reservation, ticket.agent, when, dry_run=True, explain=ticket.explain,
                          validated=validated), when


def _attempt(planner: Planner, ticket: _Ticket, key: tuple[str, str, str]) -> tuple[Decision, datetime] | Exception:
    """A submission decided on `planner`'s plan, which keeps it if accepted (for the next one in its batch), or the
    error that refused it (that submission's alone: the batch goes on)."""
    try:
        decision, when = _decide(planner, ticket, key)
    except Exception as error:  # handed back to that submission's caller
        return error
    if decision.accepted:
        planner.plan.add(Accepted(ticket.reservation, when, list(decision.allocations)))
    return decision, when


