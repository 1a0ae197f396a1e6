"""The `logphase` command line: the only package that prints, reads the clock or the environment.

One module per command; each exposes a click command that is registered on `main` here."""

from __future__ import annotations

import sys
from typing import Any

import click

from logphase import __version__
from logphase.errors import LogphaseError


class LogphaseGroup(click.Group):
    """Turns every LogphaseError into one line on stderr, its hint, and the error's exit code."""

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
    logphase patterns list             the rules logphase knows
    """


def _register() -> None:
    # Imported here, after `main` exists, so each command module can stay independent.
    from logphase.cli.analyze import analyze
    from logphase.cli.patterns import patterns
    from logphase.cli.runs import runs
    from logphase.cli.stacks import stacks
    from logphase.cli.watch import watch

    main.add_command(analyze)
    main.add_command(patterns)
    main.add_command(runs)
    main.add_command(watch)
    main.add_command(stacks)


_register()
