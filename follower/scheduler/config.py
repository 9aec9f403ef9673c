"""The scheduler's configuration, read from a plain mapping (as loaded from YAML).

    queues:                       # children of `root`, by name
      plan: {guaranteed: {memory: 2TiB, vcores: 1024}, parent: true, child_template: {policy: fifo}}
      besteffort:
        weight: 2
        max: {memory: 4TiB, vcores: 2048}
        queues:
          etl: {policy: stateaware, max_running_apps: 10}
          adhoc: {policy: uwfq, policy_options: {resource: vcores, grace_period: 10s, user_weights: {ops: 2}}}
    placement:                    # YARN Fair Scheduler rules, first match wins
      - {rule: specified, create: false}
      - {rule: nestedUserQueue, nested: {rule: primaryGroup, create: false}}
      - {rule: default, queue: root.besteffort.adhoc}
    node_policy: {type: binpacking, weights: {memory: 1, vcores: 4}}    # or just `fair`
    preemption: {enabled: true, delay: 30s, model: yarn}   # model yunikorn: the delay counts per ask, retry 15s
    stateaware: {starting_timeout: 5m}
    user_limits: {max_running_apps: 20, users: {alice: 50}}
    plan_queue: root.plan
    default_queue: default        # the plan's default leaf (`plan_queue.default`): no reservation's queue

Queue keys: `guaranteed`, `max` (resource maps: memory with units, counts plain), `weight`,
`policy` (fifo, fair, stateaware, drf, uwfq), `priority_sort` (bool, default true),
`max_running_apps`, `parent` (bool), `child_template` (settings for queues created below it),
`policy_options`, `queues`. Every mistake is reported with its key path, all at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from follower.scheduler.errors import ConfigError, Problem
from follower.scheduler.limits import UserLimits
from follower.scheduler.nodes import DEFAULT_WEIGHTS, NODE_POLICIES
from follower.scheduler.placement import DEFAULT_QUEUE, RULES, Rule, check_rules
from follower.scheduler.policies import APP_POLICIES, get_policy
from follower.scheduler.queues import ROOT, QueueSettings
from follower.scheduler.resources import Resources
from rdl import units
from rdl.errors import did_you_mean
from rdl.registry import UnknownName

TOP_KEYS = ("queues", "placement", "node_policy", "preemption", "stateaware", "user_limits", "plan_queue",
            "default_queue")
QUEUE_KEYS = ("guaranteed", "max", "weight", "policy", "priority_sort", "max_running_apps", "parent",
              "child_template", "policy_options", "queues")
RULE_KEYS = ("rule", "create", "parent", "queue", "nested")
DEFAULT_STARTING_TIMEOUT = 300.0  # five minutes, as the YuniKorn design fixes it
DEFAULT_PREEMPTION_DELAY = 30.0
YARN, YUNIKORN = "yarn", "yunikorn"
PREEMPTION_MODELS = (YARN, YUNIKORN)  # when the delay starts: the queue starved (YARN), each ask made (YuniKorn)
DEFAULT_PREEMPTION_RETRY = 15.0  # yunikorn-core's `preemptAttemptFrequency` (1.4 to 1.9): an ask tries again after it
DEFAULT_PLAN_DEFAULT_QUEUE = "default"  # as the plan follower names it (follower.follow.follower.DEFAULT_QUEUE)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Everything the scheduler is configured with; `queues` lists (path, settings) parents first."""

    queues: tuple[tuple[str, QueueSettings], ...] = ()
    placement: tuple[Rule, ...] = (Rule("specified", create=False), Rule("default"))
    node_policy: str = "fair"
    node_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    preemption: bool = True
    preemption_delay: float = DEFAULT_PREEMPTION_DELAY
    preemption_model: str = YARN
    preemption_retry: float = DEFAULT_PREEMPTION_RETRY
    starting_timeout: float = DEFAULT_STARTING_TIMEOUT
    user_limits: UserLimits = field(default_factory=UserLimits)
    plan_queue: str = "root.plan"
    default_queue: str = DEFAULT_PLAN_DEFAULT_QUEUE


