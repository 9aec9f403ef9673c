"""Commands that write reservations to the plan: `rayon init`, `submit`, `update`, `cancel`.

`submit`, `update` and `cancel` also run in client mode (`--server URL`, `$RAYON_SERVER`, a context: see
planner/cli/target.py), through the server's HTTP API, with the same output and exit statuses; `init` needs
the store itself. The common options and errors: planner/cli/options.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any as AnyType

import click

from planner.agents.registry import AGENTS, DEFAULT_AGENT
from planner.cli import client as remote_mode
from planner.cli.options import clock_line, json_option, open_state, opened, record_json, state_option
from planner.cli.plan import fail_on_reject_option, load_valid, rejections, require_reservations
from planner.cli.remote import Client
from planner.cli.render import decisions_text, from_api
from planner.cli.shaping import coloured
from planner.cli.target import local_only, remote_target, server_option
from planner.core.decision import Decision
from planner.replan.adapt import parse_vector
from planner.store.facade import Store
from rdl import units
from rdl.cli import NameParam, RayonCommand, TimeParam, TimeValue, resolve_time, time_help
from rdl.errors import RayonError
from rdl.forms import yarn_conf
from rdl.source import read_text

__all__ = ["json_option", "open_state", "opened", "state_option"]  # planner/plot.py and others take them from here


@click.command("init", cls=RayonCommand)
@click.option("--cluster", "cluster_path", type=click.Path(exists=True, dir_okay=False),
              help="Cluster file (YAML) the plan is laid over.")
@click.option("--from-yarn", "yarn_path", type=click.Path(exists=True, dir_okay=False),
              help="Instead of --cluster: a YARN capacity-scheduler.xml; its reservable --queue becomes the cluster "
                   "file (printed), with --capacity the whole cluster's.")
@click.option("--queue", help="With --from-yarn: the reservable queue's full path, such as root.dedicated.")
@click.option("--capacity", help="With --from-yarn: the whole cluster's capacity, as {memory: 4TiB, vcores: 2048}.")
@click.option("--step", default="1s", show_default=True, help="With --from-yarn: the plan's step (YARN's is 1s).")
@click.option("--horizon", default="7d", show_default=True, help="With --from-yarn: how far ahead the plan reaches.")
@click.option("--force", is_flag=True, help="Start the store over, forgetting every reservation in it.")
@state_option
def init_command(cluster_path: str | None, yarn_path: str | None, queue: str | None, capacity: str | None, step: str,
                 horizon: str, force: bool, state_path: str | None) -> None:
    """Create the plan store from a cluster file."""
    if (cluster_path is None) == (yarn_path is None):
        raise click.UsageError("give either --cluster FILE or --from-yarn capacity-scheduler.xml")
    if yarn_path is not None:
        text, cluster_path = from_yarn(yarn_path, queue, capacity, step, horizon), f"{yarn_path}:{queue}"
        click.echo(text, nl=False)
    else:
        assert cluster_path is not None
        text = read_text(cluster_path)
    with opened(state_path, check_version=not force, create=True) as store:
        cluster = store.init(text, cluster_path, force=force)
        click.echo(f"initialised {store.where}: {cluster.steps} steps of {units.format_duration(cluster.step)} "
                   f"from {units.format_instant(cluster.start)}")


def from_yarn(path: str, queue: str | None, capacity: str | None, step: str, horizon: str) -> str:
    """The cluster file for a YARN reservable queue (rdl/forms/yarn_conf.py); bad input is a usage error."""
    if queue is None or capacity is None:
        raise click.UsageError("--from-yarn needs --queue (such as root.dedicated) and --capacity (the whole "
                               "cluster's, such as {memory: 4TiB, vcores: 2048})")
    try:
        seconds = units.parse_duration(step), units.parse_duration(horizon)
        properties = yarn_conf.read_properties(read_text(path), path)
        now = datetime.now(UTC).replace(microsecond=0)
        origin = now - timedelta(seconds=now.timestamp() % seconds[0])  # the plan starts at the step now is in
        return yarn_conf.cluster_yaml(properties, queue, parse_vector(capacity, "--capacity"), origin,
                                      seconds[0], seconds[1], path)
    except (yarn_conf.YarnConfError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None


@click.command("submit", cls=RayonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--agent", type=NameParam(AGENTS), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--dry-run", is_flag=True, help="Answer without committing anything.")
@click.option("--now", "when", type=TimeParam(), help=time_help("Submission time (default: the plan's clock)."))
@click.option("--skip-existing", is_flag=True,
              help="Skip reservations whose name the store holds already (to finish a submission that was stopped).")
@click.option("--explain/--no-explain", default=True, show_default=True,
              help="Give each rejection for capacity the earliest deadline that would fit (most of the time of a "
              "large submission that fills the plan goes into it).")
@fail_on_reject_option
@state_option
@server_option
@json_option
def submit_command(paths: tuple[str, ...], agent: str, dry_run: bool, when: TimeValue | None, skip_existing: bool,
                   explain: bool, fail_on_reject: bool, state_path: str | None, server: str | None,
                   as_json: bool) -> None:
    """Submit reservation files to the stored plan; each decision is committed before it is shown.

    Exit status: 0 when every reservation was decided (with --fail-on-reject, 3 when any was rejected),
    2 for bad input (nothing submitted; files holding no reservation too), 1 for an internal failure,
    130 when interrupted (Ctrl-C): the decisions made until then are committed and shown, and
    `--skip-existing` submits the rest.
    """
    remote = remote_target(state_path)
    if remote is not None:
        if when is not None:
            raise local_only("submit --now", remote)
        with Client(remote) as client:
            answers = remote_mode.submit(client, paths, agent, dry_run, skip_existing, explain)
            echo_answers(answers, agent, dry_run, as_json, lambda: remote_mode.clock_line(client))
        rejections([d["reservation"] for d in answers if not d["accepted"]], len(answers), fail_on_reject)
        return
    with opened(state_path) as store:
        cluster = store.cluster()
        now = resolve_time(when, store.now())
        reservations = load_valid(paths, cluster, now or store.now(), "nothing was submitted")
        require_reservations(reservations, paths, "nothing was submitted")
        held = store.existing([r.name for r in reservations])
        skipped = held if skip_existing else set()
        if skipped:
            click.echo(f"skipped {len(skipped)} the store holds already: {', '.join(sorted(skipped)[:10])}"
                       f"{' ...' if len(skipped) > 10 else ''}", err=True)
        wanted = [r for r in reservations if r.name not in skipped]
        decisions: list[Decision] = []
        try:
            for reservation in wanted:
                decisions.append(store.submit(reservation, agent, submitted=now, dry_run=dry_run, explain=explain,
                                              validated=True))
        except KeyboardInterrupt:
            echo_submitted(store, decisions, agent, dry_run, as_json)
            # Counted in the store: the decision under way when Ctrl-C came may have been committed too.
            done = len(decisions) if dry_run else len(store.existing([r.name for r in wanted]) - held)
            raise remote_mode.interrupted(done, len(wanted), dry_run) from None
        echo_submitted(store, decisions, agent, dry_run, as_json)
    rejections([d.reservation for d in decisions if not d.accepted], len(decisions), fail_on_reject)


def echo_submitted(store: Store, decisions: list[Decision], agent: str, dry_run: bool, as_json: bool) -> None:
    """The decisions made, as JSON or a table and the clock's line."""
    clock = store.clock()
    echo_answers([d.to_json(clock) for d in decisions], agent, dry_run, as_json, lambda: clock_line(store))


