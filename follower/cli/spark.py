"""`rayon spark [SCENARIO ...]`: the UWFQ comparison on the task-level Spark model (follower.sim.spark)."""

from __future__ import annotations

import click

from follower.sim.spark.policies import POLICIES
from follower.sim.spark.table import markdown, run_grid, scenario_files, text_table
from rdl.cli import RayonCommand

PARTITIONINGS = {"both": (True, False), "on": (True,), "off": (False,)}


@click.command("spark", cls=RayonCommand)
@click.argument("scenarios", nargs=-1, type=click.Path(exists=True, dir_okay=True))
@click.option("--policy", "policies", multiple=True, type=click.Choice(POLICIES.names),
              help="A policy to run (repeatable); all of them by default.")
@click.option("--partitioning", type=click.Choice(tuple(PARTITIONINGS)), default="both", show_default=True,
              help="Runtime partitioning (~0.5 s tasks) on, off (the input's task count), or both.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs per cell with seeds 1..N (task skew and arrivals), averaged.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print a Markdown report section instead.")
def spark_command(scenarios: tuple[str, ...], policies: tuple[str, ...], partitioning: str, seeds: int,
                  as_markdown: bool) -> None:
    """Compare Spark FIFO and FAIR, user pools, job fair queuing and UWFQ on a task-level Spark model.

    SCENARIO files or folders (default: the repository's examples/spark/) are the UWFQ tool's
    workloads; every scenario × policy × partitioning runs and a table of small-job and all-job mean
    response times is printed, with UWFQ's reductions beside the paper's (docs/evaluation/uwfq.md).
    """
    cells = run_grid(scenario_files(scenarios), policies or POLICIES.names, PARTITIONINGS[partitioning],
                     tuple(range(1, seeds + 1)), progress=lambda what: click.echo(what, err=True))
    command = " ".join(["rayon spark", *scenarios, *(f"--policy {p}" for p in policies),
                        *([f"--partitioning {partitioning}"] if partitioning != "both" else []),
                        *([f"--seeds {seeds}"] if seeds != 1 else []), "--markdown"])
    click.echo(markdown(cells, command) if as_markdown else text_table(cells))


COMMANDS = [spark_command]
