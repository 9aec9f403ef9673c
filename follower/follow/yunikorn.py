"""The plan's queues as Apache YuniKorn queue configuration (`queues.yaml`), one document per change point.

A document is a whole `queues.yaml`: `partitions` → the partition (`default`) → `queues` → `root`
→ ... → the plan queue (a parent, guaranteed the plan's capacity now, no max) → its default queue
and one leaf per active reservation, each with `resources: {guaranteed, max}` and
`properties: {application.sort.policy: ...}`. Given a base configuration (the cluster's own
`queues.yaml`, with its best-effort queues), the plan queue's subtree is put into it, replacing
the one already there; everything else in the base is kept as it was.

YuniKorn's rules the documents keep (yunikorn-site `user_guide/queue_config.md`, yunikorn-core
`configvalidator.go`): resource names `vcore` (from the plan's `vcores`) and `memory` in bytes
(from the plan's MiB); `vcore` may be written in millicores (`1500m`); the root queue has no
resources; a queue's guaranteed is at most its max; the children's guaranteed resources add up to
at most their parent's; queue names are 1-64 characters of `[a-zA-Z0-9_-]` (the strictest of the
1.x releases). Quantities are rounded down, so a sum never exceeds its parent.

One YuniKorn behaviour to know: a max of all zeros is ignored (the core keeps a max only if some
quantity in it is above zero: `Queue.setResources`), and a resource a max does not name is not limited.
So a queue whose max is zero — a reservation at its window's start under the `strict` max policy, or the
default queue when the reservations hold everything — is written with the closed form `CLOSED`: every
resource at zero, `pods: 0` (the Kubernetes shim asks one `pods` per pod, so even a pod that requests
nothing is refused) and `memory: 1` (one byte: the positive quantity that makes YuniKorn keep the max,
and room for no pod). yunikorn-core 1.4.0 and 1.9.0's own queue objects confirm it keeps that max and
refuses every ask under it, where it lets an all-zero max through (tests/peers/yunikorn/maxform).

`on_expiry: kill` (given `ended`, the reservations whose window closed a moment ago) is YuniKorn 1.9's quota
preemption: a queue whose max is lowered below what it holds, with the queue property `quota.preemption.delay`,
has its pods preempted once the delay has passed (yunikorn-core `Queue.setPreemptionTime`, `quota_preemptor.go`;
the partition's `preemption.quotapreemptionenabled`, which the document then sets). The ended queue stays in the
document with the max `ENDED`: nothing of the plan's resources, `pods: 0`, and one `EXPIRY_MARK`, a resource no
pod asks for. The mark is what lets the max reach zero: the closed form's one byte would leave one pod running
(the preemptor frees only what is above the max), and an all-zero max is ignored. YuniKorn preempts only for a
max that was lowered, every quantity at most what it was, so under `kill` every reservation's max carries the mark
from its window's start (a pod never asks for it: it limits nothing).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any as AnyType

import yaml

from follower.follow.follower import MEBIBYTE, FollowerError, queue_name
from follower.follow.rounds import QueueTarget, Round
from rdl import config, units

SORT_POLICIES = ("fifo", "fair", "stateaware")  # stateaware: see `sort_policy_for`
DEFAULT_SORT_POLICY = "fifo"
DEFAULT_VERSION = "1.9"  # the newest yunikorn-core release the documents are checked against (tests/peers/yunikorn)
VERSION = re.compile(r"^1\.(\d+)(?:\.\d+)?$")
DEFAULT_PARTITION = "default"
RESOURCE_NAMES = {"vcores": "vcore", units.MEMORY: units.MEMORY}  # plan name -> YuniKorn name (others: as is)
QUEUE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SORT_POLICY = "application.sort.policy"
PODS = "pods"  # what the Kubernetes shim adds to every pod's ask, one per pod
CLOSED = {units.MEMORY: 1, PODS: 0}  # a max YuniKorn keeps that admits nothing (with the plan's resources at 0)
EXPIRY_MARK = "rayon.io/expiry"  # under on_expiry kill: in every reservation's max, 1 (above)
ENDED = {PODS: 0, EXPIRY_MARK: 1}  # an ended reservation's max under kill (with the plan's resources at 0)
QUOTA_DELAY = "quota.preemption.delay"  # YuniKorn 1.9's queue property: how long a queue may stay over a lowered max
KILL_DELAY = "1s"  # the shortest YuniKorn takes (a positive Go duration): its quota loop then acts within a second


def quantities(resources: Mapping[str, float], names: Mapping[str, str] | None = None) -> dict[str, int | str]:
    """A plan resource vector in YuniKorn's names and units, rounded down: bytes, whole or milli vcores, counts."""
    renamed = {**RESOURCE_NAMES, **(names or {})}
    out: dict[str, int | str] = {}
    for name, value in resources.items():
        key = renamed.get(name, name)
        if name == units.MEMORY:
            out[key] = _floor(value * MEBIBYTE)
        elif key == "vcore":
            milli = _floor(value * 1000)
            out[key] = milli // 1000 if milli % 1000 == 0 else f"{milli}m"
        else:
            out[key] = _floor(value)
    return out


