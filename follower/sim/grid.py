"""What a grid of `rayon evaluate` is: its studies' default scenarios, agents, policies and seeds, and its runs.

A grid is scenarios × agents × slack factors (the reservation study), scenarios × policies (fairness) and
scenarios × agents × loads (the load study), each cell run at several seeds; `Grid.runs` lists them in report
order. Kept apart from running them (follower.sim.evaluate) so that a checkpoint or a report can name runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from follower.sim.planning import MILP_TIME_LIMIT
from follower.sim.scenario import agent_names
from follower.sim.setup import USER_FAIR
from follower.sim.spark import table as spark_table

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples" / "scenarios"
AGENTS = agent_names()
SLACKS = (1.5, 3.0)  # tight and loose; 10 changed no verdict (every agent meets nearly every deadline)
POLICIES = ("fifo", "fair", USER_FAIR, "uwfq")
# The default grid is the one docs/evaluation/report.md was made from, so that `rayon evaluate` reproduces it.
# Alibaba and RICC: two days each, see their scenarios (`_b`: a second window of the same trace);
# synthetic_malleable: synthetic_mix's jobs as tasks (GREE against GREE-L); `_borrow`: under `max_policy: plan`.
RESERVATION_SCENARIOS = ("synthetic_mix", "synthetic_malleable", "synthetic_mix_borrow", "synthetic_malleable_borrow",
                         "ricc_2days", "alibaba_2days", "alibaba_2days_b")
# The load study: the same jobs arriving faster, per baseline and planning agent (follower/sim/load.py); the traces'
# load studies are grids of their own (docs/evaluation/traces, whose runs take minutes).
LOAD_SCENARIOS = ("synthetic_mix",)
LOADS = (1.0, 1.5, 2.0, 3.0)
LOAD_AGENTS = ("none", "priority", "capacity", "gree", "gree-l")
FAIRNESS_SCENARIOS = ("uwfq_power_small", "uwfq_super_small", "google_homo", "google_hetero")
DEFAULT_SEEDS = 5  # per cell: t(0.975, 4) = 2.78, where 3 seeds would give 4.30 and 2 seeds 12.7
# Scenarios whose runs take about a second get more seeds in the default grid: narrow intervals cost little there.
# The traces' runs take a minute or more: three seeds (t = 4.30) keep the default grid to about an hour on 2 cores.
MANY_SEEDS = (("synthetic_mix", 30), ("synthetic_malleable", 30), ("ricc_2days", 3), ("alibaba_2days", 3),
              ("alibaba_2days_b", 3))
REFERENCE_AGENT = "gree-l"  # our default agent
MILP = "milp"  # the agent with a time limit per decision, and the grid's longest runs
# Not in the default grid: deciding one arrival at a time, the MILP equals greedy by construction (its study is the
# periodic one, docs/evaluation/verdict.md claim 6); `--agents ...,milp` adds it.
GRID_AGENTS = tuple(agent for agent in AGENTS if agent != MILP)
RESULTS = "results.json"

@dataclass(frozen=True)
class Run:
    """One simulation of the grid: which scenario file, study, options, and which of the cell's seeds.

    `replicate` k runs the scenario's own seed + k; `seed` is filled in with that seed once the run is made.
    """

    study: str
    label: str
    path: str
    agent: str | None = None
    policy: str | None = None
    slack: float | None = None
    seed: int | None = None
    replicate: int = 0
    load: float | None = None  # the load study's arrival factor (None: the scenario's own load)

    @property
    def option(self) -> str:
        """What the cell compares: the agent in the reservation and load studies, the policy in the fairness study."""
        return (self.policy if self.study == "fairness" else self.agent) or ""

    @property
    def cell(self) -> tuple[str, str, str | None, str | None, float | None, float | None]:
        """The grid cell this run is one seed of."""
        return (self.study, self.label, self.agent, self.policy, self.slack, self.load)


@dataclass(frozen=True)
class Grid:
    """The runs to make: scenarios × agents × slack factors, and scenarios × policies; each cell `seeds` times,
    the MILP deciding each arrival within `milp_time_limit` seconds."""

    reservations: tuple[str, ...] = tuple(str(EXAMPLES / f"{name}.yaml") for name in RESERVATION_SCENARIOS)
    agents: tuple[str, ...] = GRID_AGENTS
    slacks: tuple[float, ...] = SLACKS
    fairness: tuple[str, ...] = tuple(str(EXAMPLES / f"{name}.yaml") for name in FAIRNESS_SCENARIOS)
    policies: tuple[str, ...] = POLICIES
    seeds: int = DEFAULT_SEEDS
    seeds_for: tuple[tuple[str, int], ...] = MANY_SEEDS  # (scenario name, seeds) where it runs other than `seeds`
    milp_time_limit: float = MILP_TIME_LIMIT
    peers: tuple[str, ...] = ()  # other systems' agents, replayed beside ours (a decision source must be given)
    # (scenario label, peer agent, why): a peer left out of a scenario whose cluster it cannot plan (`plan_peers`)
    peers_left_out: tuple[tuple[str, str, str], ...] = ()
    # The UWFQ section's scenarios on the task-level Spark model, run at as many seeds (none: no section).
    spark: tuple[str, ...] = tuple(str(path) for path in spark_table.scenario_files())
    load_scenarios: tuple[str, ...] = tuple(str(EXAMPLES / f"{name}.yaml") for name in LOAD_SCENARIOS)
    loads: tuple[float, ...] = LOADS
    load_agents: tuple[str, ...] = LOAD_AGENTS

    def seeds_of(self, path: str) -> int:
        """How many seeds each cell of the scenario at `path` runs."""
        return dict(self.seeds_for).get(label(path), self.seeds)

    def runs(self) -> list[Run]:
        """Every run, in report order (the seeds of one cell together)."""
        left_out = {(label, agent) for label, agent, _ in self.peers_left_out}
        found = [Run("reservations", label(path), path, agent=agent, slack=slack, replicate=k)
                 for path in self.reservations for slack in self.slacks for agent in (*self.agents, *self.peers)
                 if (label(path), agent) not in left_out for k in range(self.seeds_of(path))]
        found += [Run("fairness", label(path), path, policy=policy, replicate=k)
                  for path in self.fairness for policy in self.policies for k in range(self.seeds_of(path))]
        found += [Run("load", label(path), path, agent=agent, load=load, replicate=k)
                  for path in self.load_scenarios for agent in self.load_agents for load in self.loads
                  for k in range(self.seeds_of(path))]
        return found


def label(path: str) -> str:
    """A scenario's name in the report: its file's stem."""
    return Path(path).stem


def shown(path: str) -> str:
    """A scenario's path as results.json keeps it: relative to the repository when inside it."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPOSITORY)) if resolved.is_relative_to(REPOSITORY) else path
