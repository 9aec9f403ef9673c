"""Allocation changes: how jagged a placement is (each change a container started or preempted)."""

from __future__ import annotations

from collections import defaultdict

from planner.core.plan import Allocation


def changes(allocations: list[Allocation]) -> int:
    """Bundles started or stopped from step to step, per atom and instance (ramping up and down counted)."""
    held: dict[tuple[int, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for a in allocations:
        profile = held[(a.instance, a.atom)]
        profile[a.start] += a.bundles
        profile[a.end] -= a.bundles
    total = 0
    for profile in held.values():
        total += sum(abs(delta) for delta in profile.values())
    return total
