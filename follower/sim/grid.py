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
SLACKS = (1.5, 3.0, 10.0)
POLICIES = ("fifo", "fair", USER_FAIR, "uwfq")
# Alibaba: two days, see its scenario; synthetic_malleable: synthetic_mix's jobs as tasks (GREE against GREE-L)
RESERVATION_SCENARIOS = ("synthetic_mix", "synthetic_malleable", "ricc_2days", "alibaba_2days")
# The load study: the same jobs arriving faster, per baseline and planning agent (follower/sim/load.py).
LOAD_SCENARIOS = ("synthetic_mix", "alibaba_2days")
LOADS = (1.0, 1.5, 2.0, 3.0)
LOAD_AGENTS = ("none", "priority", "capacity", "gree", "gree-l")
FAIRNESS_SCENARIOS = ("uwfq_power_small", "uwfq_super_small", "google_homo", "google_hetero")
DEFAULT_SEEDS = 5  # per cell: t(0.975, 4) = 2.78, where 3 seeds would give 4.30 and 2 seeds 12.7
# Scenarios whose runs take about a second get more seeds in the default grid: narrow intervals cost little there.
MANY_SEEDS = (("synthetic_mix", 30), ("synthetic_malleable", 30))
REFERENCE_AGENT = "gree-l"  # our default agent
MILP = "milp"  # the agent with a time limit per decision, and the grid's longest runs
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
    agents: tuple[str, ...] = AGENTS
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
