"""How closely the real control plane keeps the plan: lag from each lease's start to its pods running, and what its
pods held per plan step against what the plan allocated.

    python benchmarks/k8s_lag.py [--json]

Starts the local control plane (tests/peers/k8s/cluster.sh: etcd, kube-apiserver, KWOK, YuniKorn on 127.0.0.1;
the binaries built once by tests/peers/k8s/build.sh), plays tests/peers/k8s/test_follow.py's scenario through
`rayon serve --follow-to yunikorn-configmap` (tests/peers/k8s/scenario.py), stops it, and prints two tables from
the API server's records: per reservation, the lease's start, when the follower's ConfigMap named its queue, when
its pods were submitted and when the first of them ran (wall seconds from the plan's start); then per plan step,
the bundles the plan allocated and the most pods that ran in the queue during the step. docs/yunikorn.md explains
the differences. A run takes about five minutes of wall time, whatever the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.peers.k8s.controlplane import ControlPlane, unavailable
from tests.peers.k8s.scenario import STEP, Outcome, play
from tests.peers.k8s.test_follow import FILL, RESERVATIONS


def lags(outcome: Outcome) -> list[dict[str, float | str | None]]:
    rows: list[dict[str, float | str | None]] = []
    for name in outcome.planned:
        lease = outcome.lease_start(name)
        started = [p["started"] for p in outcome.pods.values() if p["reservation"] == name and p["started"] is not None]
        first = min(started) if started else None
        rows.append({"reservation": name, "lease_start": lease, "configmap": outcome.queue_seen.get(name, (None,))[0],
                     "submitted": outcome.submitted.get(name), "first_running": first,
                     "lag": None if first is None or lease is None else first - lease,
                     "preempted": len(outcome.gone)})
    return rows


def steps(outcome: Outcome, name: str) -> list[tuple[int, int, int]]:
    """(step, bundles planned, most pods running in a sample of the step), over the lease and what ran after."""
    held: dict[int, int] = {}
    for t, _, running in outcome.samples:
        step = int(t // STEP)
        held[step] = max(held.get(step, 0), running.get(name, 0))
    planned = outcome.planned[name]
    first = min(s for s, n in planned.items() if n > 0)
    last = max([s for s, n in planned.items() if n > 0] + [s for s, n in held.items() if n > 0])
    return [(s, planned.get(s, 0), held.get(s, 0)) for s in range(first, last + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON document instead of the tables")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        sys.exit(f"no local control plane: {reason}")
    with tempfile.TemporaryDirectory() as scratch:
        plane = ControlPlane.up(Path(scratch) / "plane")
        try:
            work = Path(scratch) / "work"
            work.mkdir()
            outcome = play(plane, work, RESERVATIONS, FILL, limit=240)
        finally:
            plane.down()
    rows = lags(outcome)
    table = {name: steps(outcome, name) for name in outcome.planned}
    if args.json:
        print(json.dumps({"control_plane_up_s": plane.started, "ready_s": plane.timings, "lags": rows,
                          "steps": table}, indent=2))
        return
    ready = ", ".join(f"{k} {v:.1f} s" for k, v in plane.timings.items())
    print(f"control plane up in {plane.started:.1f} s ({ready})")
    print(f"{'reservation':12} {'lease start':>11} {'ConfigMap':>9} {'submitted':>9} {'1st running':>11} {'lag':>6} "
          f"{'preempted':>9}")
    for row in rows:
        print(f"{row['reservation']:12} " + " ".join(
            f"{'-' if row[k] is None else format(row[k], '.1f'):>{w}}"
            for k, w in (("lease_start", 11), ("configmap", 9), ("submitted", 9), ("first_running", 11), ("lag", 6)))
            + f" {row['preempted']:>9}")
    for name, lines in table.items():
        print(f"\n{name}: per plan step of {STEP} s (t from the plan's start)")
        print(f"{'t':>5} {'planned':>7} {'held':>4}")
        for step, planned, held in lines:
            print(f"{step * STEP:>5} {planned:>7} {held:>4}")


if __name__ == "__main__":
    main()