def echo_answers(answers: Sequence[Mapping[str, AnyType]], agent: str, dry_run: bool, as_json: bool,
                 line: AnyType) -> None:
    """Decision records, as one JSON document or as a table and the clock's line (`line()`, read only for the
    table)."""
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "decisions": list(answers)}, indent=2))
    else:
        click.echo(coloured(decisions_text(answers, agent + (" (dry run: nothing committed)" if dry_run else "")),
                            "DECISION"))
        click.echo(line())


@click.command("update", cls=RayonCommand)
@click.argument("name")
@click.argument("path", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@click.option("--agent", type=NameParam(AGENTS), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--dry-run", is_flag=True, help="Answer without committing anything.")
@click.option("--now", "when", type=TimeParam(), help=time_help("Submission time of the new version (default: the "
              "plan's clock)."))
@state_option
@server_option
@json_option
def update_command(name: str, path: str, agent: str, dry_run: bool, when: TimeValue | None, state_path: str | None,
                   server: str | None, as_json: bool) -> None:
    """Replace accepted reservation NAME by the version in FILE, if the new one fits.

    The new version is tried on the plan without the old one; if it fits it takes the old one's
    place, else the old one stays exactly as it was and the answer is the rejection.
    """
    remote = remote_target(state_path)
    if remote is not None:
        if when is not None:
            raise local_only("update --now", remote)
        with Client(remote) as client:
            echo_update(name, remote_mode.update(client, name, path, agent, dry_run), agent, dry_run, as_json)
        return
    with opened(state_path) as store:
        cluster = store.cluster()
        now = resolve_time(when, store.now())
        found = load_valid([path], cluster, now or store.now(), "nothing was updated")
        chosen = [r for r in found if r.name == name]
        if len(chosen) != 1:
            names = ", ".join(f"`{r.name}`" for r in found) or "no reservation"
            raise RayonError(f"{path} holds {names}, so no one new version of `{name}` (an update keeps the "
                             "reservation's name)").then("nothing was updated")
        decision = store.update(name, chosen[0], agent, dry_run=dry_run, submitted=now)
        echo_update(name, decision.to_json(store.clock()), agent, dry_run, as_json)


def echo_update(name: str, decision: Mapping[str, AnyType], agent: str, dry_run: bool, as_json: bool) -> None:
    """The decision on a new version, and whether it took the old one's place."""
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "decisions": [decision]}, indent=2))
        return
    click.echo(decisions_text([decision], agent + (" (dry run: nothing committed)" if dry_run else "")))
    if decision.get("previous") == "replaced":
        click.echo(f"`{name}`: the new version replaces the old one")
    elif dry_run and decision["accepted"]:
        click.echo(f"`{name}`: the new version would replace the old one")
    else:
        click.echo(f"`{name}` keeps its previous version, unchanged")


@click.command("cancel", cls=RayonCommand)
@click.argument("name")
@click.option("--from", "after", type=TimeParam(), help=time_help("A recurring reservation: cancel only the "
              "instances arriving at or after this time (the earlier ones stay)."))
@state_option
@server_option
@json_option
def cancel_command(name: str, after: TimeValue | None, state_path: str | None, server: str | None,
                   as_json: bool) -> None:
    """Cancel a reservation, returning its capacity to the plan."""
    remote = remote_target(state_path)
    if remote is not None:
        with Client(remote) as client:
            data = from_api(client.cancel(name, resolve_time(after, client.now()) if after is not None else None))
    else:
        with opened(state_path) as store:
            data = record_json(store.cancel(name, after=resolve_time(after, store.now())), store)
    click.echo(json.dumps(data, indent=2) if as_json else f"{data['reservation']}: {data['state']}")


COMMANDS = [init_command, submit_command, update_command, cancel_command]
