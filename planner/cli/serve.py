"""`rayon serve` (the HTTP API on uvicorn) and `rayon token` (make a bearer token, store its hash).

Exit status: 2 for bad input (a configuration or token file that does not read, no tokens at all, a
store without a plan), 1 when the server cannot start (the port is taken, the database is unreachable).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
import yaml
from click.core import ParameterSource

from planner.api import logs
from planner.api.auth import ENV_TOKEN_FILE, ENV_TOKENS, ROLES, TokenError, TokenRegistry, append_token, utcnow
from planner.api.clockwork import ClockMode
from planner.api.jobs import MAX_TIME_LIMIT
from planner.api.limits import DEFAULT_MAX_BODY, ConnectionLimits
from planner.api.schedule import DEFAULT_REPLAN_LIMIT
from planner.cli.options import open_state
from planner.store.facade import Store, StoreError, default_state_path
from planner.store.forward import ENV_FOLDER
from rdl import units
from rdl.cli import ParsedParam, RayonCommand
from rdl.cluster import positive_duration
from rdl.config import ConfigReader
from rdl.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, RayonError
from rdl.source import read_text

if TYPE_CHECKING:
    from fastapi import FastAPI

    from planner.api.extension import Extension

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
MAX_WORKERS = 64
DECIDERS = ("inline", "process")
PATHS = ("state", "tokens")  # configuration keys whose relative paths count from the configuration file's folder
NULL = "tag:yaml.org,2002:null"
log = logging.getLogger("rayon.serve")


def fail(message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
    """Stop the command: `message` for the user, `status` for the shell."""
    raise RayonError(message, exit_code=status)


def load_tokens(path: str | None) -> TokenRegistry:
    """The token registry, or exit 2 naming what is wrong (an empty one too: every request would be refused)."""
    try:
        tokens = TokenRegistry.load(path)
    except TokenError as error:
        fail(str(error))
    if not len(tokens):
        fail(f"no tokens: every request would be refused; make one with `rayon token USER --tokens FILE` and pass "
             f"--tokens FILE (or set ${ENV_TOKENS})")
    return tokens


def open_store(state: str | None) -> Store:
    """The store, which must hold a plan; or exit with the store's message."""
    try:
        store = open_state(state)  # a missing file is an error: serving creates no store
        store.meta()
    except StoreError as error:
        fail(str(error), EXIT_INTERNAL if error.code in ("database", "driver") else EXIT_BAD_INPUT)
    return store


def tokens_for(tokens: TokenRegistry) -> str:
    """`1 token for alice`, `3 tokens for alice, ops`: what the server will accept, in words."""
    count = len(tokens)
    return f"{count} token{'' if count == 1 else 's'} for {', '.join(tokens.users())}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one); exit 1 when it cannot be had."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except (OSError, UnicodeError) as exc:  # UnicodeError: a name the IDNA codec refuses
        fail(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}", EXIT_INTERNAL)
    sock.set_inheritable(True)
    return sock


_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


class HostParam(click.ParamType):
    """An address to listen on: an IP address, or a host name of letters, digits and `-` in dot-separated labels."""

    name = "HOST"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_address(text))
        if 0 < len(text) <= 253 and all(_LABEL.fullmatch(label) for label in text.removesuffix(".").split(".")):
            return text
        self.fail(f"`{text}` is not a host name or an IP address (such as 127.0.0.1, ::1 or localhost)", param, ctx)


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class Options:
    """What `rayon serve` was asked for: its flags, over its configuration file's settings, over the defaults."""

    state_path: str | None
    host: str
    port: int
    tokens_path: str | None
    max_body: int
    log_level: str
    access_log: bool
    log_format: str
    clock: ClockMode
    replan_every: float | None
    replan_time_limit: float
    workers: int = 1
    decider: str | None = None  # `inline` or `process`; None: `default_decider` of the workers and the cores
    max_connections: int = ConnectionLimits.max_connections
    max_header_bytes: int = ConnectionLimits.header_bytes
    header_timeout: float = ConnectionLimits.header_seconds
    extra: Mapping[str, object] = field(default_factory=dict)  # options a command built on this one adds


