"""Rejection reasons in words and numbers: which piece did not fit, where, and by how much."""

from __future__ import annotations

from planner.agents.greedy.pack import gang_room, on_tree
from planner.agents.greedy.solution import AtomFailure
from planner.core.compile import AtomTask, Clock, Instance
from planner.core.decision import Reason
from planner.core.plan import Plan
from rdl import units
from rdl.syntax.printer import format_resources
from rdl.tree import Reservation
from rdl.validate import Context, earliest_finish


def _moments(clock: Clock, *steps: int) -> list[str]:
    """Each step's moment as `HH:MM` when every one falls on the plan's first day, as `YYYY-MM-DD HH:MM` otherwise
    (written out rather than by strftime: every capacity rejection names its window)."""
    moments = [clock.at(step) for step in steps]
    day = clock.origin.date()
    if all(moment.date() == day for moment in moments):
        return [f"{m.hour:02d}:{m.minute:02d}" for m in moments]
    return [f"{m.year:04d}-{m.month:02d}-{m.day:02d} {m.hour:02d}:{m.minute:02d}" for m in moments]


def format_moment(step: int, clock: Clock) -> str:
    return _moments(clock, step)[0]


def format_span(lo: int, hi: int, clock: Clock) -> str:
    """`[00:00, 04:00)` within the plan's first day, full dates otherwise."""
    start, end = _moments(clock, lo, hi)
    return f"[{start}, {end})"


def window_reason(instance: Instance, plan: Plan, reservation: Reservation) -> Reason | None:
    """A `window` rejection when the instance's window is already past or beyond the horizon."""
    start, end = instance.declared
    clock = plan.clock
    which = f" (instance {instance.index})" if instance.index else ""
    if end <= plan.now_step:
        return Reason("window", f"the window of `{reservation.name}`{which} ended at "
                      f"{units.format_instant(clock.at(end))}, before the plan's clock "
                      f"({units.format_instant(plan.now)})")
    if start >= clock.steps:
        return Reason("window", f"the window of `{reservation.name}`{which} starts at "
                      f"{units.format_instant(clock.at(start))}, beyond the plan's horizon "
                      f"(it ends {units.format_instant(clock.at(clock.steps))})")
    return None


def bundles(count: int) -> str:
    return f"{count} bundle" if count == 1 else f"{count} bundles"


def describe_need(task: AtomTask, lo: int, hi: int, clock: Clock) -> str:
    bundle = format_resources(task.atom.bundle)
    length = units.format_duration(task.length * clock.step)
    if task.leases == 1:
        need = f"needs {task.gang} bundle{'s' if task.gang > 1 else ''} of {bundle} for {length}"
    else:
        gangs = f"gangs of {task.gang} bundles" if task.gang > 1 else "bundles"
        need = f"needs {task.leases} {gangs} of {bundle}, each for {length},"
    where = f"inside {format_span(lo, hi, clock)}"
    if hi < task.hi:
        where += f", before the next stage, which cannot start later than {format_moment(hi, clock)}"
    return f"{need} {where}"


def _room_summary(task: AtomTask, lo: int, hi: int, plan: Plan) -> tuple[int, int]:
    """The most bundles free at one step of [lo, hi), and the whole gangs free summed over its steps: from the
    plan's tree where a search reads it (a long window of seconds-long steps: the summary then follows the runs of
    one value, not the steps) and no trial placement is laid there, else from a copy of the window."""
    tree = plan.built_tree
    if tree is not None and on_tree(hi - lo, plan.clock.steps) and tree.holds_plan(lo, hi):
        return tree.room_summary(lo, hi, task.demand, task.gang, task.parallelism)
    room = gang_room(plan.free_in(lo, hi), task.demand, 1, task.parallelism)  # bundles per step
    return int(room.max()), int((room // task.gang).sum())


def bundle_hours(amount: float) -> str:
    """Bundle-hours for people: one decimal from ten on, three significant digits below (at one-minute steps
    26,368 bundle-minutes are 439.5, not 439.467; one bundle-second 0.000278)."""
    text = f"{amount:,.1f}" if amount >= 10 else f"{amount:.3g}"
    return text.removesuffix(".0")


def _apart(less: float, more: float) -> tuple[str, str]:
    """`bundle_hours` of two amounts, with as many more decimals as it takes for them to read apart (a step's
    bundle is 1/3600 bundle-hours at the least)."""
    texts = bundle_hours(less), bundle_hours(more)
    digits = 2
    while texts[0] == texts[1] and digits <= 6:
        texts, digits = (f"{less:,.{digits}f}", f"{more:,.{digits}f}"), digits + 1
    return texts


def describe_room(task: AtomTask, lo: int, hi: int, plan: Plan) -> str:
    if hi <= lo:
        return "but no time is left in its window"
    most, gangs = _room_summary(task, lo, hi, plan)
    if most < task.gang:
        return f"at most {most} {'is' if most == 1 else 'are'} free at once"
    needed = task.leases * task.gang * task.length
    available = gangs * task.gang  # whole gangs only
    hours = plan.clock.step / 3600
    if available < needed:
        free, need = _apart(available * hours, needed * hours)
        return (f"only {free} of the {need} bundle-hours it needs are free there "
                f"(at most {bundles(most)} at once)")
    return (f"{bundle_hours(available * hours)} bundle-hours are free there but not in the shape it needs "
            f"(at most {bundles(most)} at once, in leases of {units.format_duration(task.length * plan.clock.step)}"
            f" around the other pieces)")


def clipped_reason(instance: Instance, plan: Plan, reservation: Reservation) -> Reason | None:
    """A `window` rejection when the clock or the horizon cut the window short and what is left of it
    could not hold the request even on an empty cluster: the clock, not the load, is the reason."""
    start, end = instance.declared
    lo, hi = max(start, plan.now_step), min(end, plan.clock.steps)
    if (lo, hi) == (start, end):
        return None
    context = Context(plan.cluster, instance.arrival, plan.clock.step, plan.clock.origin)
    if earliest_finish(instance.expr, context, instance.arrival, (lo, hi)) is not None:
        return None
    cut = "the plan's clock" if lo > start else "the plan's horizon"
    return Reason("window", f"only {format_span(lo, hi, plan.clock)} of the window of `{reservation.name}` "
                  f"{format_span(start, end, plan.clock)} is left inside {cut}, too short for it even on an "
                  "empty cluster")


def capacity_reason(failure: AtomFailure | None, instance: Instance, plan: Plan, reservation: Reservation,
                    tried: int | None = None) -> Reason:
    """A `capacity` rejection naming the first piece that found no room; with none, what kept the pieces apart, or
    (`tried`: the search spent its budget of that many placements) that the search gave up."""
    which = f" (instance {instance.index} of every {units.format_duration(reservation.every or 0)})" \
        if instance.index else ""
    if failure is None and tried is not None:
        return Reason("capacity", f"the search tried {tried} placements of the pieces of `{reservation.name}`{which} "
                      "and found none that keeps their order and gaps on the current plan (each piece found room where "
                      "it was tried; the `milp` agent searches every placement)")
    if failure is None:
        return Reason("capacity", f"no placement of `{reservation.name}`{which} satisfies its order and gaps "
                      "on the current plan")
    task = failure.task
    message = f"`{task.label}`{which} {describe_need(task, failure.lo, failure.hi, plan.clock)}; " \
        f"{describe_room(task, failure.lo, failure.hi, plan)}"
    return Reason("capacity", message, atom=task.label)
