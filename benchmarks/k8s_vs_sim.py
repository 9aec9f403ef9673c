"""The simulator against the real control plane, job by job: tests/peers/k8s/vs_sim.yaml in `rayon simulate`'s
engine with both preemption models, and on the local control plane (etcd, kube-apiserver, KWOK, YuniKorn: see
tests/peers/k8s/cluster.sh) driven by `rayon serve --follow-to yunikorn-configmap`.

    python benchmarks/k8s_vs_sim.py [--json] [--sim-only]

Prints, per production job, each side's first lease start, start, lag (start − lease start), end and whether it met
its deadline, then how many best-effort containers each side preempted (docs/kubernetes.md reads it). `--sim-only`
skips the control plane (seconds instead of about four minutes of wall time, whatever the machine).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.peers.k8s.controlplane import ControlPlane, unavailable
from tests.peers.k8s.vs_sim import Side, play, simulate, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    parser.add_argument("--sim-only", action="store_true", help="the simulator's two models alone")
    args = parser.parse_args()
    sides: list[Side] = [simulate("yarn"), simulate("yunikorn")]
    if not args.sim_only:
        reason = unavailable()
        if reason is not None:
            sys.exit(f"no local control plane: {reason} (--sim-only runs the simulator alone)")
        with tempfile.TemporaryDirectory() as scratch:
            plane = ControlPlane.up(Path(scratch) / "plane")
            try:
                work = Path(scratch) / "work"
                work.mkdir()
                sides.append(play(plane, work))
            finally:
                plane.down()
    if args.json:
        print(json.dumps([dataclasses.asdict(side) for side in sides], indent=1))
    else:
        print(table(sides))


if __name__ == "__main__":
    main()
