"""`rayon evaluate` with YARN's own reservation agents in its reservation study.

    python benchmarks/peers/evaluate.py [rayon evaluate's options]

The same command and options as `rayon evaluate` (see its --help); the reservation study also runs YARN 3.4.1's
GreedyReservationAgent (allocate left, YARN's default), the same allocating right, and AlignedPlannerWithGreedy,
each decided by YARN's classes through the peer harness (tests/peers/yarn: Java 17 and Maven) on the stream of
each run and replayed in the simulator (follower/sim/peers.py, docs/yarn.md). Where Java or Maven is missing,
the grid runs without them and the report says why.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from follower.cli.simulate import PeerRows, evaluate_command  # noqa: E402
from follower.sim.peers import available_peer_agents  # noqa: E402
from tests.peers.yarn.rows import yarn_decisions  # noqa: E402


def main() -> None:
    agents, why_not = available_peer_agents()
    if why_not:
        print(why_not, file=sys.stderr)
    evaluate_command.main(sys.argv[1:], prog_name="benchmarks/peers/evaluate.py",
                          obj=PeerRows(agents, yarn_decisions if agents else None, why_not or ""))


if __name__ == "__main__":
    main()