def sort_policy_for(policy: str, version: str = DEFAULT_VERSION) -> tuple[str, str | None]:
    """The application sort policy to write for YuniKorn `version` (1.x), and a warning when it is not `policy`.

    `stateaware` is YuniKorn's drip feed of one starting application at a time. It is deprecated in 1.5 (still
    honoured, with a warning in the scheduler's log) and only an alias of fifo from 1.6 on: for 1.6 and later
    the export writes `fifo`, which is what that scheduler would do, and says so."""
    if policy not in SORT_POLICIES:
        raise FollowerError(f"YuniKorn has no application sort policy `{policy}`; choose one of "
                            f"{', '.join(SORT_POLICIES)}")
    match = VERSION.match(version.strip())
    if match is None:
        raise FollowerError(f"`{version}` is not a YuniKorn release; give one such as 1.4 or {DEFAULT_VERSION}")
    minor = int(match.group(1))
    if policy != "stateaware" or minor < 5:
        return policy, None
    if minor == 5:
        return policy, (f"the stateaware sort policy is deprecated in YuniKorn {version} (still honoured, with a "
                        "warning in its log) and only an alias of fifo from 1.6 on")
    return "fifo", (f"YuniKorn {version} has no stateaware sort policy (from 1.6 on it is an alias of fifo): the "
                    "documents say fifo; for a drip feed of one starting application at a time target 1.5 or older")


def plan_queue_config(round: Round, sort_policy: str = DEFAULT_SORT_POLICY, names: Mapping[str, str] | None = None,
                      ended: Sequence[str] | None = None) -> dict[str, AnyType]:
    """The plan queue's subtree at one round: the parent and its leaves (default queue first, then reservations);
    `ended` (on_expiry kill): these ended reservations' queues too, closed, and every reservation's max marked."""
    if sort_policy not in SORT_POLICIES:
        raise FollowerError(f"YuniKorn has no application sort policy `{sort_policy}`; choose one of "
                            f"{', '.join(SORT_POLICIES)}")  # the policy as written (sort_policy_for chose it)
    kill = ended is not None
    leaves = [_leaf(target, sort_policy, names, kill) for target in (round.default, *round.reservations)]
    open_now = {target.reservation for target in round.reservations}
    zeros = {key: 0 for key in quantities(round.plan.guaranteed, names)}
    leaves += [{"name": _name(queue_name(name), f"reservation `{name}`'s queue"),
                "resources": {"guaranteed": zeros, "max": {**zeros, **ENDED}},
                "properties": {SORT_POLICY: sort_policy, QUOTA_DELAY: KILL_DELAY}}
               for name in ended or () if name not in open_now]
    return {"name": _name(round.plan.path.rsplit(".", 1)[1], f"queue {round.plan.path}"), "parent": True,
            "resources": {"guaranteed": quantities(round.plan.guaranteed, names)}, "queues": leaves}


def configuration(round: Round, base: Mapping[str, AnyType] | None = None, partition: str = DEFAULT_PARTITION,
                  sort_policy: str = DEFAULT_SORT_POLICY, names: Mapping[str, str] | None = None,
                  ended: Sequence[str] | None = None) -> dict[str, AnyType]:
    """A whole `queues.yaml` document for one round: the base (or a bare root) with the plan queue's subtree in it;
    `ended` not None is on_expiry kill (`plan_queue_config`), with the partition's quota preemption turned on."""
    document: dict[str, AnyType] = copy.deepcopy(dict(base)) if base is not None else {
        "partitions": [{"name": partition, "queues": [{"name": "root", "submitacl": "*", "queues": []}]}]}
    parent = _root_of(document, partition)
    if ended is not None:
        preemption = _partition(document, partition).setdefault("preemption", {})
        if not isinstance(preemption, dict):
            raise FollowerError(f"the base configuration's partition `{partition}` has a `preemption` that is not "
                                "a mapping", "write it as `preemption: {enabled: true}`")
        preemption["quotapreemptionenabled"] = True
    for part in round.plan.path.split(".")[1:-1]:
        parent = _child(parent, part)
    subtree = plan_queue_config(round, sort_policy, names, ended)
    siblings = parent.setdefault("queues", [])
    kept = [q for q in siblings if q.get("name") != subtree["name"]]
    parent["queues"] = [*kept, subtree]
    return document


def change_points(rounds: Sequence[Round]) -> list[tuple[Round, int]]:
    """The rounds whose queue settings differ from the round before, each with how many rounds it lasts."""
    points: list[tuple[Round, int]] = []
    for round in rounds:
        if points and points[-1][0].settings() == round.settings():
            points[-1] = (points[-1][0], points[-1][1] + 1)
        else:
            points.append((round, 1))
    return points


