"""Where a store command goes: a local plan store (`--state`) or a running `rayon serve` (client mode).

Client mode is chosen, in this order of precedence, by `--state` on the command line (local), `--server URL`
(on the command or before it: `rayon --server URL list`), `$RAYON_SERVER`, `$RAYON_STATE` (local), and the
context file's current context (`--context NAME`, `$RAYON_CONTEXT`). Without any of them the default local
store is used. The token comes from `$RAYON_TOKEN`, else the context (`token:` or `token-file:`).

The context file, `$RAYON_CONFIG` or `~/.config/rayon/config.yaml`, as kubectl keeps its contexts:

    current-context: prod
    contexts:
      prod: {server: "https://rayon.example.com", token-file: ~/.config/rayon/prod.token}
      lab: {server: "http://127.0.0.1:8080", token: "..."}
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any as AnyType

import click
import yaml
from click.core import ParameterSource

from rdl.errors import RayonError, did_you_mean

SERVER_ENV, TOKEN_ENV, CONTEXT_ENV, CONFIG_ENV = "RAYON_SERVER", "RAYON_TOKEN", "RAYON_CONTEXT", "RAYON_CONFIG"
SERVER_KEY, CONTEXT_KEY = "rayon.server", "rayon.context"  # where the group's own options leave their values


@dataclass(frozen=True)
class Remote:
    """A server to talk to, the token to show it (None: none), and what chose it (for messages)."""

    server: str
    token: str | None
    chosen_by: str


def server_option(command: Callable[..., AnyType]) -> Callable[..., AnyType]:
    """`--server URL` on a command that can talk to a running `rayon serve` instead of a local store."""
    return click.option("--server", "server", envvar=SERVER_ENV, show_envvar=True,
                        help="Talk to this running `rayon serve` (its URL) instead of a local store; the token from "
                        f"${TOKEN_ENV} or the context file.")(command)


def config_path() -> Path:
    """The context file: `$RAYON_CONFIG`, else `$XDG_CONFIG_HOME/rayon/config.yaml` (`~/.config` by default)."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rayon" / "config.yaml"


def read_contexts(path: Path) -> tuple[str | None, dict[str, dict[str, AnyType]]]:
    """The context file's current context and its contexts by name; a file that is not one is bad input."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RayonError(f"{path}: cannot read the context file: {exc}", code="input") from None
    contexts = data.get("contexts", {}) if isinstance(data, dict) else None
    if not isinstance(contexts, dict) or not all(isinstance(c, dict) and isinstance(c.get("server"), str)
                                                 for c in contexts.values()):
        raise RayonError(f"{path}: a context file holds `contexts:`, a mapping of names to "
                         "{server: URL, token: TOKEN} (or token-file: PATH)", code="input")
    current = data.get("current-context")
    return (str(current) if current is not None else None), contexts


def context_remote(name: str | None, chosen_by: str) -> Remote | None:
    """The server and token of context `name` (default the file's current one); None when there is no context file
    and no name asked for."""
    path = config_path()
    if not path.exists():
        if name is not None:
            raise RayonError(f"context `{name}` asked for ({chosen_by}), but there is no context file at {path}",
                             code="input", hint=f"write one, or set ${CONFIG_ENV}")
        return None
    current, contexts = read_contexts(path)
    wanted = name or current
    if wanted is None:
        return None
    if wanted not in contexts:
        raise RayonError(f"{path}: no context `{wanted}` ({chosen_by})", code="input",
                         hint=did_you_mean(wanted, contexts) or f"the contexts: {', '.join(contexts) or 'none'}")
    context = contexts[wanted]
    return Remote(context["server"], os.environ.get(TOKEN_ENV) or context_token(context, path),
                  f"context `{wanted}` of {path}")


def context_token(context: dict[str, AnyType], path: Path) -> str | None:
    """A context's token: given inline, or read from its `token-file` (relative to the context file)."""
    if context.get("token") is not None:
        return str(context["token"])
    if context.get("token-file") is None:
        return None
    file = Path(str(context["token-file"])).expanduser()
    file = file if file.is_absolute() else path.parent / file
    try:
        return file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise RayonError(f"{path}: cannot read the token file {file}: {exc}", code="input") from None


def remote_target(state_path: str | None) -> Remote | None:
    """The server this command talks to, or None for a local store (the precedence in this module's doc)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    if ctx.get_parameter_source("state_path") == ParameterSource.COMMANDLINE and state_path is not None:
        return None
    given = ctx.params.get("server") if ctx.get_parameter_source("server") == ParameterSource.COMMANDLINE else None
    server, by = given or ctx.find_root().meta.get(SERVER_KEY), "--server"
    if not server and os.environ.get(SERVER_ENV):
        server, by = os.environ[SERVER_ENV], f"${SERVER_ENV}"
    if server:
        return Remote(str(server), os.environ.get(TOKEN_ENV) or token_for(str(server)), by)
    if state_path is not None:  # $RAYON_STATE
        return None
    named = ctx.find_root().meta.get(CONTEXT_KEY) or os.environ.get(CONTEXT_ENV)
    return context_remote(named, "--context" if named else "the current context")


def token_for(server: str) -> str | None:
    """The token a context file keeps for this server, when `--server` names one of its contexts' servers."""
    path = config_path()
    if not path.exists():
        return None
    _, contexts = read_contexts(path)
    for context in contexts.values():
        if context["server"].rstrip("/") == server.rstrip("/"):
            return context_token(context, path)
    return None


def local_only(command: str, remote: Remote) -> RayonError:
    """The error of a command that needs a local store, asked in client mode."""
    return RayonError(f"`rayon {command}` works on a local plan store; the HTTP API of `rayon serve` has no "
                      f"endpoint for it (client mode, chosen by {remote.chosen_by}: {remote.server})",
                      code="client_mode", hint="run it where the store is, with --state PATH|URL")
