"""A hypothesis state machine over the scheduler: submit, allocate, finish, advance time, change capacity.

Invariants after every step: no node over its capacity, no queue above its max, usage sums agree,
and every reservation queue that asks gets its guarantee within the preemption delay (the machine
keeps the guarantees feasible: they add up to less than the smallest cluster it allows, and every
container is one unit, so fragmentation cannot defeat them).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from follower.scheduler import Resources, Scheduler
from follower.scheduler.resources import EPSILON

NODE = {"memory": 4096.0, "vcores": 4.0}
UNIT = {"memory": 1024.0, "vcores": 1.0}
DELAY = 20.0
RESERVATIONS = {"r1": 4.0, "r2": 3.0}  # 7 vcores guaranteed; the cluster never drops below 2 nodes (8)
QUEUES = ["root.plan.r1", "root.plan.r2", "root.besteffort.etl", "root.besteffort.adhoc"]


class SchedulerMachine(RuleBasedStateMachine):
    """Drives one scheduler as a discrete-event simulator would."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduler = Scheduler()
        self.now = 0.0
        self.apps = 0
        self.nodes = 0

    @initialize(policy=st.sampled_from(["fifo", "fair", "stateaware", "drf", "uwfq"]),
                node_policy=st.sampled_from(["fair", "binpacking"]))
    def build(self, policy: str, node_policy: str) -> None:
        self.scheduler = Scheduler({
            "queues": {
                "plan": {"parent": True, "child_template": {"policy": "fifo"}},
                "besteffort": {"max": {"memory": 10240, "vcores": 10}, "queues": {
                    "etl": {"policy": policy, "max": {"memory": 5120, "vcores": 5}},
                    "adhoc": {"policy": policy}}},
            },
            "node_policy": node_policy,
            "preemption": {"delay": DELAY},
            "stateaware": {"starting_timeout": "60s"},
            "placement": [{"rule": "specified", "create": False}, {"rule": "reject"}],
        })
        for name, vcores in RESERVATIONS.items():
            self.scheduler.ensure_queue(f"root.plan.{name}", Resources({"memory": 1024 * vcores, "vcores": vcores}))
        for _ in range(3):
            self.add_node()

    def tick(self) -> None:
        self.scheduler.preempt(self.now)
        self.scheduler.schedule(self.now)

    @rule(queue=st.sampled_from(QUEUES), count=st.integers(1, 6), work=st.floats(1.0, 500.0))
    def submit(self, queue: str, count: int, work: float) -> None:
        self.apps += 1
        app_id = f"app{self.apps}"
        reservation = queue.rsplit(".", 1)[1] if queue.startswith("root.plan.") else None
        self.scheduler.submit(app_id, f"user{self.apps % 3}", self.now, queue=None if reservation else queue,
                              reservation=reservation, estimated_work=work)
        self.scheduler.add_ask(app_id, "work", UNIT, self.now, count=count)
        self.tick()

    @rule(data=st.data())
    def finish_container(self, data: st.DataObject) -> None:
        if self.scheduler.containers:
            container = data.draw(st.sampled_from(sorted(self.scheduler.containers)))
            self.scheduler.release(container, self.now)
            self.tick()

    @rule(data=st.data())
    def complete_application(self, data: st.DataObject) -> None:
        live = sorted(app_id for app_id, app in self.scheduler.apps.items() if not app.state.finished)
        if live:
            self.scheduler.complete_application(data.draw(st.sampled_from(live)), self.now)
            self.tick()

    @rule(seconds=st.floats(0.5, 100.0))
    def advance_time(self, seconds: float) -> None:
        """Move the clock on, stopping at the scheduler's next event as a simulator would."""
        target = self.now + seconds
        while True:
            upcoming = self.scheduler.next_event_time()
            if upcoming is None or upcoming > target:
                break
            self.now = max(self.now, upcoming)
            self.tick()
        self.now = target
        self.tick()

    @rule()
    def add_node(self) -> None:
        self.nodes += 1
        self.scheduler.add_node(f"node{self.nodes:03d}", NODE, self.now)
        self.tick()

    @precondition(lambda self: len(self.scheduler.nodes.by_name) > 2)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.scheduler.nodes.by_name)))
        self.scheduler.remove_node(name, self.now)
        self.tick()

    @invariant()
    def no_node_is_over_capacity(self) -> None:
        for node in self.scheduler.nodes.by_name.values():
            assert node.used.fits_in(node.capacity), node.name
            assert node.used == sum((c.resources for c in node.containers.values()), Resources())

    @invariant()
    def no_queue_is_above_its_max(self) -> None:
        for queue in self.scheduler.tree.queues():
            if queue.maximum is not None:
                assert queue.used.fits_in(queue.maximum), queue.path
            held = [c.resources for c in self.scheduler.containers.values()
                    if c.queue == queue.path or c.queue.startswith(queue.path + ".")]
            assert queue.used == sum(held, Resources()), queue.path

    @invariant()
    def reservation_queues_get_their_guarantee_within_the_preemption_delay(self) -> None:
        for path, since in self.scheduler.starved_since.items():
            queue = self.scheduler.tree.get(path)
            assert self.now - since < DELAY - EPSILON, (
                f"{path} below its guarantee {queue.guaranteed} (uses {queue.used}) since {since}, now {self.now}")


SchedulerMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                                              suppress_health_check=[HealthCheck.too_slow])
test_scheduler_state_machine = SchedulerMachine.TestCase
