"""The store commands in client mode: the same work through a running `rayon serve`'s HTTP API.

Files are read and checked here as `rayon check` checks them without a cluster (their syntax and shape, with
file positions); the server validates each reservation against its cluster and decides it. A file of one
reservation is sent as it is written, so the server's positions are the file's; a file of several sends each
in canonical RDL. The API decides one reservation per request: a batch is that many requests, each decision
committed before the next is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any as AnyType

import click

from planner.cli.plan import require_reservations
from planner.cli.remote import Client
from planner.cli.render import from_api
from rdl.cli import echo_warnings
from rdl.errors import Interrupted, RayonError
from rdl.load import LoadedFile, all_errors, load
from rdl.syntax.printer import format_reservation
from rdl.tree import Reservation

SOURCE = "<request>"  # what the server calls the body in its messages
FAR = "8999-01-01T00:00:00Z"  # beyond any horizon, within the times the planner keeps
CONTENT_TYPES = {"rdl": "text/plain", "json": "application/json", "yarn": "application/json"}

Json = dict[str, AnyType]


def bodies(paths: Sequence[str], consequence: str) -> list[tuple[Reservation, str, str, str]]:
    """Each reservation of the files: itself, the body to send, its content type, and the file it came from."""
    files: list[LoadedFile] = [f for f in load(paths) if f.cluster is None]
    errors = all_errors(files)
    if errors is not None:
        raise errors.then(consequence)
    echo_warnings(files)
    require_reservations([r for f in files for r in f.reservations], paths, consequence)
    found = []
    for loaded in files:
        whole = len(loaded.reservations) == 1 and loaded.text != ""
        for reservation in loaded.reservations:
            if whole:
                found.append((reservation, loaded.text, CONTENT_TYPES[loaded.format], loaded.path))
            else:
                found.append((reservation, format_reservation(reservation), "text/plain",
                              f"{loaded.path} (`{reservation.name}` in canonical RDL)"))
    return found


def located(error: RayonError, source: str) -> RayonError:
    """The server's error about a request body, naming the file the body came from."""
    error.message = error.message.replace(SOURCE, source)
    return error


def submit(client: Client, paths: Sequence[str], agent: str, dry_run: bool, skip_existing: bool) -> list[Json]:
    """Each reservation's decision record, in the files' order."""
    found = bodies(paths, "nothing was submitted")
    held = {r.name for r, *_ in found if client.exists(r.name)}
    skipped = held if skip_existing else set()
    if skipped:
        click.echo(f"skipped {len(skipped)} the server holds already: {', '.join(sorted(skipped)[:10])}"
                   f"{' ...' if len(skipped) > 10 else ''}", err=True)
    wanted = [item for item in found if item[0].name not in skipped]
    decisions: list[Json] = []
    try:
        for _, body, content_type, source in wanted:
            try:
                decisions.append(client.submit(body, content_type, agent, dry_run))
            except RayonError as error:
                raise stopped(located(error, source), len(decisions), len(wanted), dry_run) from None
    except KeyboardInterrupt:
        done = len(decisions)
        if not dry_run and len(decisions) < len(wanted) and client.exists(wanted[len(decisions)][0].name):
            done += 1  # the request under way when Ctrl-C came was answered and committed
        raise interrupted(done, len(wanted), dry_run) from None
    return decisions


def stopped(error: RayonError, done: int, total: int, dry_run: bool) -> RayonError:
    """An error after some of a batch was decided: what was done, and how to go on."""
    if total == 1 or dry_run:
        return error.then("nothing was submitted" if not dry_run or done == 0 else f"{done} of {total} answered")
    if done == 0:
        return error.then("nothing was submitted")
    error.hint = error.hint or "fix it and run the same command with --skip-existing to submit the rest"
    return error.then(f"{done} of {total} submitted before it (each committed with its decision); the rest were not")


def interrupted(done: int, total: int, dry_run: bool) -> Interrupted:
    """What a submission stopped by Ctrl-C did, and how to finish it."""
    if dry_run:
        return Interrupted(f"interrupted: {done} of {total} answered (dry run: nothing committed)")
    return Interrupted(f"interrupted: {done} of {total} submitted (each committed with its decision); the rest were "
                       "not", hint="run the same command with --skip-existing to submit the rest")


def update(client: Client, name: str, path: str, agent: str, dry_run: bool) -> Json:
    """The decision on the new version of `name` in the file at `path`."""
    found = bodies([path], "nothing was updated")
    chosen = [item for item in found if item[0].name == name]
    if len(chosen) != 1:
        names = ", ".join(f"`{r.name}`" for r, *_ in found) or "no reservation"
        raise RayonError(f"{path} holds {names}, so no one new version of `{name}` (an update keeps the "
                         "reservation's name)").then("nothing was updated")
    _, body, content_type, source = chosen[0]
    try:
        return client.update(name, body, content_type, agent, dry_run)
    except RayonError as error:
        raise located(error, source) from None


def show(client: Client, name: str) -> Json:
    """One reservation, its RDL, and its history in the decision log."""
    record = from_api(client.reservation(name))
    record["history"] = [history_entry(e) for e in client.log(None, reservation=name)]
    return record


def history_entry(entry: Json) -> Json:
    """A log entry as `rayon show` lists it."""
    return {key: entry.get(key) for key in ("time", "actor", "action", "accepted", "reason", "decision")}


def clock_line(client: Client) -> str:
    """The line a listing ends with: the server's plan clock and how far its plan reaches."""
    reach = client.request("GET", "/v1/plan/use", params={"from": FAR})["end"]  # an empty range at the horizon's end
    return f"plan clock {client.request('GET', '/v1/ready')['now']}; the plan reaches {reach}"
