"""Queue placement rules, YARN Fair Scheduler style: an ordered list, the first rule that places wins.

Rules (Hadoop FairScheduler docs, "queuePlacementPolicy"):

- `specified`: the queue the application asked for; none asked (or `default`) goes on to the next rule.
- `user`: a queue named after the user, under `parent` (default `root`).
- `primaryGroup`: a queue named after the user's primary group (the first of its groups).
- `secondaryGroupExistingQueue`: the first of the user's other groups that names an existing leaf.
- `nestedUserQueue`: a queue named after the user under the queue its `nested` rule names.
- `default`: the queue in `queue` (default `root.default`).
- `reject`: refuse the application.

`create` (default true) lets a rule create a missing queue under an existing parent; when false a
missing queue passes to the next rule. Periods in user and group names become `_dot_`, and so do
those in reservation names (`reservation_queue`): `.` separates queues. A rule list
is valid only when its last rule always answers (`default`, `reject`, `user` or `primaryGroup` with
`create`, `nestedUserQueue` with `create` around a nested rule that always answers) and no rule
follows one that always answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from follower.scheduler.errors import QueueError
from follower.scheduler.queues import ROOT, QueueTree
from rdl.registry import Registry

DEFAULT_QUEUE = "root.default"
DOT = "_dot_"  # stands for `.` in a queue name made from a user, group or reservation name (YARN, YuniKorn)


@dataclass(frozen=True, slots=True)
class Rule:
    """One placement rule."""

    name: str
    create: bool = True
    parent: str = ROOT
    queue: str = DEFAULT_QUEUE
    nested: Rule | None = None

    @property
    def terminal(self) -> bool:
        """Whether this rule always places or rejects (so later rules are never reached)."""
        if self.name in ("default", "reject"):
            return True
        if self.name == "nestedUserQueue":
            return self.create and self.nested is not None and self.nested.terminal
        return self.name in ("user", "primaryGroup") and self.create


@dataclass(frozen=True, slots=True)
class Submission:
    """Who submits, with which groups (primary first), asking for which queue."""

    app_id: str
    user: str
    groups: tuple[str, ...] = ()
    queue: str | None = None


@dataclass(frozen=True, slots=True)
class Placed:
    """Where the application goes; `create` when that leaf does not exist yet."""

    path: str
    create: bool
    rule: str


@dataclass(frozen=True, slots=True)
class Refused:
    """No queue for the application, and why."""

    reason: str


def check_rules(rules: Sequence[Rule]) -> list[tuple[int, str]]:
    """Problems with a rule list as (rule index, message): unreachable rules, a non-terminal end."""
    problems = []
    for index, rule in enumerate(rules[:-1]):
        if rule.terminal:
            problems.append((index + 1, f"can never be reached: rule `{rule.name}` before it always answers"))
            break
    if not rules:
        problems.append((0, "needs at least one rule, the last one terminal (`default` or `reject`)"))
    elif not rules[-1].terminal:
        last = rules[-1]
        problems.append((len(rules) - 1, f"the last rule `{last.name}` may pass the application on; end with "
                                         "`default`, `reject`, or a `user`/`primaryGroup` rule with `create: true`"))
    return problems


def clean(name: str) -> str:
    """A user or group name as a queue name (YARN: periods become `_dot_`)."""
    return name.replace(".", DOT)


def reservation_queue(reservation: str) -> str:
    """The leaf name of a reservation's queue under the plan queue: its name, each `.` written `_dot_`."""
    return reservation.replace(".", DOT)


def reservation_of_queue(name: str) -> str:
    """The reservation a plan leaf named `name` stands for: `reservation_queue` undone (exact unless it has `_dot_`)."""
    return name.replace(DOT, ".")


class Placement:
    """An ordered list of rules applied to submissions against the current queue tree."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)

    def place(self, submission: Submission, tree: QueueTree) -> Placed | Refused:
        """The first rule's answer; every rule passing on is a refusal naming the rules tried."""
        for rule in self.rules:
            answer = _apply(rule, submission, tree)
            if answer is not None:
                return answer
        tried = ", ".join(rule.name for rule in self.rules)
        return Refused(f"no placement rule placed it (tried {tried})")


def _apply(rule: Rule, submission: Submission, tree: QueueTree) -> Placed | Refused | None:
    """The rule's answer: a queue, a refusal, or None to pass the application on to the next rule."""
    return RULES.get(rule.name)(rule, submission, tree)


def _reject(rule: Rule, submission: Submission, tree: QueueTree) -> Refused:
    return Refused("the placement rule `reject` matched")


def _secondary_group(rule: Rule, submission: Submission, tree: QueueTree) -> Placed | None:
    for group in submission.groups[1:]:
        queue = tree.find(f"{rule.parent}.{clean(group)}")
        if queue is not None and queue.is_leaf:
            return Placed(queue.path, False, rule.name)
    return None


def _targeted(rule: Rule, submission: Submission, tree: QueueTree) -> Placed | None:
    target = _target(rule, submission)
    return None if target is None else _leaf(target, rule.create, rule.name, tree)


def _target(rule: Rule, submission: Submission) -> str | None:
    if rule.name == "user":
        return f"{rule.parent}.{clean(submission.user)}"
    if rule.name == "primaryGroup":
        return f"{rule.parent}.{clean(submission.groups[0])}" if submission.groups else None
    if rule.name == "default":
        return rule.queue
    return None


def _specified(rule: Rule, submission: Submission, tree: QueueTree) -> Placed | Refused | None:
    asked = submission.queue
    if asked is None or asked in ("default",):
        return None
    if asked.startswith(".") or asked.endswith(".") or ".." in asked:
        return Refused(f"the requested queue `{asked}` is not a queue name (empty part around a `.`)")
    path = tree.normalise(asked)
    queue = tree.find(path)
    if queue is not None and not queue.is_leaf:
        return Refused(f"the requested queue `{path}` is a parent queue; applications go to leaf queues")
    return _leaf(path, rule.create, rule.name, tree)


def _nested(rule: Rule, submission: Submission, tree: QueueTree) -> Placed | None:
    if rule.nested is None:
        return None
    parent = _target(rule.nested, submission) if rule.nested.name != "specified" else submission.queue
    if parent is None:
        return None
    parent = tree.normalise(parent)
    existing = tree.find(parent)
    if existing is not None and existing.is_leaf:
        return None  # the nested rule must name a parent queue
    if existing is None and not (rule.nested.create and _creatable(parent, tree)):
        return None
    return _leaf(f"{parent}.{clean(submission.user)}", rule.create, rule.name, tree)


def _leaf(path: str, create: bool, rule: str, tree: QueueTree) -> Placed | None:
    try:
        path = tree.normalise(path)
    except QueueError:
        return None
    queue = tree.find(path)
    if queue is not None:
        return Placed(path, False, rule) if queue.is_leaf else None
    if create and _creatable(path, tree):
        return Placed(path, True, rule)
    return None


def _creatable(path: str, tree: QueueTree) -> bool:
    """Whether the nearest existing ancestor of `path` is a parent queue (leaves never grow children here)."""
    parts = path.split(".")
    for end in range(len(parts) - 1, 0, -1):
        ancestor = tree.find(".".join(parts[:end]))
        if ancestor is not None:
            return not ancestor.is_leaf
    return True


RULES: Registry[Callable[[Rule, Submission, QueueTree], Placed | Refused | None]] = Registry.of("placement rule", {
    "specified": _specified, "user": _targeted, "primaryGroup": _targeted,
    "secondaryGroupExistingQueue": _secondary_group, "nestedUserQueue": _nested, "default": _targeted,
    "reject": _reject,
})
