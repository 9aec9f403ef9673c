"""Commands of the language: `rayon check` and `rayon fmt` (registered on the `rayon` group elsewhere)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any as AnyType
from typing import overload

import click

from rdl import units
from rdl.cluster import Cluster, load_cluster
from rdl.errors import Interrupted, RayonError, RDLError, RDLErrors, Reported, did_you_mean
from rdl.forms.jsonform import to_json
from rdl.lint import lint
from rdl.load import FORMATS, LoadedFile, all_errors, load
from rdl.registry import Registry, UnknownName
from rdl.summary import summarize
from rdl.syntax.printer import format_reservations
from rdl.table import format_table
from rdl.validate import Context


class RayonCommand(click.Command):
    """Every `rayon` command: a `RayonError` it raises becomes its message on standard error and its exit status.

    The one place where product errors meet the shell (2 bad input, 1 internal); nothing else exits.
    A command given `--json` also gets the error as one JSON document on standard output (`error_document`),
    so a script reading standard output always reads JSON; `json_errors=False` opts a command out (`rayon plan`,
    whose contract keeps standard output empty when nothing was planned).
    """

    def __init__(self, *args: AnyType, json_errors: bool = True, **kwargs: AnyType):
        super().__init__(*args, **kwargs)
        self.json_errors = json_errors

    def invoke(self, ctx: click.Context) -> AnyType:
        try:
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt:  # not click's "Aborted!", exit 1: a command that reports progress says more
                raise Interrupted("interrupted", hint="what was committed before it stays") from None
        except RayonError as error:
            text = error.render()
            if text:
                click.echo(text, err=True)
            # A Reported error was already shown (`rayon check --json` printed its document): one document only.
            if self.wants_json(ctx) and not isinstance(error, Reported):
                click.echo(json.dumps(error_document(error), indent=2))
            ctx.exit(error.exit_code)

    def wants_json(self, ctx: click.Context) -> bool:
        """Whether this command has a `--json` flag and it was given."""
        flags = [p for p in self.params if isinstance(p, click.Option) and "--json" in p.opts]
        return self.json_errors and any(bool(ctx.params.get(p.name or "")) for p in flags)


def error_document(error: RayonError) -> dict[str, AnyType]:
    """`{"error": {code, message, hint, exit_code, place, consequences, errors}}`: a failure for machines.

    `errors` lists the positioned input errors (`error_json`) of an RDLError or RDLErrors, else is empty.
    """
    positioned = error.errors if isinstance(error, RDLErrors) else [error] if isinstance(error, RDLError) else []
    return {"error": {"code": error.code, "message": error.message, "hint": error.hint, "exit_code": error.exit_code,
                      "place": error.place, "consequences": list(error.consequences),
                      "errors": [error_json(e) for e in positioned]}}


class NameParam(click.ParamType):
    """A name from a registry (an agent, a solver, a policy), with a suggestion for a near miss."""

    def __init__(self, registry: Registry[AnyType]):
        self.registry = registry
        self.name = registry.kind.upper()

    def convert(self, value: AnyType, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return self.registry.check(str(value))
        except UnknownName as unknown:
            self.fail(unknown.headline(), param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.registry) + "]"


class Choice(click.Choice):  # type: ignore[type-arg]
    """click's Choice, with a suggestion for a near miss (`gree_l`: did you mean `gree-l`?)."""

    def convert(self, value: AnyType, param: click.Parameter | None, ctx: click.Context | None) -> AnyType:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as error:
            hint = did_you_mean(str(value), [str(choice) for choice in self.choices])
            if hint is None:
                raise
            self.fail(f"{error.message} ({hint})", param, ctx)


