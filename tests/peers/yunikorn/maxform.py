"""yunikorn-core's own queue objects on our documents: build the Go peer (`maxform/`) against a core release and ask,
for each leaf queue of a `queues.yaml`, the max the core keeps and which asks fit under it (see maxform/main.go).

Built as the validator is (validator.py: the same releases, module files and environment), once per change of
the sources, under `maxform/target/`. 1.4 and 1.9 construct queues differently: the build tag `core14` picks
the constructor.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.peers.yunikorn.validator import go_build

MAXFORM_DIR = Path(__file__).resolve().parent / "maxform"
TAGS = {"1.4.0": "core14"}  # release -> build tag (the newest needs none)


@dataclass(frozen=True)
class Leaf:
    """What the core makes of one leaf queue: the max it keeps for it (None: none), its headroom with nothing
    allocated (None: no limit at all), and whether each ask fits in that headroom."""

    queue: str
    max: dict[str, int] | None
    headroom: dict[str, int] | None
    fits: dict[str, bool]
    core: str


def build(version: str) -> Path:
    """The peer built against yunikorn-core `version` (once per change of the sources)."""
    return go_build(MAXFORM_DIR, "max peer", version, ("main.go", "core14.go", "core19.go"), TAGS.get(version))


def leaves(document: str, cluster: Mapping[str, str], asks: Mapping[str, Mapping[str, str]],
           version: str) -> dict[str, Leaf]:
    """Each leaf queue of `document` as yunikorn-core `version` builds it, on a cluster of that size, by path."""
    done = subprocess.run([str(build(version)), json.dumps(cluster), json.dumps(asks)], input=document,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"the YuniKorn max peer failed: {done.stderr.strip()[-600:]}")
    found = [Leaf(**json.loads(line)) for line in done.stdout.splitlines()]
    return {leaf.queue: leaf for leaf in found}
