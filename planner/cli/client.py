"""The store commands in client mode: the same work through a running `rayon serve`'s HTTP API.

Files are read and checked here as `rayon check` checks them without a cluster (their syntax and shape, with
file positions); the server validates each reservation against its cluster and decides it. `submit` sends its
files as one request (`POST /v1/reservations/batch`, each file as it is written and under its own name, so that
the server's positions are the file's), decided in order and committed whole. `update` sends one reservation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
MAX_BATCH = 1000  # reservations in one request, as the server takes them (planner/api/batch.py)

Json = dict[str, AnyType]


def reservation_files(paths: Sequence[str], consequence: str) -> list[LoadedFile]:
    """The files of reservations among `paths`, checked whole before anything is sent: any error raises, with
    `consequence` (what was not done) said after it; warnings are printed."""
    files: list[LoadedFile] = [f for f in load(paths) if f.cluster is None]
    errors = all_errors(files)
    if errors is not None:
        raise errors.then(consequence)
    echo_warnings(files)
    require_reservations([r for f in files for r in f.reservations], paths, consequence)
    return files


def bodies(paths: Sequence[str], consequence: str) -> list[tuple[Reservation, str, str, str]]:
    """Each reservation of the files: itself, the body to send, its content type, and the file it came from."""
    files = reservation_files(paths, consequence)
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


@dataclass
class Batch:
    """One request of a submission: its files (`{name, text, format}` each) and the names of its reservations."""

    files: list[Json] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def batches(paths: Sequence[str], skipped: set[str], consequence: str) -> tuple[list[Batch], list[str]]:
    """The requests of `POST /v1/reservations/batch` that submit the files, leaving out the reservations named in
    `skipped`, and the names left out. A file goes as it is written, so the server's positions are the file's;
    one that lost a skipped reservation (or holds more than a request may) goes in canonical RDL, and says so."""
    files = reservation_files(paths, consequence)
    pieces: list[tuple[list[str], Json]] = []
    left_out: list[str] = []
    for loaded in files:
        kept = [r for r in loaded.reservations if r.name not in skipped]
        left_out += [r.name for r in loaded.reservations if r.name in skipped]
        if kept and len(kept) == len(loaded.reservations) and loaded.text != "" and len(kept) <= MAX_BATCH:
            pieces.append(([r.name for r in kept], {"name": loaded.path, "text": loaded.text,
                                                    "format": loaded.format}))
            continue
        for start in range(0, len(kept), MAX_BATCH):
            part = kept[start:start + MAX_BATCH]
            split = f", from `{part[0].name}` on" if len(kept) > MAX_BATCH else ""
            pieces.append(([r.name for r in part], {"name": f"{loaded.path} (in canonical RDL{split})",
                                                    "text": "\n".join(format_reservation(r) for r in part),
                                                    "format": "rdl"}))
    sent: list[Batch] = []
    for names, piece in pieces:
        if not sent or len(sent[-1].names) + len(names) > MAX_BATCH:
            sent.append(Batch())
        sent[-1].files.append(piece)
        sent[-1].names += names
    return sent, left_out


def submit(client: Client, paths: Sequence[str], agent: str, dry_run: bool, skip_existing: bool,
           explain: bool = True) -> list[Json]:
    """Each reservation's decision record, in the files' order. The files go to the server as one request (up to
    MAX_BATCH reservations; more take several), decided in order and committed whole: bad input anywhere in a
    request submits nothing of it."""
    sent, held = batches(paths, client.names() if skip_existing else set(), "nothing was submitted")
    if held:
        click.echo(f"skipped {len(held)} the server holds already: {', '.join(sorted(held)[:10])}"
                   f"{' ...' if len(held) > 10 else ''}", err=True)
    total = sum(len(batch.names) for batch in sent)
    decisions: list[Json] = []
    for batch in sent:
        try:
            answered = client.submit_batch(batch.files, agent, dry_run, explain)
        except RayonError as error:
            raise stopped(error, len(decisions), total, dry_run) from None
        except KeyboardInterrupt:
            done = len(decisions)
            if not dry_run and client.exists(batch.names[0]):
                done += len(batch.names)  # the request under way was answered and committed, whole
            raise interrupted(done, total, dry_run) from None
        decisions.extend({**decision, "dry_run": dry_run} for decision in answered)
    return decisions


def stopped(error: RayonError, done: int, total: int, dry_run: bool) -> RayonError:
    """An error answering a request of a submission (`done`: the decisions the requests before it committed)."""
    error.message = error.message.removesuffix("\nnothing was submitted")  # the server's words, said below
    if done == 0 or dry_run:
        return error.then("nothing was submitted" if not dry_run or done == 0 else f"{done} of {total} answered")
    error.hint = error.hint or "fix it and run the same command with --skip-existing to submit the rest"
    return error.then(f"{done} of {total} submitted before it, in earlier requests (each committed whole); the rest "
                      "were not")


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
