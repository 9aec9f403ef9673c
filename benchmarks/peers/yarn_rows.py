"""YARN's own reservation agents as planning rows of the simulator, beside ours, on one scenario.

    python benchmarks/peers/yarn_rows.py SCENARIO [--agents gree,gree-l,yarn-greedy,yarn-aligned] [--seed N]
    python benchmarks/peers/yarn_rows.py SCENARIO --agents yarn-greedy --out yarn-greedy.json   # then:
    rayon simulate SCENARIO --decisions yarn-greedy.json

A YARN row: the scenario's production reservations (follower.sim.planning.production_reservations, the ones the
simulator submits) go through YARN's agent (tests/peers/yarn, a JVM built with Maven: needs java and mvn) in
arrival order, up front; our plan checker checks the plan YARN made; then the simulation replays each answer when
its job arrives, if it still fits the simulator's plan (failed nodes re-plan it), else rejects it and counts it
(`diverged`). What YARN cannot express is dropped or refused and said (`notes`). Without java or mvn the YARN rows
are skipped with the reason; our rows still run.

Per agent: production jobs accepted and meeting their deadline, SLA attainment, preemptions, best-effort mean
response; for YARN rows also what YARN accepted up front, how many of those no longer fitted when replayed, the
re-placements refused (YARN moves nothing), and the checker's violations in YARN's plan.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from follower.sim.engine import simulate  # noqa: E402
from follower.sim.metrics import Result  # noqa: E402
from follower.sim.peers import (  # noqa: E402
    PEER_AGENTS,
    available_peer_agents,
    decisions_document,
    write_decisions,
)
from follower.sim.planning import production_reservations  # noqa: E402
from follower.sim.scenario import Scenario, load_scenario  # noqa: E402
from follower.sim.workloads.job import Workload  # noqa: E402
from planner.agents.replay import ReplayAgent, answers_from_json  # noqa: E402
from planner.core.check import check_plan  # noqa: E402
from rdl.table import format_table  # noqa: E402
from tests.peers.yarn.agent_harness import PeerUnavailable  # noqa: E402
from tests.peers.yarn.rows import yarn_decisions  # noqa: E402

DEFAULT_AGENTS = "gree,gree-l,yarn-greedy,yarn-aligned"
SHOWN_NOTES = 5


def decide(agent: str, scenario: Scenario, workload: Workload) -> tuple[dict, list[str]]:
    """YARN's decisions file for the scenario's stream, and the checker's violations in the plan YARN made."""
    reservations = production_reservations(scenario, workload)
    cluster = scenario.plan_cluster(workload)
    records, notes = yarn_decisions(agent, cluster, reservations)
    submitted = {r.name: r.arrival_at(cluster.start) for r in reservations}
    violations = check_plan(cluster, reservations, records, submitted=submitted)
    return decisions_document(agent, scenario, reservations, records, notes), violations


def row(result: Result, document: dict | None, violations: list[str], wall: float) -> list[object]:
    """One table row."""
    production, best = result.summary["production"], result.summary["best_effort"]
    replayed = result.summary.get("replayed", {})
    sla = production["sla_attainment"]
    response = best["mean_response_s"]
    return [result.agent, production["jobs"], production["accepted"], production["met_deadline"],
            "–" if sla is None else f"{sla:.1%}", result.summary["preemptions"],
            "–" if response is None else f"{response:.0f}", production["dropped"],
            replayed.get("accepted_by_agent", "–"), replayed.get("diverged", "–"),
            replayed.get("replans_refused", "–"), "–" if document is None else len(violations), f"{wall:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario")
    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="ours (gree, gree-l, milp, none, ...) and YARN's "
                        f"({', '.join(PEER_AGENTS)})")
    parser.add_argument("--seed", type=int, help="the scenario's seed otherwise")
    parser.add_argument("--out", type=Path, help="write the one YARN agent's decisions file here; simulate nothing")
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    if args.seed is not None:
        scenario = replace(scenario, seed=args.seed)
    workload = scenario.load_workload()
    agents = [name.strip() for name in args.agents.split(",") if name.strip()]
    peers = [name for name in agents if name in PEER_AGENTS]
    usable, why_not = available_peer_agents()
    if args.out is not None:
        if len(peers) != 1:
            sys.exit(f"--out writes one YARN agent's decisions: give exactly one of {', '.join(PEER_AGENTS)}")
        if why_not:
            sys.exit(f"{why_not}: no decisions written")
        document, violations = decide(peers[0], scenario, workload)
        write_decisions(args.out, document)
        print(f"{args.out}: {peers[0]} on {len(document['decisions'])} reservations, "
              f"{sum(d['accepted'] for d in document['decisions'])} accepted, {len(violations)} violations")
        return
    print(f"{scenario.name} (seed {scenario.seed}): {len(workload.production)} production and "
          f"{len(workload.jobs) - len(workload.production)} best-effort jobs")
    rows, notes = [], []
    for agent in agents:
        began = time.perf_counter()
        document, violations, planning = None, [], None
        if agent in PEER_AGENTS:
            if agent not in usable:
                continue
            try:
                document, violations = decide(agent, scenario, workload)
            except PeerUnavailable as error:
                why_not, usable = f"YARN's agents skipped: {error}", ()
                continue
            planning = ReplayAgent(agent, answers_from_json(document["decisions"]))
            notes += [f"{agent}: {note}" for note in document["notes"]]
            notes += [f"{agent}: checker: {v}" for v in violations]
        result = simulate(scenario, agent=None if planning else agent, workload=workload, planning_agent=planning)
        rows.append(row(result, document, violations, time.perf_counter() - began))
        for example in result.summary.get("replayed", {}).get("diverged_examples", []):
            notes.append(f"{agent}: no longer fitted: {example}")
        print(f"  {agent}: {rows[-1][-1]} s", file=sys.stderr)
    print(format_table(["agent", "prod jobs", "accepted", "met", "SLA", "preemptions", "BE mean resp (s)",
                        "dropped", "agent accepted", "diverged", "replans refused", "violations", "wall (s)"], rows))
    skipped = [name for name in peers if name not in usable]
    if skipped:
        print(f"  {', '.join(skipped)} not run. {why_not}")
    for note in notes[:SHOWN_NOTES]:
        print(f"  {note}")
    if len(notes) > SHOWN_NOTES:
        print(f"  ... and {len(notes) - SHOWN_NOTES} more notes")


if __name__ == "__main__":
    main()
