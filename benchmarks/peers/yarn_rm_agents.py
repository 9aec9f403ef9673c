"""Our planner as YARN's reservation agent, through the real ResourceManager, beside YARN's own agents.

    python benchmarks/peers/yarn_rm_agents.py [--streams yarn,tight,gangs,mixed] [--count 100]
                                              [--mixed-count 300] [--seed 7] [--agents ours,yarn-greedy,...]
                                              [--average PERCENT] [--instantaneous PERCENT] [--window-ms MS]

The streams of benchmarks/peers/yarn_agents.py (tests/peers/yarn/streams.py; `mixed`: the admission week), each
moved to start a few minutes from now (YARN refuses windows in the past), submitted in arrival order with YARN's
Java client (`YarnClient.submitReservation`) to a real ResourceManager (MiniYARNCluster, CapacityScheduler, one
reservable queue of the stream's capacity, yarn-agent/'s driver): once with our RayonReservationAgent asking a
`rayon serve` beside it (`ours`, gree-l; `ours-gree`, gree) and once with each of YARN's agents as the queue's
agent (`yarn-greedy`: GreedyReservationAgent, `yarn-aligned`: AlignedPlannerWithGreedy, the default). A fresh RM
for every stream and agent; the queue's CapacityOverTimePolicy takes YARN's defaults (100%, 100%, 24 h) unless
--average, --instantaneous (percent) or --window-ms say otherwise. Per row: accepted; refused at the write (the
agent's answer refused by YARN's sharing policy when the agent wrote it: PlanningQuotaException or
ResourceOverCommitException); and the end-to-end latency of a submission (the client's call through the RM's RPC,
the agent, and for ours the HTTP round trip to rayon serve), p50/p99 over all decisions and over accepted ones.
Needs java and mvn (yarn-agent/ is built on first use).
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any as AnyType

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "peers")]

import yarn_agents  # noqa: E402  (benchmarks/peers/yarn_agents.py: the mixed week)

from rdl.cluster import Cluster  # noqa: E402
from tests.peers.yarn import streams  # noqa: E402
from tests.peers.yarn.agent_harness import Stream  # noqa: E402
from tests.peers.yarn.rm_agent import OURS, YARN_AGENTS, driven_rm, placement_server  # noqa: E402

AGENTS = ("ours", "ours-gree", "yarn-greedy", "yarn-aligned")
LEAD_MS = 5 * 60 * 1000  # the stream starts this long after it is first submitted
AT_THE_WRITE = ("PlanningQuotaException", "ResourceOverCommitException")  # YARN's policy refused the agent's answer


def shifted(stream: Stream, cluster: Cluster) -> list[dict[str, AnyType]]:
    """The stream's bodies moved so that its plan starts LEAD_MS from now, on a whole step of the cluster."""
    step_ms = cluster.step * 1000
    origin = round(cluster.start.timestamp() * 1000)
    start = (int(time.time() * 1000) + LEAD_MS) // step_ms * step_ms + step_ms
    moved = []
    for body in stream.bodies:
        body = copy.deepcopy(body)
        definition = body["reservation-definition"]
        definition["arrival"] = int(definition["arrival"]) - origin + start
        definition["deadline"] = int(definition["deadline"]) - origin + start
        moved.append(body)
    return moved


def run(agent: str, cluster: Cluster, stream: Stream,
        policy: dict[str, str] | None = None) -> tuple[list[bool], list[float], Counter[str]]:
    """Every reservation of the stream through a fresh RM with `agent` (and the queue's `policy`): accepted or not,
    seconds each, and why the rejected ones were."""
    memory, vcores = int(cluster.capacity["memory"]), int(cluster.capacity["vcores"])
    if agent.startswith("ours"):
        with placement_server() as (_, settings):
            settings["rayon.reservation-agent.agent"] = "gree" if agent == "ours-gree" else "gree-l"
            settings["rayon.reservation-agent.timeout-ms"] = "30000"  # a slow decision is measured, not fallen back
            with driven_rm(OURS, settings, memory, vcores, policy=policy) as rm:
                return _submit(rm, cluster, stream)
    with driven_rm(YARN_AGENTS[agent], {}, memory, vcores, policy=policy) as rm:
        return _submit(rm, cluster, stream)