def render(rounds: Sequence[Round], end: datetime, base: Mapping[str, AnyType] | None = None,
           partition: str = DEFAULT_PARTITION, sort_policy: str = DEFAULT_SORT_POLICY,
           names: Mapping[str, str] | None = None) -> str:
    """A YAML stream: one `queues.yaml` document per change point, each headed by when it is in force."""
    points = change_points(rounds)
    documents = []
    for index, (round, _) in enumerate(points):
        until = points[index + 1][0].time if index + 1 < len(points) else end
        header = (f"# rayon follow: {round.plan.path} from {units.format_instant(round.time)} "
                  f"until {units.format_instant(until)}\n")
        documents.append(header + document(round, base, partition, sort_policy, names))
    return "---\n".join(documents)


def document(round: Round, base: Mapping[str, AnyType] | None = None, partition: str = DEFAULT_PARTITION,
             sort_policy: str = DEFAULT_SORT_POLICY, names: Mapping[str, str] | None = None,
             ended: Sequence[str] | None = None) -> str:
    """One `queues.yaml` for one round, as YAML text (the same text for the same queue settings); `ended`: None
    under on_expiry move (an ended queue leaves the document), else the ended reservations kept closed (kill)."""
    return yaml.dump(_flowing(configuration(round, base, partition, sort_policy, names, ended)), Dumper=_Dumper,
                     sort_keys=False)


class _Flow(dict[str, AnyType]):
    """A mapping written on one line, as YuniKorn's documentation writes resources: `{memory: 1G, vcore: 10}`."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data,
                                                                               flow_style=True))


def _flowing(node: AnyType, key: str | None = None) -> AnyType:
    """The document with every resource vector (under `resources`) marked to be written on one line."""
    if isinstance(node, dict):
        if key == "resources":
            return {k: _Flow(v) if isinstance(v, dict) else v for k, v in node.items()}
        return {k: _flowing(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_flowing(item) for item in node]
    return node


def load_base(text: str, source: str) -> dict[str, AnyType]:
    """A base `queues.yaml` (or a ConfigMap's `queues.yaml` value) parsed; malformed input is an error naming it."""
    try:
        document = config.safe_load(text)
    except yaml.YAMLError as exc:
        raise FollowerError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise FollowerError(f"{source}: a YuniKorn queue configuration needs a `partitions` list",
                            "the `queues.yaml` of the scheduler's ConfigMap")
    return document


def _leaf(target: QueueTarget, sort_policy: str, names: Mapping[str, str] | None,
          mark: bool = False) -> dict[str, AnyType]:
    resources: dict[str, AnyType] = {"guaranteed": quantities(target.guaranteed, names)}
    maximum = None if target.maximum is None else quantities(target.maximum, names)
    if maximum is not None:  # YuniKorn ignores an all-zero max: a zero one is written in the closed form
        resources["max"] = maximum if any(_positive(v) for v in maximum.values()) else {**maximum, **CLOSED}
    if mark and target.kind == "reservation":  # on_expiry kill: ENDED is then a lowered max (module docstring)
        resources["max"] = {**resources.get("max", {}), EXPIRY_MARK: 1}
    whose = f"reservation `{target.reservation}`'s queue" if target.reservation else f"queue {target.path}"
    return {"name": _name(target.path.rsplit(".", 1)[1], whose), "resources": resources,
            "properties": {SORT_POLICY: sort_policy}}


def _name(name: str, whose: str) -> str:
    if not QUEUE_NAME.match(name):
        raise FollowerError(f"{whose} is named `{name}`, which YuniKorn refuses",
                            "queue names are 1-64 characters: letters, digits, `_` and `-`")
    return name


def _partition(document: dict[str, AnyType], partition: str) -> dict[str, AnyType]:
    found = [p for p in document["partitions"] if isinstance(p, dict) and p.get("name", "default") == partition]
    if not found:
        raise FollowerError(f"the base configuration has no partition `{partition}`",
                            "name one of its partitions")
    return found[0]


def _root_of(document: dict[str, AnyType], partition: str) -> dict[str, AnyType]:
    found = _partition(document, partition)
    queues = found.setdefault("queues", [])
    roots = [q for q in queues if isinstance(q, dict) and q.get("name") == "root"]
    if roots:
        return roots[0]
    root = {"name": "root", "queues": queues}  # YuniKorn puts top-level queues under an implicit root
    found["queues"] = [root]
    return root


def _child(parent: dict[str, AnyType], name: str) -> dict[str, AnyType]:
    """The parent queue of that name below `parent`, created if the base lacks it."""
    for queue in parent.setdefault("queues", []):
        if isinstance(queue, dict) and queue.get("name") == name:
            queue["parent"] = True
            return queue
    child: dict[str, AnyType] = {"name": name, "parent": True, "queues": []}
    parent["queues"].append(child)
    return child


def _positive(value: int | str) -> bool:
    return (int(value[:-1]) if isinstance(value, str) else value) > 0


def _floor(value: float) -> int:
    """Rounded down, forgiving float noise just below a whole number."""
    return math.floor(value + 1e-6)

