"""Other systems' reservation agents as planning rows of the simulator (YARN's own, in the first place).

Their answers depend only on the stream of production reservations and the capacity, so they are decided up front,
outside the product, and replayed in the simulation (planner.agents.replay). The product never runs them: a
decision source does (for YARN, `tests/peers/yarn/rows.py` through the Java harness, driven by
`benchmarks/peers/yarn_rows.py`), and hands over decision records, directly (`replay_agent`) or in a decisions
file (`write_decisions`, `read_decisions`; `rayon simulate SCENARIO --decisions FILE`).

A decisions file is JSON: `{"agent", "scenario", "seed", "stream", "decisions": [records of docs/decisions.md],
"notes": [what the other system could not take as it is]}`; `stream` fingerprints the reservations it answers, so
that a file made for another scenario, seed or scheduler setting is refused rather than replayed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any as AnyType
from typing import Protocol

from follower.sim.planning import production_reservations
from follower.sim.scenario import Scenario
from follower.sim.workloads.job import Workload
from planner.agents.replay import ReplayAgent, answers_from_json
from rdl.cluster import Cluster
from rdl.errors import RayonError
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation

YARN_AGENTS = ("yarn-greedy", "yarn-greedy-right", "yarn-aligned")  # YARN 3.4.1's own agents (see docs/yarn.md)
PEER_AGENTS = YARN_AGENTS
PEER = "peer"  # the code of an error about replayed decisions
YARN_TOOLS = ("java", "mvn")  # what the YARN harness needs to build and run YARN's agents
# The resources of the plans the YARN harness lays (tests/peers/yarn/agent_harness.plan_facts): YARN's two
# built-in ones. YARN can count more (GPUs as yarn.io/gpu) once its resource types are configured; the harness
# does not configure any, so a cluster with others is not one YARN's rows can plan.
YARN_RESOURCES = ("memory", "vcores")


class DecisionSource(Protocol):
    """Decides a stream of reservations, in order, with another system's agent `agent` on `cluster`: one decision
    record (docs/decisions.md) per reservation, and notes on what that system could not take as it is."""

    def __call__(self, agent: str, cluster: Cluster,
                 reservations: Sequence[Reservation]) -> tuple[list[dict[str, AnyType]], list[str]]: ...


def missing_tools(tools: Sequence[str] = YARN_TOOLS) -> str | None:
    """Which of the peer's tools is not on PATH (a sentence), or None when all are."""
    absent = [tool for tool in tools if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not found on PATH" if absent else None


def available_peer_agents() -> tuple[tuple[str, ...], str | None]:
    """The peer agents this machine can run (YARN's need java and Maven), and why the others cannot, if so."""
    problem = missing_tools()
    return ((), f"YARN's agents skipped: {problem}") if problem else (YARN_AGENTS, None)


def peer_refusal(agent: str, cluster: Cluster) -> str | None:
    """Why another system's `agent` cannot plan on `cluster` at all (a sentence), or None when it can."""
    other = [name for name in cluster.resource_names if name not in YARN_RESOURCES]
    if agent in YARN_AGENTS and other:
        return (f"the YARN harness lays plans of {' and '.join(YARN_RESOURCES)} only, and this cluster also has "
                f"{', '.join(other)}")
    return None


def stream_digest(reservations: Sequence[Reservation]) -> str:
    """A fingerprint of a stream of reservations (their RDL text, in order)."""
    digest = hashlib.sha256()
    for reservation in reservations:
        digest.update(format_reservation(reservation).encode())
    return digest.hexdigest()


def replay_agent(source: DecisionSource, agent: str, scenario: Scenario, workload: Workload) -> ReplayAgent:
    """`agent`'s decisions on the scenario's production reservations (decided by `source`), ready to replay."""
    reservations = production_reservations(scenario, workload)
    records, _ = source(agent, scenario.plan_cluster(workload), reservations)
    return ReplayAgent(agent, answers_from_json(records))


def decisions_document(agent: str, scenario: Scenario, reservations: Sequence[Reservation],
                       records: Sequence[Mapping[str, AnyType]], notes: Sequence[str]) -> dict[str, AnyType]:
    """The decisions file's content for one agent on one scenario's stream."""
    return {"agent": agent, "scenario": scenario.name, "seed": scenario.seed, "stream": stream_digest(reservations),
            "decisions": list(records), "notes": list(notes)}


def write_decisions(path: Path, document: Mapping[str, AnyType]) -> None:
    """Write a decisions file (see `decisions_document`)."""
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def read_decisions(path: Path, scenario: Scenario, workload: Workload) -> ReplayAgent:
    """The agent a decisions file replays, once checked to answer this scenario's stream; a RayonError (code
    `peer`) when it cannot be read or answers another stream."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        agent, stream, records = str(document["agent"]), str(document["stream"]), document["decisions"]
        answers = answers_from_json(records)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RayonError(f"cannot read the decisions: {error}", code=PEER, place=str(path),
                        hint="make them with `python benchmarks/peers/yarn_rows.py SCENARIO --out FILE`") from error
    if stream != stream_digest(production_reservations(scenario, workload)):
        raise RayonError(f"these decisions answer another stream (scenario `{document.get('scenario')}`, seed "
                        f"{document.get('seed')}), not scenario `{scenario.name}` with seed {scenario.seed}",
                        code=PEER, place=str(path), hint="recompute them for this scenario and seed: python "
                        f"benchmarks/peers/yarn_rows.py {scenario.file} --agents {agent} --out {path}")
    return ReplayAgent(agent, answers)
