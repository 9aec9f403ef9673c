"""What YuniKorn actually allocated to each queue, read from its REST API at every step (`rayon serve
--follow-allocated URL`), for the dashboard's plan against reality.

YuniKorn answers `GET /ws/v1/partition/{partition}/queues` with its queue tree: the root queue as an object with
`queuename`, `allocatedResource` (a map of resource name to an integer: `memory` in bytes, `vcore` in millicores,
others as counts) and `children`, the same objects below it (yunikorn-core `pkg/webservice/dao/queue_info.go`,
`PartitionQueueDAOInfo`). Releases since 1.0 give `queuename` as the full path (`root.plan.etl`); a bare name is
joined to its parent's path. Resources come back in the plan's names and units: MiB and vcores.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any as AnyType

from follower.follow.follower import MEBIBYTE, FollowerError
from follower.follow.yunikorn import DEFAULT_PARTITION, RESOURCE_NAMES
from rdl import units

TIMEOUT = 10.0  # seconds one poll waits for YuniKorn
PLAN_NAMES = {yunikorn: plan for plan, yunikorn in RESOURCE_NAMES.items()}  # YuniKorn name -> the plan's


def plan_units(resources: Mapping[str, AnyType], where: str) -> dict[str, float]:
    """A YuniKorn resource map in the plan's names and units (memory bytes to MiB, vcore millicores to vcores)."""
    if not isinstance(resources, Mapping):
        raise FollowerError(f"{where}: its resources are {resources!r}: this is not the queue tree of a YuniKorn "
                            "release that answers in maps of integers (1.0 or later)")
    out: dict[str, float] = {}
    for name, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FollowerError(f"{where}: `{name}` is {value!r}, not a number: this is not the queue tree of a "
                                "YuniKorn release that answers in maps of integers (1.0 or later)")
        plan = PLAN_NAMES.get(name, name)
        amount = value / MEBIBYTE if plan == units.MEMORY else value / 1000 if name == "vcore" else value
        out[plan] = int(amount) if float(amount).is_integer() else amount
    return out


def allocations(tree: Mapping[str, AnyType], parent: str = "") -> dict[str, dict[str, float]]:
    """Every queue of YuniKorn's queue tree (one `PartitionQueueDAOInfo` and its children) by full path, with what
    is allocated to it in the plan's units (an absent `allocatedResource`: nothing)."""
    if not isinstance(tree, Mapping) or not isinstance(tree.get("queuename"), str):
        raise FollowerError(f"YuniKorn's queue tree{' under ' + parent if parent else ''}: a queue without "
                            "`queuename`: is the address YuniKorn's REST API?")
    name = tree["queuename"]
    path = name if not parent or name.startswith(f"{parent}.") else f"{parent}.{name}"
    out = {path: plan_units(tree.get("allocatedResource") or {}, path)}
    for child in tree.get("children") or ():
        out.update(allocations(child, path))
    return out


def fetch_json(url: str) -> AnyType:
    """GET `url` and read its JSON body; a FollowerError saying why not."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        raise FollowerError(f"YuniKorn at {url} answered {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise FollowerError(f"YuniKorn at {url} does not answer: {reason}") from None
    except ValueError as error:
        raise FollowerError(f"YuniKorn at {url} answered something that is not JSON: {error}") from None


class YuniKornAllocated:
    """Polls one partition of a YuniKorn scheduler for what each queue holds (`get` fetches a URL's JSON)."""

    def __init__(self, address: str, partition: str = DEFAULT_PARTITION,
                 get: Callable[[str], AnyType] = fetch_json):
        parsed = urllib.parse.urlsplit(address)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"`{address}` is not YuniKorn's address: give http://HOST:PORT (its REST API, "
                             "port 9080 by default)")
        self.url = f"{address.rstrip('/')}/ws/v1/partition/{urllib.parse.quote(partition)}/queues"
        self.get = get

    def poll(self) -> dict[str, dict[str, float]]:
        """What each queue holds now, by full path, in the plan's units; a FollowerError when YuniKorn cannot say."""
        return allocations(self.get(self.url))