class ParsedParam(click.ParamType):
    """A value read by a parse function: its ValueError becomes click's usage error (exit 2) with its message.

    A value already parsed (a default, a configuration file's setting read earlier) passes through."""

    def __init__(self, name: str, parse: Callable[[str], object], parsed: type | tuple[type, ...]):
        self.name, self.parse, self.parsed = name, parse, parsed

    def convert(self, value: AnyType, param: click.Parameter | None, ctx: click.Context | None) -> AnyType:
        if isinstance(value, self.parsed):
            return value
        try:
            return self.parse(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@dataclass(frozen=True)
class RelativeTime:
    """A time given as `+DURATION`: `seconds` after a clock the command knows (`resolve_time` makes it absolute)."""

    seconds: float
    text: str


TimeValue = datetime | RelativeTime
TIME_HELP = "ISO-8601 with a zone, or +DURATION after {clock} such as +2h"


def time_help(text: str, clock: str = "the plan's clock") -> str:
    """An option's help, saying which times it accepts and what a relative one counts from."""
    return f"{text} [{TIME_HELP.format(clock=clock)}]"


class TimeParam(click.ParamType):
    """An absolute ISO-8601 time with a zone, or a relative `+2h` (a RelativeTime, for `resolve_time`)."""

    name = "TIME"

    def convert(self, value: AnyType, param: click.Parameter | None, ctx: click.Context | None) -> TimeValue:
        if isinstance(value, datetime | RelativeTime):
            return value
        text = str(value).strip()
        try:
            if text.startswith("+"):
                return RelativeTime(units.parse_relative(text), text)
            return units.parse_instant(text)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@overload
def resolve_time(value: TimeValue, clock: datetime) -> datetime: ...
@overload
def resolve_time(value: None, clock: datetime) -> None: ...
@overload
def resolve_time(value: TimeValue | None, clock: datetime) -> datetime | None: ...


def resolve_time(value: TimeValue | None, clock: datetime) -> datetime | None:
    """The absolute time: a RelativeTime counts from `clock`; an absolute time and None stay as they are."""
    if isinstance(value, RelativeTime):
        try:
            return units.in_range(clock + timedelta(seconds=value.seconds))
        except (OverflowError, ValueError):  # `+1e12d` passes the calendar's end
            raise RayonError(f"`{value.text}` after {units.format_instant(clock)} is past the end of the calendar",
                             hint=f"give a shorter duration; {units.TIME_RANGE}") from None
    return value


def cluster_option(required: bool = False) -> AnyType:
    help_text = "Cluster file (YAML) to check resources and fit against."
    return click.option("--cluster", "cluster_path", type=click.Path(exists=True, dir_okay=False),
                        required=required, help=help_text)


def read_cluster(path: str | None) -> Cluster | None:
    """The cluster file (None without a path); its errors are raised, positioned."""
    return None if path is None else load_cluster(path)


def cluster_start(cluster: Cluster | None, when: RelativeTime) -> datetime:
    """The cluster's start, which a relative `--now` counts from; without a cluster, an error saying what to give."""
    if cluster is None:
        raise RayonError(f"--now {when.text} counts from the cluster's start, and no cluster file was given",
                         hint="give --cluster CLUSTER.yaml (or a cluster file among the paths), or an absolute time")
    return cluster.start


def error_json(error: RDLError) -> dict[str, AnyType]:
    span = error.span
    return {"file": span.file, "line": span.line or None, "col": span.col or None, "json_path": span.json_path,
            "message": error.message, "expected": error.expected, "hint": error.hint, "text": error.headline()}


def file_json(loaded: LoadedFile, context: Context) -> dict[str, AnyType]:
    data: dict[str, AnyType] = {"path": loaded.path, "format": loaded.format, "valid": loaded.errors is None}
    if loaded.errors is not None:
        data["errors"] = [error_json(e) for e in loaded.errors.errors]
    else:
        data["reservations"] = [summarize(r, context).to_json() for r in loaded.reservations]
    return data


def summary_rows(loaded: LoadedFile, context: Context) -> list[list[str]]:
    rows = []
    for reservation in loaded.reservations:
        s = summarize(reservation, context)
        window = f"[{units.format_instant(s.start)}, {units.format_instant(s.end) if s.end else 'open'})"
        path = units.format_duration(s.critical_path_seconds) if s.critical_path_seconds else "-"
        every = units.format_duration(s.every) + (f" {reservation.tz}" if reservation.tz else "") if s.every else "-"
        rows.append([s.name, s.user or "-", window, f"{s.work_seconds / 3600:g}", str(s.atoms), path, every])
    return rows


@click.command("check", cls=RayonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@cluster_option()
@click.option("--format", "form", type=click.Choice(FORMATS), help="Read every file as this form (default: by "
              "suffix and content).")
@click.option("--now", "when", type=TimeParam(), help=time_help("Submission time for relative times (default: the "
              "cluster's start).", "the cluster's start"))
@click.option("--json", "as_json", is_flag=True, help="One JSON document on standard output.")
def check_command(paths: tuple[str, ...], cluster_path: str | None, form: str | None, when: TimeValue | None,
                  as_json: bool) -> None:
    """Validate reservation files (.rdl, .json, YARN JSON) and cluster files; summarise what is valid.

    PATHS are files or folders. A cluster file among them (or --cluster) is what the
    reservations are checked against. Exit status: 0 all valid, 2 any invalid.
    """
    cluster = read_cluster(cluster_path)
    files = load(paths, form, cluster, when if isinstance(when, datetime) else None)
    if cluster is None:
        clusters = [f.cluster for f in files if f.cluster is not None]
        cluster = clusters[0] if len(clusters) == 1 else None
    now = when if isinstance(when, datetime) else None
    if isinstance(when, RelativeTime):  # validated once more, now that the submission time is known
        now = resolve_time(when, cluster_start(cluster, when))
        files = load(paths, form, cluster, now)
    context = Context.of(cluster, now)
    errors = all_errors(files)
    echo_warnings(files)
    if as_json:
        click.echo(json.dumps({"valid": errors is None, "files": [file_json(f, context) for f in files]}, indent=2))
    else:
        echo_check(files, context, cluster)
    if errors is not None:
        raise Reported()


def echo_warnings(files: list[LoadedFile]) -> None:
    """Warnings of the files that parsed, on standard error: they never change the exit status."""
    for loaded in files:
        if loaded.errors is None:
            for warning in lint(loaded.format, loaded.text, loaded.path):
                click.echo(warning.render({loaded.path: loaded.text}), err=True)


def echo_check(files: list[LoadedFile], context: Context, cluster: Cluster | None) -> None:
    rows = [row for f in files if f.errors is None for row in summary_rows(f, context)]
    if rows:
        click.echo(format_table(["NAME", "USER", "WINDOW", "WORK (bundle-h)", "ATOMS", "CRITICAL PATH", "EVERY"],
                                rows))
    for loaded in files:
        if loaded.cluster is not None:
            c = loaded.cluster
            sizes = ", ".join(f"{k} {units.format_quantity(k, v)}" for k, v in c.capacity.items())
            click.echo(f"{loaded.path}: cluster of {sizes}, {c.steps} steps of {units.format_duration(c.step)}")
    invalid = [f for f in files if f.errors is not None]
    for loaded in invalid:
        assert loaded.errors is not None
        click.echo(loaded.errors.render(), err=True)
    if cluster is None and any(f.reservations for f in files):
        click.echo("note: no cluster file given; resource names and fit were not checked (use --cluster)", err=True)
    count = sum(len(f.reservations) for f in files if f.errors is None)
    click.echo(f"{count} reservation(s) valid in {len(files) - len(invalid)} file(s); "
               f"{len(invalid)} file(s) with errors", err=True)


@click.command("fmt", cls=RayonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "form", type=click.Choice(FORMATS), help="Read every file as this form.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON form instead of RDL text.")
def fmt_command(paths: tuple[str, ...], form: str | None, as_json: bool) -> None:
    """Print reservations in canonical form (RDL text, or the JSON form with --json)."""
    files = [f for f in load(paths, form) if f.cluster is None]
    errors = all_errors(files)
    if errors is not None:
        raise errors
    reservations = [r for f in files for r in f.reservations]
    if as_json:
        click.echo(json.dumps([to_json(r) for r in reservations], indent=2))
    else:
        click.echo(format_reservations(reservations), nl=False)


COMMANDS = [check_command, fmt_command]