def config_keys(command: click.Command) -> dict[str, click.Option]:
    """The keys a configuration file may hold, one per long option (`max-body`), and their options."""
    found = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in ("config_path", "help"):
            found[next(opt[2:] for opt in param.opts if opt.startswith("--"))] = param
    return found


def read_config(path: str, command: click.Command) -> dict[str, object]:
    """The settings of a configuration file, by parameter name, each read as its flag's value would be; every
    unknown key and bad value is a positioned error (`FILE:LINE:COL`). Relative paths count from the file's folder."""
    text = read_text(path)
    reader = ConfigReader(path)
    what = "the configuration of `rayon serve`"
    root = reader.compose(text, what, "`key: value` lines, a key per long option, such as `port: 8080`")
    reader.sink.raise_if_any({path: text})
    assert root is not None
    keys = config_keys(command)
    settings: dict[str, object] = {}
    for key, (key_node, value_node) in reader.mapping(root, what).items():
        option = keys.get(key)
        if option is None:
            reader.unknown(key_node, key, keys, what)
        elif isinstance(value_node, yaml.ScalarNode) and value_node.tag == NULL:
            reader.sink.add(reader.span(value_node), f"`{key}` needs a value")
        else:
            value = reader.scalar(value_node, partial(flag_value, option), f"`{key}`")
            if value is not None and option.name is not None:
                settings[option.name] = beside(path, value) if key in PATHS else value
    reader.sink.raise_if_any({path: text})
    return settings


def flag_value(option: click.Option, text: str) -> object:
    """The value `text` stands for as the option's flag; ValueError saying why not."""
    try:
        return option.type.convert(text, option, None)
    except click.BadParameter as exc:
        if isinstance(option.type, click.types.BoolParamType):  # click's message lists a dozen spellings
            raise ValueError(f"`{text}` is not a boolean; give true or false") from None
        raise ValueError(exc.message) from None


def beside(config: str, value: object) -> object:
    """A file path given in a configuration file, counted from the file's folder (a database URL stays as it is)."""
    if not isinstance(value, str) or "://" in value:
        return value
    return str(Path(config).parent / Path(value).expanduser())


def options(ctx: click.Context, config_path: str | None) -> Options:
    """The command's options: a flag (or its environment variable) wins over the configuration file's setting."""
    given = {name: value for name, value in ctx.params.items() if name != "config_path"}
    if config_path is not None:
        for name, value in read_config(config_path, ctx.command).items():
            if ctx.get_parameter_source(name) not in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
                given[name] = value
    known = {f.name for f in fields(Options)}
    return Options(**{k: v for k, v in given.items() if k in known},
                   extra={k: v for k, v in given.items() if k not in known})


@click.command("serve", cls=RayonCommand)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="A YAML file of these options, a key per long option (`port: 8080`, `max-body: 65536`); flags "
              "given here win over it.")
@click.option("--state", "state_path", envvar="RAYON_STATE", show_envvar=True,
              help=f"Plan store: a SQLite file or a database URL [default: {default_state_path()}].")
@click.option("--host", type=HostParam(), default="127.0.0.1", show_default=True,
              help="Address to listen on (only this machine by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port to listen on (0: any free port, printed at start).")
@click.option("--tokens", "tokens_path", type=click.Path(dir_okay=False), envvar=ENV_TOKEN_FILE, show_envvar=True,
              help=f"Token file (hashes only; `rayon token` writes it); ${ENV_TOKENS} adds more.")
@click.option("--max-body", type=click.IntRange(min=1), default=DEFAULT_MAX_BODY, show_default=True,
              help="Largest request body accepted, in bytes (larger: 413).")
@click.option("--max-connections", type=click.IntRange(min=1), default=ConnectionLimits.max_connections,
              show_default=True, help="Connections one server process holds open at most; one more is answered 503 "
              "and closed (keep it below the process's open-file limit, `ulimit -n`).")
@click.option("--max-header-bytes", type=click.IntRange(min=1024), default=ConnectionLimits.header_bytes,
              show_default=True, help="Largest request line and headers, in bytes (larger: 431, connection closed).")