def load_config(data: Mapping[str, Any] | None, where: str = "scheduler") -> SchedulerConfig:
    """A SchedulerConfig from a plain mapping; ConfigError listing every mistake with its key path."""
    reader = _Reader()
    config = reader.config(data or {}, where)
    if reader.problems:
        raise ConfigError(reader.problems)
    return config


class _Reader:
    """Reads one mapping, collecting problems instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def keys(self, data: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            self.bad(path, f"must be a mapping, got {type(data).__name__}")
            return {}
        for key in data:
            if key not in allowed:
                hint = did_you_mean(str(key), list(allowed))
                expected = f" ({hint})" if hint else f"; expected one of {', '.join(allowed)}"
                self.bad(f"{path}.{key}", "unknown key" + expected)
        return data

    def config(self, data: Mapping[str, Any], where: str) -> SchedulerConfig:
        data = self.keys(data, where, TOP_KEYS)
        queues: list[tuple[str, QueueSettings]] = []
        self.queue_tree(data.get("queues", {}), f"{where}.queues", ROOT, queues)
        policy, weights = self.node_policy(data.get("node_policy", "fair"), f"{where}.node_policy")
        enabled, delay, model, retry = self.preemption(data.get("preemption", {}), f"{where}.preemption")
        plan_queue, default_queue = self.plan_queues(data, where)
        return SchedulerConfig(
            queues=tuple(queues),
            placement=self.placement(data.get("placement"), f"{where}.placement"),
            node_policy=policy, node_weights=weights, preemption=enabled, preemption_delay=delay,
            preemption_model=model, preemption_retry=retry,
            starting_timeout=self.starting_timeout(data.get("stateaware", {}), f"{where}.stateaware"),
            user_limits=self.user_limits(data.get("user_limits", {}), f"{where}.user_limits"),
            plan_queue=plan_queue, default_queue=default_queue,
        )

    def plan_queues(self, data: Mapping[str, Any], where: str) -> tuple[str, str]:
        """The plan queue's path and the name of the plan's default leaf below it."""
        plan_queue = data.get("plan_queue", "root.plan")
        if not isinstance(plan_queue, str) or not plan_queue:
            self.bad(f"{where}.plan_queue", "must be a queue path such as `root.plan`")
            plan_queue = "root.plan"
        plan_queue = plan_queue if plan_queue.startswith(ROOT + ".") else f"{ROOT}.{plan_queue}"
        default_queue = data.get("default_queue", DEFAULT_PLAN_DEFAULT_QUEUE)
        if not isinstance(default_queue, str) or not default_queue or "." in default_queue:
            self.bad(f"{where}.default_queue", f"must be one queue name without `.` (the leaf {plan_queue}.NAME), "
                                               f"got {default_queue!r}")
            default_queue = DEFAULT_PLAN_DEFAULT_QUEUE
        return plan_queue, default_queue

    def queue_tree(self, data: Any, path: str, parent: str, out: list[tuple[str, QueueSettings]]) -> None:
        if not isinstance(data, Mapping):
            self.bad(path, "must map queue names to their settings")
            return
        for name, settings in data.items():
            if not isinstance(name, str) or not name or "." in name:
                self.bad(f"{path}.{name}", "a queue name is a non-empty word without `.`")
                continue
            here = f"{path}.{name}"
            queue = self.queue(settings if settings is not None else {}, here)
            children = settings.get("queues", {}) if isinstance(settings, Mapping) else {}
            if children:
                queue = _with_parent(queue)
            out.append((f"{parent}.{name}", queue))
            if children:
                self.queue_tree(children, f"{here}.queues", f"{parent}.{name}", out)

    def queue(self, data: Any, path: str) -> QueueSettings:
        data = self.keys(data, path, QUEUE_KEYS)
        guaranteed = self.resources(data.get("guaranteed", {}), f"{path}.guaranteed")
        maximum = self.resources(data["max"], f"{path}.max") if data.get("max") is not None else None
        if maximum is not None and not guaranteed.fits_in(maximum):
            self.bad(f"{path}.guaranteed", f"{guaranteed} is more than the queue's max {maximum}")
        policy = str(data.get("policy", "fifo"))
        options = data.get("policy_options", {})
        try:
            ordering = get_policy(policy)
            if not isinstance(options, Mapping):
                self.bad(f"{path}.policy_options", "must be a mapping")
                options = {}
            else:
                for key in options:
                    if key not in ordering.options:
                        hint = did_you_mean(str(key), list(ordering.options))
                        known = ", ".join(ordering.options) or "none"
                        self.bad(f"{path}.policy_options.{key}", f"not an option of `{policy}` "
                                 + (f"({hint})" if hint else f"(its options: {known})"))
                for key, message in ordering.check_options(options):
                    self.bad(f"{path}.policy_options.{key}", message)
        except ValueError as exc:
            self.bad(f"{path}.policy", str(exc))
        template = data.get("child_template")
        return QueueSettings(
            guaranteed=guaranteed, maximum=maximum,
            weight=self.number(data.get("weight", 1.0), f"{path}.weight", positive=True),
            policy=policy if policy in APP_POLICIES else "fifo",
            priority_sort=self.flag(data.get("priority_sort", True), f"{path}.priority_sort"),
            max_running_apps=self.count(data.get("max_running_apps"), f"{path}.max_running_apps"),
            parent=self.flag(data.get("parent", False), f"{path}.parent"),
            child_template=self.queue(template, f"{path}.child_template") if template is not None else None,
            options=dict(options) if isinstance(options, Mapping) else {},
        )

    def resources(self, data: Any, path: str) -> Resources:
        if not isinstance(data, Mapping):
            self.bad(path, "must map resource names to amounts, such as {memory: 8GiB, vcores: 4}")
            return Resources()
        values = {}
        for name, amount in data.items():
            try:
                value = float(amount) if isinstance(amount, int | float) and not isinstance(amount, bool) \
                    else units.parse_quantity(str(name), str(amount))
            except ValueError as exc:
                self.bad(f"{path}.{name}", str(exc))
                continue
            if value < 0:
                self.bad(f"{path}.{name}", f"must not be negative, got {amount}")
                continue
            values[str(name)] = value
        return Resources(values)

    def number(self, value: Any, path: str, positive: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or (positive and value <= 0) or value < 0:
            self.bad(path, f"must be a {'positive' if positive else 'non-negative'} number, got {value!r}")
            return 1.0
        return float(value)

    def count(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.bad(path, f"must be a whole number of applications (or null for no limit), got {value!r}")
            return None
        return value

    def flag(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            self.bad(path, f"must be true or false, got {value!r}")
            return False
        return value

    def duration(self, value: Any, path: str, default: float) -> float:
        try:
            if isinstance(value, bool):
                raise ValueError(f"`{value}` is not a duration")
            seconds = float(value) if isinstance(value, int | float) else units.parse_duration(str(value))
        except ValueError as exc:
            self.bad(path, str(exc))
            return default
        if seconds < 0:
            self.bad(path, f"must not be negative, got {value}")
            return default
        return seconds

    def node_policy(self, data: Any, path: str) -> tuple[str, Mapping[str, float]]:
        if isinstance(data, str):
            data = {"type": data}
        data = self.keys(data, path, ("type", "weights"))
        kind = str(data.get("type", "fair"))
        try:
            NODE_POLICIES.check(kind)
        except UnknownName as unknown:
            self.bad(f"{path}.type", str(unknown))
            kind = "fair"
        weights = data.get("weights", DEFAULT_WEIGHTS)
        if not isinstance(weights, Mapping) or not weights:
            self.bad(f"{path}.weights", "must map resource names to non-negative weights")
            return kind, dict(DEFAULT_WEIGHTS)
        return kind, {str(name): self.number(w, f"{path}.weights.{name}") for name, w in weights.items()}

    def preemption(self, data: Any, path: str) -> tuple[bool, float, str, float]:
        data = self.keys(data, path, ("enabled", "delay", "model", "retry"))
        model = data.get("model", YARN)
        if model not in PREEMPTION_MODELS:
            hint = did_you_mean(str(model), list(PREEMPTION_MODELS))
            self.bad(f"{path}.model", f"unknown preemption model {model!r}; use one of {', '.join(PREEMPTION_MODELS)}"
                     + (f" ({hint})" if hint else ""))
            model = YARN
        retry = self.duration(data.get("retry", DEFAULT_PREEMPTION_RETRY), f"{path}.retry", DEFAULT_PREEMPTION_RETRY)
        if retry <= 0:
            self.bad(f"{path}.retry", f"must be a positive duration, got {data.get('retry')!r}")
            retry = DEFAULT_PREEMPTION_RETRY
        return (self.flag(data.get("enabled", True), f"{path}.enabled"),
                self.duration(data.get("delay", DEFAULT_PREEMPTION_DELAY), f"{path}.delay", DEFAULT_PREEMPTION_DELAY),
                str(model), retry)

    def starting_timeout(self, data: Any, path: str) -> float:
        data = self.keys(data, path, ("starting_timeout",))
        value = data.get("starting_timeout", DEFAULT_STARTING_TIMEOUT)
        return self.duration(value, f"{path}.starting_timeout", DEFAULT_STARTING_TIMEOUT)

    def user_limits(self, data: Any, path: str) -> UserLimits:
        data = self.keys(data, path, ("max_running_apps", "users"))
        users = data.get("users", {})
        if not isinstance(users, Mapping):
            self.bad(f"{path}.users", "must map user names to a max_running_apps")
            users = {}
        return UserLimits(self.count(data.get("max_running_apps"), f"{path}.max_running_apps"),
                          {str(user): self.count(n, f"{path}.users.{user}") for user, n in users.items()})

    def placement(self, data: Any, path: str) -> tuple[Rule, ...]:
        if data is None:
            return SchedulerConfig().placement
        if not isinstance(data, list):
            self.bad(path, "must be a list of rules, such as [{rule: specified}, {rule: default}]")
            return SchedulerConfig().placement
        rules = [self.rule(item, f"{path}[{index}]") for index, item in enumerate(data)]
        for index, message in check_rules(rules):
            self.bad(f"{path}[{index}]" if data else path, message)
        return tuple(rules)

    def rule(self, data: Any, path: str) -> Rule:
        if isinstance(data, str):
            data = {"rule": data}
        data = self.keys(data, path, RULE_KEYS)
        name = str(data.get("rule", ""))
        try:
            RULES.check(name)
        except UnknownName as unknown:
            self.bad(f"{path}.rule", str(unknown))
            return Rule("reject")
        nested = None
        if name == "nestedUserQueue":
            if "nested" not in data:
                self.bad(f"{path}.nested", "`nestedUserQueue` needs a `nested` rule naming the parent queue")
            else:
                nested = self.rule(data["nested"], f"{path}.nested")
        parent = str(data.get("parent", ROOT))
        queue = str(data.get("queue", DEFAULT_QUEUE))
        return Rule(name, self.flag(data.get("create", True), f"{path}.create"),
                    parent if parent.startswith(ROOT) else f"{ROOT}.{parent}",
                    queue if queue.startswith(ROOT) else f"{ROOT}.{queue}", nested)


def _with_parent(settings: QueueSettings) -> QueueSettings:
    return replace(settings, parent=True)
