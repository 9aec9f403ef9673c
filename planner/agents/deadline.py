"""The earliest deadline at which an agent would accept a rejected request: a gallop, then a bisection.

Rejections carry it (`earliest_deadline`); the search is bounded by `MAX_PROBES` placements.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from planner.agents.base import Agent
from planner.agents.greedy import pack
from planner.agents.greedy.agent import GreedyAgent, reach
from planner.agents.greedy.placer import DEFAULT_BUDGET, Placer
from planner.agents.greedy.solution import first_start, searched_apart
from planner.core.compile import (
    AtomTask,
    GroupTask,
    Instance,
    Task,
    atoms_of,
    clipped,
    compile_reservation,
    mirrored,
    ungapped,
)
from planner.core.plan import Plan
from rdl.shape import step_floor
from rdl.tree import Absolute, Reservation, Window


def with_deadline(reservation: Reservation, deadline: datetime) -> Reservation | None:
    """The same request with another deadline; None when it has no deadline to move."""
    if reservation.deadline is not None:
        return replace(reservation, deadline=Absolute(deadline))
    if isinstance(reservation.body, Window):
        return replace(reservation, body=replace(reservation.body, end=Absolute(deadline)))
    return None


MAX_PROBES = 12
PROBE_BUDGET = 16
GRAIN_SECONDS = 60  # past the guess, the search moves in minutes at the least: as many probes at 1 s as at 1 min


def earliest_deadline(plan: Plan, agent: Agent, reservation: Reservation, submitted: datetime) -> datetime | None:
    """The earliest deadline found at which the agent accepts the request on this plan.

    The search starts where the request would finish if every piece ran as early as it could
    (one greedy pass on the reversed time axis). When no placement can end before that guess
    (ends_first) and GREE surely places it there (sure_to_fit), that is the answer, with no placement
    at all; when it fits, to the agent, and a step earlier does not, too (two placements). Otherwise
    it gallops later, or bisects earlier, from there, to the step on plans of minute steps or longer and
    to the minute on finer ones: a few placements instead of a bisection over the whole horizon. Without that pass
    (a series; an `order` whose pass found nothing), the request placed by the horizon's end says whether any
    deadline fits, and the gallop starts from the request's own deadline, or for an `order` of atoms with a gap (or
    an `any` of such) from where it would end at the earliest without its gaps (gapless_end), if that is later.
    """
    arrival = reservation.arrival_at(submitted)
    current = deadline_of(reservation, arrival)
    if current is None:
        return None
    clock = plan.clock
    probes = 0
    # A smaller search budget per probe is safe: the search is deterministic, so whatever it finds
    # within the smaller budget the full one finds too; a probe that gives up only moves the answer later.
    # Other agents (the MILP) are never worse than the greedy one, so a deadline GREE accepts, they accept too.
    # GREE-L's probes do not test an order's stages alone (Placer(refutes=)): at a moved deadline its flat first
    # candidates record a failure early, while every stage still finds room alone (refuted 0 of 3,668 times on
    # benchmarks/admission.py's week), so the test only costs. GREE's refute most of the time they ask.
    prober = replace(agent, budget=min(agent.budget, PROBE_BUDGET), reasons=False, refutes=not agent.flat) \
        if isinstance(agent, GreedyAgent) else GreedyAgent("gree", flat=False, budget=PROBE_BUDGET, reasons=False)

    compiled = Probes(plan, reservation, submitted)

    def fits(step: int) -> bool:
        nonlocal probes
        probes += 1
        return compiled.fits(prober, step)

    failed = max(step_floor(clock.origin, current, clock.step), 0)
    if failed >= clock.steps:
        return None
    guess = asap_finish(plan, reservation, submitted, compiled.relaxed)
    grain = max(1, GRAIN_SECONDS // clock.step)  # a gallop's first jump, and how close a bisection gets

    def gallop(failed: int, end_fits: bool) -> tuple[int, int] | None:
        """From a step that does not fit, later by doubling jumps until one fits, within MAX_PROBES: that step and
        the last that did not; the horizon's end when `end_fits` (known, not asked again); else None."""
        probe, jump = failed, grain
        while probes < MAX_PROBES and probe < clock.steps:
            failed, probe, jump = probe, min(probe + jump, clock.steps), jump * 2
            if (end_fits and probe == clock.steps) or fits(probe):
                return failed, probe
        return (failed, clock.steps) if end_fits else None

    if guess is None:  # a series, or a greedy pass that found nothing: gallop from the deadline (or the gapless end)
        if not fits(clock.steps):  # not even by the horizon's end: no deadline to find
            return None
        floor = gapless_end(plan, compiled.relaxed)  # or from where it ends at the earliest without its gaps
        found = gallop(failed if floor is None else max(failed, floor - 1), end_fits=True)
    else:
        probe = max(guess, failed + 1)
        task = compiled.task()
        lowest = probe == guess and ends_first(task)  # no placement at all ends before the probe
        if (lowest and sure_to_fit(prober, plan, task)) or fits(probe):  # almost always: the guess is the answer
            if lowest or probe - failed <= 1 or not fits(probe - 1):
                return clock.at(probe)
            found = (failed, probe - 1)
        else:
            found = gallop(probe, end_fits=False)
    if found is None:
        return None
    failed, probe = found
    while probe - failed > grain and probes < MAX_PROBES:
        middle = (failed + probe) // 2
        if fits(middle):
            probe = middle
        else:
            failed = middle
    return clock.at(probe)


