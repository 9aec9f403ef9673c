"""The `rayon` command: one click group assembled at the top of the import chain.

Every command is a `rdl.cli.RayonCommand`: the one place where a `RayonError` becomes its
message on standard error and its exit status (2 bad input, 1 internal).

Each package keeps its own commands (`rdl.cli`, `planner.cli.plan`, ...) and this module,
which may import all of them, puts them on one group.
"""

from __future__ import annotations

import click

from follower.cli.follow import COMMANDS as FOLLOW_COMMANDS
from follower.cli.simulate import COMMANDS as SIMULATION_COMMANDS
from planner.cli.plan import COMMANDS as PLANNING_COMMANDS
from planner.cli.serve import COMMANDS as API_COMMANDS
from planner.cli.store import COMMANDS as STORE_COMMANDS
from planner.plot import COMMANDS as PLOT_COMMANDS
from rdl.cli import COMMANDS as LANGUAGE_COMMANDS


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(None, "-V", "--version", package_name="rayon-planner")
def main() -> None:
    """Rayon: reserve cluster capacity ahead of time, and have it guaranteed.

    Write reservations in RDL, check them, plan them against a cluster, and follow the plan.

    Reference: docs/rdl.md (the language), docs/cluster.md (the cluster file), docs/decisions.md (the answers).
    """


for command in [*LANGUAGE_COMMANDS, *PLANNING_COMMANDS, *STORE_COMMANDS, *PLOT_COMMANDS, *API_COMMANDS,
                *FOLLOW_COMMANDS, *SIMULATION_COMMANDS]:
    main.add_command(command)
