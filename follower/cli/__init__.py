"""The `rayon` command: one click group assembled at the top of the import chain.

Every command is a `rdl.cli.RayonCommand`: the one place where a `RayonError` becomes its
message on standard error and its exit status (2 bad input, 1 internal).

Each package keeps its own commands (`rdl.cli`, `planner.cli.plan`, ...) and this module names them
on one lazy group: a command's module is imported only when that command runs.
"""

from __future__ import annotations

import click

from follower.cli.lazy import LazyCommand, LazyGroup

# Listed statically, so that `rayon --help` and `rayon check` import none of the heavy libraries the other
# commands need; tests/follower/cli/test_lazy.py checks this table against each module's COMMANDS.
COMMANDS = (
    LazyCommand("check", "rdl.cli:check_command", "Validate reservation files (.rdl, .json, YARN JSON) and "
                "cluster files; summarise what is valid."),
    LazyCommand("fmt", "rdl.cli:fmt_command", "Print reservations in canonical form (RDL text, or the JSON form "
                "with --json)."),
    LazyCommand("plan", "planner.cli.plan:plan_command", "Plan reservation files against a cluster, in order, "
                "each against the plan the earlier ones left."),
    LazyCommand("init", "planner.cli.store:init_command", "Create the plan store from a cluster file."),
    LazyCommand("submit", "planner.cli.store:submit_command", "Submit reservation files to the stored plan; each "
                "decision is committed before it is shown."),
    LazyCommand("list", "planner.cli.reads:list_command", "List stored reservations: who, their queue, and the "
                "span each one's leases reserve (START to END, UTC)."),
    LazyCommand("show", "planner.cli.reads:show_command", "One reservation: its RDL, state, leases and history."),
    LazyCommand("cancel", "planner.cli.store:cancel_command", "Cancel a reservation, returning its capacity to "
                "the plan."),
    LazyCommand("update", "planner.cli.store:update_command", "Replace accepted reservation NAME by the version "
                "in FILE, if the new one fits."),
    LazyCommand("advance", "planner.cli.lifecycle:advance_command", "Move the plan's clock forward, any distance; "
                "reservations whose every lease has ended expire."),
    LazyCommand("capacity", "planner.cli.lifecycle:capacity_command", "Change the cluster's capacity from a time on, "
                "and adapt the plan to it."),
    LazyCommand("replan", "planner.cli.lifecycle:replan_command", "Re-optimise the stored plan: accepted "
                "reservations stay accepted and move within their windows to fewer allocation changes (each "
                "re-placed by a MILP of its own, then with its neighbours; planner.agents.milp.smooth)."),
    LazyCommand("log", "planner.cli.reads:log_command", "The append-only decision log: who asked what, when, and "
                "the answer."),
    LazyCommand("free", "planner.cli.free:free_command", "What the plan leaves free over a time range, and the "
                "earliest a request fits."),
    LazyCommand("history", "planner.cli.history:history_command", "Reservations that ended a horizon ago and left "
                "the live plan, the latest first (kept for the retention)."),
    LazyCommand("retention", "planner.cli.history:retention_command", "Say, or set, how long the decision log and "
                "the history keep what is behind the plan's clock."),
    LazyCommand("plot", "planner.plot:plot_command", "Draw the stored plan: capacity over time and each accepted "
                "reservation's use, one panel per resource."),
    LazyCommand("serve", "follower.cli.serve:serve", "Serve the plan over HTTP: native endpoints under /v1, YARN's "
                "reservation REST API under /ws/v1."),
    LazyCommand("token", "planner.cli.serve:token", "Make a bearer token for USER: its hash goes into the token "
                "file, the token to standard output, once."),
    LazyCommand("follow", "follower.cli.follow:follow_command", "Print the queue capacities the stored plan asks "
                "for, per round over a time range."),
    LazyCommand("simulate", "follower.cli.simulate:simulate_command", "Simulate SCENARIO: jobs arrive, reserve, "
                "get queue capacity from the plan, run, and are measured."),
    LazyCommand("evaluate", "follower.cli.simulate:evaluate_command", "Run the comparison grids and write a "
                "Markdown report with tables and figures."),
    LazyCommand("spark", "follower.cli.spark:spark_command", "Compare Spark FIFO and FAIR, user pools, job fair "
                "queuing and UWFQ on a task-level Spark model."),
)


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(None, "-V", "--version", package_name="rayon-planner")
@click.option("--server", metavar="URL", help="Client mode: the store commands talk to this running `rayon serve` "
              "(token: $RAYON_TOKEN or the context file); as $RAYON_SERVER.")
@click.option("--context", metavar="NAME", help="Client mode: the server and token of this context of the context "
              "file ($RAYON_CONFIG, else ~/.config/rayon/config.yaml); as $RAYON_CONTEXT.")
@click.pass_context
def main(ctx: click.Context, server: str | None, context: str | None) -> None:
    """Rayon: reserve cluster capacity ahead of time, and have it guaranteed.

    Write reservations in RDL, check them, plan them against a cluster, and follow the plan. The store
    commands work on a local plan store (--state) or, in client mode, through a running `rayon serve`.

    Reference: docs/rdl.md (the language), docs/cluster.md (the cluster file), docs/decisions.md (the answers).
    """
    # Read by planner/cli/target.py (named here, not imported: `rayon --help` imports nothing of the planner).
    ctx.meta["rayon.server"], ctx.meta["rayon.context"] = server, context