@click.option("--header-timeout", type=click.FloatRange(min=0.1, max=3600), default=ConnectionLimits.header_seconds,
              show_default=True, help="Seconds a request's headers may take to arrive whole (slower: 408, "
              "connection closed).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True)
@click.option("--access-log/--no-access-log", default=True, show_default=True, help="Log every request.")
@click.option("--log-format", type=click.Choice(logs.FORMATS), default="text", show_default=True,
              help="json: one JSON object per line (time, level, logger, message; method, path, status and "
              "duration for a request).")
@click.option("--clock", type=ParsedParam("clock", ClockMode.parse, ClockMode), default="wall", show_default=True,
              metavar="wall|manual|fast:N",
              help="How the plan's clock moves: with the wall clock (advanced every step, caught up at start), "
              "only by `rayon advance` (manual), or N times faster than real time from where it stands (fast:N).")
@click.option("--replan-every", type=ParsedParam("duration", positive_duration, (int, float)), metavar="DURATION",
              help="Re-optimise the plan (the MILP, in a worker) each time its clock has moved this far, such as 6h; "
              "the jobs show in GET /v1/jobs.")
@click.option("--replan-time-limit", type=click.FloatRange(0.5, MAX_TIME_LIMIT), default=DEFAULT_REPLAN_LIMIT,
              show_default=True, help="Seconds each scheduled replan's solver may take.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=1, show_default=True,
              help="Worker processes serving the one plan on the one port, for more requests per second on "
              "several cores; one of them keeps the clock.")
@click.option("--decider", type=click.Choice(DECIDERS), help="Where submissions are decided: `process`, a process of "
              "its own beside the workers (the default on two cores or more, where it answers the most submissions "
              "a second, and with several workers); `inline`, in the serving process (the default with one worker "
              "on one core: a single process; with several workers, one of them decides for all). The cores counted "
              "are those this process may run on (`taskset`, a container's cpuset).")
@click.pass_context
def serve(ctx: click.Context, config_path: str | None, **_: object) -> None:  # the options: `options(ctx)`
    """Serve the plan over HTTP: native endpoints under /v1, YARN's reservation REST API under /ws/v1.

    Job managers submit reservations and get the decision in milliseconds. Every call but
    /v1/health, /v1/ready and /metrics (Prometheus) needs a bearer token (`rayon token`). The
    OpenAPI schema is at /openapi.json, the interactive docs at /docs. SIGTERM stops it cleanly.
    """
    run(options(ctx, config_path))


def no_extensions(_store: Store) -> Sequence[Extension]:
    """Nothing added above the API."""
    return ()


def run(given: Options, extensions: Callable[[Store], Sequence[Extension]] = no_extensions) -> None:
    """Serve with these options until SIGTERM; `extensions` (given the store) add what layers above the API
    serve too (the follower's queues: follower/cli/serve.py). With several workers `extensions` must pickle."""
    from planner.api import server

    tokens = load_tokens(given.tokens_path)
    store = open_store(given.state_path)
    apart = (given.decider or default_decider(given.workers, cores())) == "process"
    app = None if given.workers > 1 or apart else build_app(given, extensions, tokens, store)
    sock = bind(given.host, given.port)
    where = sock.getsockname()
    url_host = f"[{where[0]}]" if ":" in where[0] else where[0]
    logs.configure(given.log_format, given.log_level, given.access_log)
    if not loopback(given.host):
        log.warning("listening on %s, beyond this machine: bearer tokens travel in the clear unless a TLS proxy "
                    "stands in front", given.host)
    clock = given.clock
    moving = {"manual": "moves only with `rayon advance`", "wall": "follows the wall clock",
              "fast": f"runs {clock.rate:g} times faster than real time"}[clock.kind]
    processes = ""
    if app is None and apart:
        processes = f"{given.workers} worker process{'es' if given.workers > 1 else ''} and a deciding process; "
    elif app is None:
        processes = f"{given.workers} worker processes, one of them deciding; "
    log.info("rayon serve: plan store %s; plan clock %s (%s); %s; %slistening on http://%s:%d", store.where,
             units.format_instant(store.now()), moving, tokens_for(tokens), processes, url_host, where[1])
    if app is None:
        store.close()  # each worker opens its own
        server.run_workers(partial(worker_app, given, extensions), sock, given.log_level, given.workers,
                           partial(decide_for_workers, given) if apart else None, limits(given))
        return  # SIGHUP: the supervisor replaces the workers one by one, and the new ones read the token file
    signal.signal(signal.SIGHUP, lambda *_: tokens.refresh(force=True))  # re-read the token file now
    server.run(app, sock, given.log_level, limits(given))


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset` narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform (macOS): every core counts
        return os.cpu_count() or 1


def default_decider(workers: int, cores: int) -> str:
    """Where submissions are decided when `--decider` is not given: in a process of their own (`process`) with
    several workers or on two cores or more, where it answers the most submissions a second; `inline` with one
    worker on one core, where a second busy process would only share the one core with the first."""
    return "process" if workers > 1 or cores >= 2 else "inline"


def limits(given: Options) -> ConnectionLimits:
    """The limits on connections these options set."""
    return ConnectionLimits(given.max_connections, given.max_header_bytes, given.header_timeout)


def build_app(given: Options, extensions: Callable[[Store], Sequence[Extension]], tokens: TokenRegistry,
              store: Store) -> FastAPI:
    """The app these options serve, over this store, answering these tokens."""
    from planner.api.app import create_app

    return create_app(given.state_path, tokens, max_body=given.max_body, store=store, clock=given.clock,
                      extensions=extensions(store), replan_every=given.replan_every,
                      replan_time_limit=given.replan_time_limit)


def worker_app(given: Options, extensions: Callable[[Store], Sequence[Extension]]) -> FastAPI:
    """One worker process's app (`--workers`): its own logging, tokens and store, as the parent checked them."""
    from planner.api import server

    logs.configure(given.log_format, given.log_level, given.access_log)
    store = open_store(given.state_path)
    if folder := os.environ.get(ENV_FOLDER):  # run_workers' folder: one worker decides for all
        store.share_decisions(Path(folder))
    app = build_app(given, extensions, load_tokens(given.tokens_path), store)
    server.tune_collector()
    server.end_with_server(lambda: os.kill(os.getpid(), signal.SIGTERM))  # ends as on SIGTERM: requests finish
    return app


def decide_for_workers(given: Options) -> None:
    """The deciding process of `--workers`: the store, deciding every worker's submissions, and no HTTP, until
    SIGTERM or SIGINT (then it finishes the batches it is deciding and exits 0)."""
    from planner.api import server
    from planner.api.metrics import Metrics

    logs.configure(given.log_format, given.log_level, given.access_log)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the server's reload: the workers re-read the token file
    store = open_store(given.state_path)
    try:
        Metrics().watch_writes(store)  # its commits and batches, counted with the workers' figures
        store.share_decisions(Path(os.environ[ENV_FOLDER]))
        server.tune_collector()  # the plan it holds out of the collector's walks, as in the workers
        server.end_with_server(stop.set)
        store.wait_to_decide(stop)  # at once, unless a worker decides meanwhile in place of a dead predecessor
        while not stop.wait(1.0):
            pass
    finally:
        store.close()


@click.command("token", cls=RayonCommand)
@click.argument("user")
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True,
              help="admin: may see and change every reservation, and re-plan.")
@click.option("--tokens", "tokens_path", type=click.Path(dir_okay=False), envvar=ENV_TOKEN_FILE, show_envvar=True,
              required=True, help="Token file to add the hash to (created, readable by its owner only).")
@click.option("--expires", "lifetime", metavar="DURATION", help="The token stops working this long from now "
              "(`30d`, `12h`); default: never.")
def token(user: str, role: str, tokens_path: str, lifetime: str | None) -> None:
    """Make a bearer token for USER: its hash goes into the token file, the token to standard output, once."""
    expires = None
    if lifetime is not None:
        try:
            expires = utcnow() + timedelta(seconds=positive_duration(lifetime))
        except ValueError as exc:
            fail(f"--expires: {exc}")
    try:
        secret = append_token(tokens_path, user, role, expires)
    except TokenError as error:
        fail(str(error))
    click.echo(secret)
    until = f", valid until {units.format_instant(expires)}" if expires else ""
    article = "an" if role[:1] in "aeio" else "a"  # an admin, a user
    click.echo(f"added {article} {role} token for `{user}` to {tokens_path}{until}; it is shown only this once "
               "(a running server picks up the file's changes within seconds, or at once on SIGHUP)", err=True)


# `rayon serve` itself is follower/cli/serve.py's: this command with the plan follower's queues added.
COMMANDS = [token]
