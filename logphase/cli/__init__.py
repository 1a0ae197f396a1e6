"""The `logphase` command line: the only package that prints, reads the clock or the environment.

One module per command; each exposes a click command that is registered on `main` here."""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

from logphase import __version__
from logphase.errors import LogphaseError

# Each command's module is imported only when that command runs: `logphase stacks` must not pay
# for the log pipeline's imports (a snapshot's wall time is what the user waits for).
COMMANDS = {
    "analyze": "logphase.cli.analyze:analyze",
    "bundle": "logphase.cli.bundle:bundle",
    "patterns": "logphase.cli.patterns:patterns",
    "runs": "logphase.cli.runs:runs",
    "stacks": "logphase.cli.stacks:stacks",
    "watch": "logphase.cli.watch:watch",
}

# What `logphase --help` lists for each command, without importing it (that would cost every
# command's imports, ~200 ms); tests/test_cli_help.py holds each equal to the command's own.
SUMMARIES = {
    "analyze": "Which phase each rank reached, whether the server is ready, progressing, stalled or crashed, "
    "and the line that explains it.",
    "bundle": "One .tar.gz for a bug report, redacted.",
    "patterns": "The rules logphase matches log lines with.",
    "runs": "Recorded runs: what `analyze --baseline` and `watch` compare a run with.",
    "stacks": "Snapshot the Python stacks of every rank of a server (or read dumps), merge them into one tree, "
    "and name the odd rank and where the rest wait.",
    "watch": "Follow a starting server's log and tell, live, whether it is ready, still starting, stalled or crashed.",
}

# Ctrl-C: the shell's own code for a process ended by SIGINT (128 + 2).
INTERRUPTED = 130


class LogphaseGroup(click.Group):
    """Loads commands on demand, and turns every LogphaseError into one line on stderr, its hint,
    and the error's exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from SUMMARIES: `--help` imports no command."""
        commands = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in commands)
        rows = [(name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)) for name in commands]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    own_process = False  # invoked as the process's entry (see __call__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The process's own entry: the console script and `python -m logphase` call the group;
        CliRunner (the tests) calls `main`, in a process that goes on."""
        self.own_process = True
        return super().__call__(*args, **kwargs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        if not self.own_process:
            command: click.Command = getattr(importlib.import_module(module_name), attribute)
            return command
        # What the command imports lives as long as the process: the cyclic collector need not look
        # at it, while it is made nor after. Its passes over those objects took 4-17 ms of a small
        # log's run (BENCHMARKS.md, start-up); frozen, a pass looks at the run's own objects only.
        gc.disable()
        try:
            command = getattr(importlib.import_module(module_name), attribute)
        finally:
            gc.freeze()
            gc.enable()
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib  # only for a mistyped command

            close = difflib.get_close_matches(name, COMMANDS, n=1)
            suggestion = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(f"No such command '{name}'.{suggestion}", ctx)
        return super().resolve_command(ctx, args)

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        """Click's own errors (usage, bad option values) in the house form: one `logphase: error:`
        line and a hint, exit 2 — the same shape as every other error."""
        try:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        except click.exceptions.Exit as done:
            sys.exit(done.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
            click.echo("logphase: interrupted", err=True)
            sys.exit(INTERRUPTED)
        except click.ClickException as error:
            click.echo(f"logphase: error: {error.format_message()}", err=True)
            context = getattr(error, "ctx", None)
            command = context.command_path if context is not None else "logphase"
            click.echo(f"  hint: see '{command} --help'", err=True)
            sys.exit(error.exit_code)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LogphaseError as error:
            click.echo(f"logphase: error: {error.message}", err=True)
            if error.hint:
                click.echo(f"  hint: {error.hint}", err=True)
            sys.exit(int(error.exit_code))


@click.group("logphase", cls=LogphaseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="logphase")
def main() -> None:
    """Is a multi-GPU LLM server hung or still starting — and if hung, where?

    \b
    logphase analyze server.log        phase timeline, verdict, root-cause line
    logphase stacks --pid 1234         every rank's Python stack, merged
    logphase watch server.log --url URL   follow a starting server until ready, stalled or crashed
    logphase bundle server.log         one redacted .tar.gz for a bug report
    logphase runs list                 earlier runs, the baselines for ETAs
    logphase patterns list             the rules logphase knows
    """