class Probes:
    """The request with its deadline moved to any step, compiled once: a one-off request's tasks under a deadline at
    step s are its tasks under the horizon's end, each node ending by s (compile.clipped; the same instances
    compile_reservation gives, tests/planner/agents/test_deadline_probes.py). A series compiles at every probe."""

    def __init__(self, plan: Plan, reservation: Reservation, submitted: datetime):
        self.plan, self.reservation, self.submitted = plan, reservation, submitted
        self.relaxed: list[Instance] | None = None
        clock = plan.clock
        moved = with_deadline(reservation, clock.at(clock.steps))
        if moved is not None and reservation.every is None:
            self.relaxed = compile_reservation(moved, submitted, clock, plan.now_step, plan.resources)

    def task(self) -> Task | None:
        """The one-off request's task under the horizon's deadline; None for a series."""
        return None if self.relaxed is None else self.relaxed[0].task

    def instances(self, step: int) -> tuple[Reservation, list[Instance]] | None:
        """The request with its deadline at `step` (to the plan's clock, at most its horizon) and its instances."""
        clock = self.plan.clock
        moved = with_deadline(self.reservation, clock.at(step))
        if moved is None:
            return None
        if self.relaxed is None:
            return moved, compile_reservation(moved, self.submitted, clock, self.plan.now_step, self.plan.resources)
        return moved, [replace(i, task=clipped(i.task, step), declared=(i.declared[0], step), expr=moved.expr)
                       for i in self.relaxed]

    def fits(self, agent: GreedyAgent, step: int) -> bool:
        """Whether `agent` places the request with its deadline at `step`."""
        found = self.instances(step)
        return found is not None and agent.place_compiled(self.plan, found[0], found[1]).placed


def asap_finish(plan: Plan, reservation: Reservation, submitted: datetime,
                relaxed: list[Instance] | None = None) -> int | None:
    """The step at which the request would end with every piece as early as it goes (GREE mirrored); `relaxed`, the
    request compiled with its deadline at the horizon, when the caller has it (Probes.relaxed)."""
    if reservation.every is not None:
        return None
    if relaxed is None:
        moved = with_deadline(reservation, plan.clock.at(plan.clock.steps))
        if moved is None:
            return None
        relaxed = compile_reservation(moved, submitted, plan.clock, plan.now_step, plan.resources)
    return _asap_end(plan, relaxed[0])


def gapless_end(plan: Plan, relaxed: list[Instance] | None) -> int | None:
    """For a one-off request (`relaxed`: compiled with its deadline at the horizon) with an `order` that keeps a gap:
    the step at which it would end at the earliest with its gaps dropped, where that is the earliest end of any
    placement so (ends_first). Every placement with the gaps is one without them, so no deadline before that step
    fits any agent: where the pass with the gaps finds nothing (a gap of 0 in a crowded plan asks for stages that
    meet exactly, more than its budget finds), the search starts there rather than at the request's deadline.
    None elsewhere."""
    if relaxed is None or ends_first(relaxed[0].task):
        return None  # the pass with the gaps was exact (a chain, gaps on orders of one child at most)
    loose = replace(relaxed[0], task=ungapped(relaxed[0].task))  # without a gap to drop, no more a chain than before
    return _asap_end(plan, loose) if ends_first(loose.task) else None


def _asap_end(plan: Plan, instance: Instance) -> int | None:
    steps = plan.clock.steps
    task = mirrored(instance.task, steps)
    lo, hi = reach([instance], steps)  # on the mirrored axis: [steps - hi, steps - lo)
    # An `any` is placed one alternative at a time (_first_end): where each is searched apart, nothing is laid.
    # Elsewhere (an `all`'s siblings crowd each other; an inner `any` ranks its alternatives by the load they add)
    # every candidate is laid while the search goes on.
    alternatives = task.children if isinstance(task, GroupTask) and task.kind == "any" else [task]
    lays = not all(searched_apart(child) for child in alternatives)
    if pack.on_tree(hi - lo, steps):  # a long window: search the plan's tree, mirrored, instead of a copy
        from planner.agents.greedy.ontree import TreeView

        tree = plan.free_tree()
        with tree.trial(plan.capacity, plan.used):
            placer = Placer(tree.free, plan.capacity[:, ::-1], flat=False, tree=TreeView(tree, mirrored=True),
                            lays=lays)
            return _first_end(placer, task, steps)
    placer = Placer(np.ascontiguousarray(plan.free_in(lo, hi)[:, ::-1]), plan.capacity[:, ::-1], flat=False,
                    origin=steps - hi, lays=lays)
    return _first_end(placer, task, steps)


