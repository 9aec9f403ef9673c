"""When the simulated nodes fail: the scenario's listed failures, and seeded random ones at `rate` per node per day.

The engine does what a failure does (its containers are lost, the node comes back after `repair`); this module
only says when, drawing from the simulation's one random generator so that a seed gives the same failures.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from follower.sim.scenario import Failures

DAY = 86400.0


def schedule_failures(failures: Failures, rng: random.Random, now: Callable[[], float],
                      at: Callable[[float, Callable[[], None]], None], fail: Callable[[str, float], None],
                      live: Callable[[], set[str]], running: Callable[[], bool]) -> None:
    """Schedule the listed failures with `at`, and the first random one if failures have a rate; each random
    failure schedules the next, among the nodes then `live`, for as long as the simulation is `running`."""
    for planned in failures.events:
        at(planned.at, partial(fail, planned.node, planned.repair))
    if failures.rate <= 0 or not live():
        return

    def next_time() -> float:
        return now() + rng.expovariate(failures.rate * max(1, len(live())) / DAY)

    def random_failure() -> None:
        nodes = sorted(live())
        if nodes and running():
            fail(rng.choice(nodes), failures.repair)
            at(next_time(), random_failure)

    at(next_time(), random_failure)
