"""How a scenario configures the simulated scheduler and follower: sensible defaults, the scenario's own on top.

Default queues: the plan queue (`root.plan`) holds one leaf per active reservation and the
plan's default queue (where the applications of an ended reservation go on running); best-effort
work, rejected production jobs and, with `--agent none`, every job go to `root.besteffort`, which
is guaranteed nothing and may use everything idle. So a reservation's guarantee is always
recoverable by preemption (30 s after it falls short): every borrowed container is fair game,
whereas a guaranteed default queue would shield containers that only fragmentation made excess.
The application policy (`--policy`) sorts the applications of the best-effort queue and of every
queue under the plan queue. `userfair` is the user-fair baseline of the UWFQ comparison, made of
queues rather than a sort: one best-effort leaf per user (created on first use), the users' leaves
sharing equally (fair among siblings, equal weights) and each user's jobs sorted `fair`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from follower.follow.follower import PLAN_QUEUE, Follower, FollowerError
from follower.scheduler.policies import APP_POLICIES
from follower.sim.baselines import Split
from follower.sim.scenario import Scenario, Section
from follower.sim.workloads.fields import MAX_COUNT
from rdl.config import ConfigReader
from rdl.errors import RDLError, RDLErrors, Span, did_you_mean, shown

BEST_EFFORT = "besteffort"  # below root
BEST_EFFORT_QUEUE = f"root.{BEST_EFFORT}"
STATIC_QUEUE = "root.production"  # the baselines' production queue (follower.sim.baselines)
USER_FAIR = "userfair"
SIMULATION_POLICIES = (*APP_POLICIES, USER_FAIR)
FOLLOWER_KEYS = ("plan_queue", "default_queue", "on_expiry", "round_steps", "max_policy")
DEFAULT_FOLLOWER: dict[str, Any] = {"plan_queue": PLAN_QUEUE, "default_queue": "default", "on_expiry": "move",
                                    "round_steps": 1, "max_policy": "strict"}  # the follower's own default


def scheduler_config(scenario: Scenario, split: Split | None = None) -> dict[str, Any]:
    """The scheduler mapping: the scenario's `scheduler:` keys over the defaults, the policy on the plan's queues;
    with a baseline's `split`, a production queue and best effort guaranteed what it says (follower.sim.baselines)."""
    follower = {**DEFAULT_FOLLOWER, **dict(scenario.follower.data)}
    plan_queue = str(follower["plan_queue"])
    config: dict[str, Any] = {
        "queues": {BEST_EFFORT: {}},  # the plan queue is added below, with its parents
        "placement": [{"rule": "specified", "create": False}, {"rule": "default", "queue": BEST_EFFORT_QUEUE}],
        "preemption": {"enabled": True, "delay": "30s"},
        "plan_queue": plan_queue,
        "default_queue": str(follower["default_queue"]),
    }
    given = copy.deepcopy(dict(scenario.scheduler.data))
    config["queues"].update(given.pop("queues", None) or {})  # the scenario's queues join the default ones
    config.update(given)
    policy = "fair" if scenario.policy == USER_FAIR else scenario.policy
    template = _plan_entry(config, plan_queue).setdefault("child_template", {})
    template["policy"] = policy
    best_effort = config["queues"].get(BEST_EFFORT)
    if scenario.policy == USER_FAIR:
        config["queues"][BEST_EFFORT] = {"parent": True, "child_template": {"policy": policy}}
        config["placement"] = [{"rule": "specified", "create": False},
                               {"rule": "user", "parent": BEST_EFFORT_QUEUE, "create": True}]
    elif isinstance(best_effort, dict):
        best_effort["policy"] = policy
    if split is not None:
        config["queues"][STATIC_QUEUE.rsplit(".", 1)[1]] = {"guaranteed": dict(split.production), "policy": policy}
        if split.best_effort and isinstance(config["queues"].get(BEST_EFFORT), dict):
            config["queues"][BEST_EFFORT]["guaranteed"] = dict(split.best_effort)
    return config


def _plan_entry(config: dict[str, Any], plan_queue: str) -> dict[str, Any]:
    """The plan queue's settings inside `queues` (made, with its parents, if the scenario's queues lack it)."""
    level: dict[str, Any] = config.setdefault("queues", {})
    parts = plan_queue.split(".")[1:]
    for depth, part in enumerate(parts):
        node: dict[str, Any] = level.setdefault(part, {})
        node["parent"] = True
        if depth == len(parts) - 1:
            return node
        level = node.setdefault("queues", {})
    raise FollowerError(f"plan queue `{plan_queue}` is not below root")


def follower_from(scenario: Scenario, replan: Callable[[Any], object] | None = None) -> Follower:
    """The follower the scenario's `follower:` section asks for (FollowerError naming a bad key)."""
    given = dict(scenario.follower.data)
    for key in given:
        if key not in FOLLOWER_KEYS:
            hint = did_you_mean(key, FOLLOWER_KEYS)
            raise FollowerError(f"{scenario.file}: unknown follower setting `{key}`",
                                hint or f"one of {', '.join(FOLLOWER_KEYS)}")
    settings = {**DEFAULT_FOLLOWER, **given}
    steps = settings["round_steps"]
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_COUNT:
        raise RDLErrors([RDLError(_where(scenario.follower, "round_steps"), "`round_steps` must be a whole number of "
                                  f"plan steps from 1 to {MAX_COUNT:,}, got `{shown(steps)}`",
                                  hint="for example `round_steps: 1`")])
    return Follower(plan_queue=str(settings["plan_queue"]), default_queue=str(settings["default_queue"]),
                    on_expiry=str(settings["on_expiry"]), round_steps=steps,
                    max_policy=str(settings["max_policy"]), replan=replan)


def _where(section: Section, key: str) -> Span:
    """Where a key's value is written in a scenario section (the file alone when its node is not known)."""
    if section.node is None:
        return Span(section.file)
    return ConfigReader(section.file).locator(section.node, "follower")(f"follower.{key}", False)