def ends_first(task: Task | None) -> bool:
    """Whether no placement of the task ends before the one asap_finish finds: so a deadline a step before its
    guess fits no agent, and the search need not try it.

    True of an atom: a lease of any placement that starts after the greedy one's first moves there without ending
    later and without taking a step the others need (they start later still), lease by lease. True of an `order`
    without gap of such tasks: its stages share no step, and a stage that ends earlier never makes the next end
    later. True of an `any` of such tasks, whose guess is its alternatives' earliest (_first_end), and of an `all`
    or `order` of one such chain. Not of an `all` of more, whose children crowd each other, nor of an order with a
    gap, which a stage that ends too early can break. And
    only while the greedy pass's budget covers one placement per atom (it places each once; an alternative it had
    no budget for would be missing from the earliest). tests/planner/agents/test_ends_first.py holds it to a
    brute-force enumeration."""
    return task is not None and _any_of_chains(task) and len(atoms_of(task)) <= DEFAULT_BUDGET


def _any_of_chains(task: Task) -> bool:
    if isinstance(task, GroupTask) and task.kind == "any":
        return all(_any_of_chains(child) for child in task.children)
    return _chain(task)


def sure_to_fit(prober: GreedyAgent, plan: Plan, task: Task | None) -> bool:
    """Whether the prober places an `ends_first` task by any deadline some placement of it meets, so that it need not
    try. GREE lays such a task's stages from the last, each as late as it goes: the mirror of ends_first's argument,
    so it fails only where nothing fits, with one placement per atom (an `any` tries each alternative once). GREE-L
    tries an atom's flattest placement in its preferred window and in its whole window before GREE's latest, so it
    is as sure of one atom, or an `any` of single atoms, with three placements per atom and as many again for the
    alternative it searches a second time; not of an `order` of several, whose first stage's flattest placement can
    leave the next no room. So: a budget that covers those, and no sharing limit to narrow the plan."""
    if task is None or plan.policy.limited:
        return False
    atoms = len(atoms_of(task))
    if not prober.flat:
        return atoms <= prober.budget
    return _single_atoms(task) and FLAT_TRIES * (atoms + 1) <= prober.budget


FLAT_TRIES = 3  # GREE-L's placements of one atom before GREE's latest has had its try (Placer._atom_candidates)


def _single_atoms(task: Task) -> bool:
    """One atom, or an `any` of such (an `all` or `order` of one child is that child to the placer)."""
    if isinstance(task, GroupTask) and task.kind == "any":
        return all(_one_atom(child) for child in task.children)
    if isinstance(task, GroupTask) and len(task.children) == 1:
        return _single_atoms(task.children[0])
    return _one_atom(task)


def _one_atom(task: Task) -> bool:
    return isinstance(task, AtomTask) or (task.kind != "any" and len(task.children) == 1
                                          and _one_atom(task.children[0]))


def _chain(task: Task) -> bool:
    """An atom, or an order without gap of such: the mirrored placer's first placement of it ends first. An `all` or
    an `order` of one child is that child to the placer (no sibling to crowd, no next stage to keep a gap to)."""
    if isinstance(task, AtomTask):
        return True
    if task.kind in ("all", "order") and len(task.children) == 1:
        return _chain(task.children[0])
    return task.kind == "order" and task.gap is None and all(_chain(child) for child in task.children)


def _first_end(placer: Placer, task: Task, steps: int, whole: bool = True) -> int | None:
    """Where the mirrored task's first placement ends on the plan's axis; an `any`'s, the earliest of its
    alternatives' (the placer itself takes the first alternative that fits, which may end much later). The
    alternatives share the placer's budget, so none of them is searched as a `whole` request."""
    if isinstance(task, GroupTask) and task.kind == "any":
        ends = [_first_end(placer, replace(child, lo=max(child.lo, task.lo), hi=min(child.hi, task.hi)), steps,
                           whole=False) for child in task.children]
        found = [end for end in ends if end is not None]
        return min(found) if found else None
    solution = placer.first(task, task.lo, task.hi, whole=whole)
    return None if solution is None else steps - first_start(solution)


def deadline_of(reservation: Reservation, arrival: datetime) -> datetime | None:
    """When the request must be done by: its `deadline`, else the end of a `window` around its whole body."""
    if reservation.deadline is not None:
        return reservation.deadline.resolve(arrival)
    if isinstance(reservation.body, Window):
        return reservation.body.end.resolve(arrival)
    return None
