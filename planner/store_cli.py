"""Commands over the durable plan: `rayon init`, `submit`, `list`, `show`, `cancel`, `log`.

Every command takes `--state PATH|URL` (default `$RAYON_STATE`, else
`~/.local/state/rayon/plan.db`) and `--json`. Store errors exit 2 (bad input: unknown
reservation, wrong state, a store of another schema version), 1 when the database fails.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any as AnyType

import click

from planner.agents import DEFAULT_AGENT
from planner.cli import AgentParam, echo_decisions
from planner.decision import allocation_json
from planner.store import STATES, Record, Store, StoreError, default_state_path
from rdl import units
from rdl.cli import EXIT_BAD_INPUT, TimeParam
from rdl.errors import RDLErrors
from rdl.load import all_errors, load
from rdl.table import format_table

EXIT_INTERNAL = 1


def state_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--state", "state_path", envvar="RAYON_STATE", show_envvar=True,
                        help=f"Plan store: a SQLite file or a database URL [default: {default_state_path()}].")(command)


def json_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    return click.option("--json", "as_json", is_flag=True, help="One JSON document on standard output.")(command)


@contextmanager
def opened(state_path: str | None, check_version: bool = True) -> Iterator[Store]:
    """The store, with its errors turned into messages and exit statuses."""
    try:
        with Store.open(state_path, check_version=check_version) as store:
            yield store
    except StoreError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_INTERNAL if error.code == "database" else EXIT_BAD_INPUT)


def record_json(record: Record, store: Store) -> dict[str, AnyType]:
    clock = store.load_plan().clock
    data: dict[str, AnyType] = {
        "reservation": record.name, "state": record.state, "user": record.user, "queue": record.queue,
        "value": record.value, "priority": record.priority, "agent": record.agent,
        "submitted": units.format_instant(record.submitted), "decided": units.format_instant(record.decided),
        "allocations": [allocation_json(a, clock) for a in record.allocations],
    }
    if record.reason is not None:
        data["reason"] = record.reason.to_json()
    return data


@click.command("init")
@click.option("--cluster", "cluster_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Cluster file (YAML) the plan is laid over.")
@click.option("--force", is_flag=True, help="Start the store over, forgetting every reservation in it.")
@state_option
def init_command(cluster_path: str, force: bool, state_path: str | None) -> None:
    """Create the plan store from a cluster file."""
    text = Path(cluster_path).read_text()
    with opened(state_path, check_version=not force) as store:
        try:
            cluster = store.init(text, cluster_path, force=force)
        except RDLErrors as errors:
            click.echo(errors.render(), err=True)
            sys.exit(EXIT_BAD_INPUT)
        click.echo(f"initialised {store.where}: {cluster.steps} steps of {units.format_duration(cluster.step)} "
                   f"from {units.format_instant(cluster.start)}")


@click.command("submit")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--agent", type=AgentParam(), default=DEFAULT_AGENT, show_default=True, help="Planning agent.")
@click.option("--dry-run", is_flag=True, help="Answer without committing anything.")
@click.option("--now", type=TimeParam(), help="Submission time (default: the plan's clock).")
@state_option
@json_option
def submit_command(paths: tuple[str, ...], agent: str, dry_run: bool, now: datetime | None, state_path: str | None,
                   as_json: bool) -> None:
    """Submit reservation files to the stored plan; each decision is committed before it is shown."""
    with opened(state_path) as store:
        cluster = store.cluster()
        files = [f for f in load(paths, None, cluster, now or store.now()) if f.cluster is None]
        errors = all_errors(files)
        if errors is not None:
            click.echo(errors.render(), err=True)
            click.echo("nothing was submitted", err=True)
            sys.exit(EXIT_BAD_INPUT)
        decisions = [store.submit(r, agent, submitted=now, dry_run=dry_run)
                     for f in files for r in f.reservations]
        clock = store.load_plan().clock
        if as_json:
            click.echo(json.dumps({"dry_run": dry_run, "decisions": [d.to_json(clock) for d in decisions]}, indent=2))
        else:
            echo_decisions(decisions, clock, agent + (" (dry run: nothing committed)" if dry_run else ""))


@click.command("list")
@click.option("--user", help="Only this user's reservations.")
@click.option("--status", "wanted", type=click.Choice(STATES), help="Only reservations in this state.")
@click.option("--from", "start", type=TimeParam(), help="Only those holding capacity at or after this time.")
@click.option("--to", "end", type=TimeParam(), help="Only those holding capacity before this time.")
@state_option
@json_option
def list_command(user: str | None, wanted: str | None, start: datetime | None, end: datetime | None,
                 state_path: str | None, as_json: bool) -> None:
    """List stored reservations."""
    with opened(state_path) as store:
        records = store.list(user=user, state=wanted, start=start, end=end)
        if as_json:
            click.echo(json.dumps([record_json(r, store) for r in records], indent=2))
            return
        rows = [[r.name, r.state, r.user or "-", r.agent or "-", units.format_instant(r.submitted),
                 str(len(r.allocations)), r.reason.code if r.reason else "-"] for r in records]
        click.echo(format_table(["RESERVATION", "STATE", "USER", "AGENT", "SUBMITTED", "ALLOCATIONS", "REASON"], rows))


@click.command("show")
@click.argument("name")
@state_option
@json_option
def show_command(name: str, state_path: str | None, as_json: bool) -> None:
    """One reservation: its RDL, state, leases and history."""
    with opened(state_path) as store:
        record = store.get(name)
        history = [e for e in store.log() if e.reservation == name]
        if as_json:
            data = record_json(record, store)
            data["rdl"] = record.rdl
            data["history"] = [{"time": units.format_instant(e.time), "actor": e.actor, "action": e.action,
                                "accepted": e.accepted, "reason": e.reason} for e in history]
            click.echo(json.dumps(data, indent=2))
            return
        click.echo(f"{record.name}: {record.state} (user {record.user or '-'}, agent {record.agent or '-'})")
        if record.reason is not None:
            click.echo(f"  reason: {record.reason.message}")
        click.echo(record.rdl.rstrip())
        clock = store.load_plan().clock
        rows = [[a.atom, units.format_instant(clock.at(a.start)), units.format_instant(clock.at(a.end)),
                 str(a.bundles)] for a in record.allocations]
        if rows:
            click.echo(format_table(["ATOM", "START", "END", "BUNDLES"], rows))
        for entry in history:
            click.echo(f"  {units.format_instant(entry.time)}  {entry.actor or '-'}  {entry.action}"
                       f"{'' if entry.accepted is None else ' accepted' if entry.accepted else ' rejected'}")


@click.command("cancel")
@click.argument("name")
@state_option
@json_option
def cancel_command(name: str, state_path: str | None, as_json: bool) -> None:
    """Cancel a reservation, returning its capacity to the plan."""
    with opened(state_path) as store:
        record = store.cancel(name)
        if as_json:
            click.echo(json.dumps(record_json(record, store), indent=2))
        else:
            click.echo(f"{record.name}: {record.state}")


@click.command("log")
@click.option("--limit", type=click.IntRange(min=1), help="Only the latest N entries.")
@state_option
@json_option
def log_command(limit: int | None, state_path: str | None, as_json: bool) -> None:
    """The append-only decision log: who asked what, when, and the answer."""
    with opened(state_path) as store:
        entries = store.log(limit)
        if as_json:
            click.echo(json.dumps([{"id": e.id, "time": units.format_instant(e.time), "actor": e.actor,
                                    "action": e.action, "reservation": e.reservation, "accepted": e.accepted,
                                    "reason": e.reason} for e in entries], indent=2))
            return
        rows = [[str(e.id), units.format_instant(e.time), e.actor or "-", e.action, e.reservation or "-",
                 "-" if e.accepted is None else "accepted" if e.accepted else f"rejected ({e.reason_code})"]
                for e in entries]
        click.echo(format_table(["ID", "TIME", "ACTOR", "ACTION", "RESERVATION", "ANSWER"], rows))


COMMANDS = [init_command, submit_command, list_command, show_command, cancel_command, log_command]
