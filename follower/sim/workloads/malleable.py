"""Malleable jobs: a job's tasks as the reservation Rayon's job managers would ask for, and even task splits.

A malleable job (MapReduce-like) can run its tasks on however many executors it is given, so it
reserves its work, not a gang: `atom(b = one executor, g = 1, h = its executors, l = one task,
w = its tasks' work)`, the RDL spec's MapReduce form. The planner rounds a lease up to whole plan
steps and a window inwards, so the lease is the longest declared task in whole steps and each task
has one (`w = tasks × l`). When the window cannot hold `ceil(tasks / h)` such leases back to back,
the atom holds the declared work instead, in leases shortened (down to one step) until the window
can: the reservation then always fits its window on an empty cluster, as a rigid job's does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rdl.tree import Atom, Resources

EPSILON = 1e-9  # float error in products of seconds: 300.0000000001 s is still five one-minute steps


def window_steps(submit: float, deadline: float, step: float) -> int:
    """Whole plan steps inside `[submit, deadline]` (seconds after the plan's origin), rounded inwards as the
    planner does."""
    return math.floor(deadline / step) - math.ceil(submit / step)


def lease_steps(task_steps: int, declared_steps: int, window: int) -> int:
    """The longest lease, at most one task long, whose back-to-back run of the declared time fits the window."""
    for steps in range(max(1, task_steps), 1, -1):
        if math.ceil(declared_steps / steps) * steps <= window:
            return steps
    return 1


def task_atom(tasks: Sequence[float], executors: int, bundle: Resources, declared: float, runtime: float,
              window: int, step: float) -> Atom:
    """The atom of a job whose `tasks` (true seconds) run on up to `executors` executors of `bundle`.

    The job declares `declared` seconds where it truly runs `runtime`, so it declares each task
    `declared / runtime` times its true length. `window` is its window in whole plan steps of `step`.
    """
    width = min(executors, len(tasks))
    estimate = declared / runtime
    task_steps = max(1, math.ceil(max(tasks) * estimate / step - EPSILON))
    if math.ceil(len(tasks) / width) * task_steps <= window:  # a lease per task: w = tasks × l
        return Atom(bundle=bundle, work=len(tasks) * task_steps * step, gang=1, parallelism=width,
                    lease=float(task_steps * step))
    # Too tight for a whole lease per task (or tasks too uneven): reserve the work itself, in leases that one
    # executor can run back to back within the window, capped at what `width` executors do in the declared
    # time so that the atom's shortest run (ceil(leases / h) leases in a row) never outgrows the window.
    declared_steps = max(1, math.ceil(declared / step - EPSILON))
    lease = lease_steps(task_steps, declared_steps, window)
    room = width * math.ceil(declared_steps / lease) * lease * step
    work = min(float(math.ceil(sum(tasks) * estimate - EPSILON)), room)
    return Atom(bundle=bundle, work=work, gang=1, parallelism=width, lease=float(lease * step))


def even_tasks(runtime: float, executors: int, task_length: float) -> tuple[float, ...]:
    """`runtime` on each of `executors` executors cut into equal tasks of about `task_length` seconds."""
    per_executor = max(1, round(runtime / task_length))
    return (runtime / per_executor,) * (executors * per_executor)
