"""A click group whose commands are imported only when one of them runs (click's documented LazyGroup pattern).

`rayon --help` and `rayon check` must start in a blink, yet other commands pull in NumPy, SQLAlchemy,
FastAPI, PuLP, Matplotlib and SimPy. So the group knows each command by name, import path and one-line
help, and imports a command's module only when that command is asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click

from rdl.errors import did_you_mean


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A command known without importing it: its name, `module:attribute`, and the one line `--help` shows."""

    name: str
    target: str
    help: str

    def load(self) -> click.Command:
        """The command itself, its module imported now."""
        module, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command) or command.name != self.name:
            raise TypeError(f"{self.target} is not the click command `{self.name}`")
        return command

    def stub(self) -> click.Command:
        """A command that only describes this one, for `--help` (click shortens its help the same way)."""
        return click.Command(self.name, help=self.help)


class LazyGroup(click.Group):
    """A group of `LazyCommand`s: listed and described statically, each imported when it is resolved."""

    def __init__(self, *args: Any, lazy_commands: tuple[LazyCommand, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = {command.name: command for command in lazy_commands}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        """click's, with a suggestion for a near miss (`rayon sumbit`: did you mean `submit`?)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hint = did_you_mean(name, self.list_commands(ctx))
            ctx.fail(f"No such command '{name}'." + (f" ({hint})" if hint else ""))
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self.lazy_commands[cmd_name].load())  # once: later lookups are plain
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of `--help`, as click writes it, from the static help (nothing is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                rows.append((name, self.lazy_commands[name].stub().get_short_help_str(limit)))
            elif not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
