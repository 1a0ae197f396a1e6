"""The `logphase` command line: the only package that prints, reads the clock or the environment.

One module per command; each exposes a click command that is registered on `main` here."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from logphase import __version__
from logphase.errors import LogphaseError

# Each command's module is imported only when that command runs: `logphase stacks` must not pay
# for the log pipeline's imports (a snapshot's wall time is what the user waits for).
COMMANDS = {
    "analyze": "logphase.cli.analyze:analyze",
    "patterns": "logphase.cli.patterns:patterns",
    "runs": "logphase.cli.runs:runs",
    "stacks": "logphase.cli.stacks:stacks",
    "watch": "logphase.cli.watch:watch",
}


class LogphaseGroup(click.Group):
    """Loads commands on demand, and turns every LogphaseError into one line on stderr, its hint,
    and the error's exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LogphaseError as error:
            click.echo(f"logphase: error: {error.message}", err=True)
            if error.hint:
                click.echo(f"  hint: {error.hint}", err=True)
            sys.exit(int(error.exit_code))


@click.group(cls=LogphaseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logphase")
def main() -> None:
    """Is a multi-GPU LLM server hung or still starting — and if hung, where?

    \b
    logphase analyze server.log        phase timeline, verdict, root-cause line
    logphase stacks --pid 1234         every rank's Python stack, merged
    logphase watch server.log --url URL   follow a starting server until ready, stalled or crashed
    logphase runs list                 earlier runs, the baselines for ETAs
    logphase patterns list             the rules logphase knows
    """
