"""The planning agents by name: `gree` and `gree-l` (online, milliseconds) and `milp` (offline, seconds), and the
opt-in `gree-s` (GREE-L with size-aware admission, planner/agents/sized.py).

Listed statically; each is built when asked for, so naming `milp` does not import the MILP
modeller until it is used. The opt-in agents are not in `AGENTS` (the list the command line offers and the
simulator's grids run): `get_agent` builds them by name for the Python API, the HTTP API's `agent=` and the peer
benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable

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
    "milp": _milp,
})
DEFAULT_AGENT = "gree-l"
# Agents that refuse on purpose what fits: named only by whoever wants them (docs/peers.md, "Size-aware admission").
OPT_IN: dict[str, Callable[[], Agent]] = {
    "gree-s": lambda: SizedAgent("gree-s", flat=True),  # GREE-L refusing reservations over a tenth of their window
}


def get_agent(name: str) -> Agent:
    """The agent of that name (listed or opt-in), built now; an unknown name is an `UnknownName` listing the
    listed ones."""
    if name in OPT_IN:
        return OPT_IN[name]()
    return AGENTS.get(name)