def _submit(rm: AnyType, cluster: Cluster, stream: Stream) -> tuple[list[bool], list[float], Counter[str]]:
    accepted, seconds, why = [], [], Counter[str]()
    for body in shifted(stream, cluster):
        answer = rm.submit(body)
        if "accepted" not in answer:
            raise RuntimeError(f"the driver failed: {answer}")
        accepted.append(bool(answer["accepted"]))
        seconds.append(answer["nanos"] / 1e9)
        if not answer["accepted"]:
            why[reason(answer.get("error", ""))] += 1
    if "rayon is unreachable" in rm.log():
        print("  ! our service was unreachable at least once: YARN's fallback decided those", file=sys.stderr)
    return accepted, seconds, why


def reason(error: str) -> str:
    """A rejection in a few words: our reason code, or YARN's exception and the start of its message."""
    ours = re.search(r"rayon \(\S+\) rejected \S+: (\w+)", error)
    if ours:
        return f"ours: {ours.group(1)}"
    first = error.splitlines()[0] if error else "no message"
    if "had changed under it each time" in first:  # our agent placed again `retries` times, refused each time
        return f"{AT_THE_WRITE[1]} after our retries"
    if "refused the request" in first:
        return "ours refused the request: " + " ".join(first.split("): ", 1)[-1].split()[:12])
    found = re.match(r"(?:[\w.]+\.)?(\w+(?:Exception|Error)): (.*)", first)
    name, text = (found.group(1), found.group(2)) if found else ("", first)
    return f"{name} {' '.join(text.split()[:6])}".strip()


def _ms(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.1f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="yarn,tight,gangs,mixed")
    parser.add_argument("--count", type=int, default=100, help="reservations in the yarn, tight and gangs streams")
    parser.add_argument("--mixed-count", type=int, default=300, help="reservations in the mixed week")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--average", type=float, help="the queue's average-capacity, percent (YARN: 100)")
    parser.add_argument("--instantaneous", type=float, help="its instantaneous-max-capacity, percent (YARN: 100)")
    parser.add_argument("--window-ms", type=int, help="its reservation-window, ms (YARN: 86400000)")
    args = parser.parse_args()
    policy = {key: str(value) for key, value in (("average-capacity", args.average),
                                                 ("instantaneous-max-capacity", args.instantaneous),
                                                 ("reservation-window", args.window_ms)) if value is not None}
    makers = {
        "mixed": lambda: yarn_agents.mixed(args.mixed_count, args.seed),
        "yarn": lambda: streams.yarn_shaped(args.count, args.seed + 4),
        "tight": lambda: streams.tight(args.count, args.seed + 5),
        "gangs": lambda: streams.gangs(args.count, args.seed + 6),
    }
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; YARN 3.4.1 ResourceManager "
          f"(MiniYARNCluster); queue policy {policy or 'YARN defaults'}; latency: YarnClient.submitReservation "
          "end to end")
    print("| stream | agent | accepted | refused at the write | p50 ms | p99 ms | p50 ms accepted | p99 ms accepted |")
    print("|---|---|---|---|---|---|---|---|")
    rejections: list[str] = []
    for label in args.streams.split(","):
        cluster, stream = makers[label.strip()]()
        for agent in args.agents.split(","):
            accepted, seconds, why = run(agent.strip(), cluster, stream, policy)
            refused = sum(n for w, n in why.items() if w.startswith(AT_THE_WRITE))
            rejections.append(f"{label}, {agent}: " + "; ".join(f"{n} {w}" for w, n in why.most_common(4)))
            kept = [s for s, ok in zip(seconds, accepted, strict=True) if ok]
            print(f"| {label} ({len(accepted)}) | {agent} | {sum(accepted)} | {refused} | {_ms(seconds, 50)} | "
                  f"{_ms(seconds, 99)} | {_ms(kept, 50)} | {_ms(kept, 99)} |", flush=True)
    print("\nrejections, the commonest reasons:")
    print("\n".join(f"  {line}" for line in rejections))


if __name__ == "__main__":
    main()
