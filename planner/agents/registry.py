"""The planning agents by name: `gree`, `gree-l` and `gree-s` (online, milliseconds) and `milp` (offline, seconds).

Listed statically; each is built when asked for, so naming `milp` does not import the MILP
modeller until it is used.
"""

from __future__ import annotations

from planner.agents.base import Agent
from planner.agents.greedy.agent import GreedyAgent
from planner.agents.sized import SizedAgent
from rdl.registry import Registry


def _milp() -> Agent:
    from planner.agents.milp.agent import MilpAgent  # the modeller and solvers load only when the MILP is used

    return MilpAgent()


AGENTS: Registry[Agent] = Registry("agent", {
    "gree": lambda: GreedyAgent("gree", flat=False),
    "gree-l": lambda: GreedyAgent("gree-l", flat=True),
    "gree-s": lambda: SizedAgent("gree-s", flat=True),  # GREE-L refusing reservations over a tenth of their window
    "milp": _milp,
})
DEFAULT_AGENT = "gree-l"


def get_agent(name: str) -> Agent:
    """The agent of that name, built now; an unknown name is an `UnknownName` listing the valid ones."""
    return AGENTS.get(name)
