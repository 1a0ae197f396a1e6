"""`logphase --help` lists every command with its own summary, without importing the commands."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from logphase.cli import COMMANDS, SUMMARIES, main


def test_every_command_has_its_own_summary() -> None:
    # GIVEN every registered command
    context = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(context, name)
        assert command is not None
        # THEN the summary --help lists is the command's own (its help's first sentence)
        assert SUMMARIES[name] == command.get_short_help_str(limit=10**6)
    assert set(SUMMARIES) == set(COMMANDS)


def test_help_lists_every_command_with_its_summary() -> None:
    # WHEN the top-level help is shown
    result = CliRunner().invoke(main, ["--help"])
    # THEN each command is listed with the start of its summary
    assert result.exit_code == 0
    listed = result.output.split("Commands:\n", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.strip()] == sorted(COMMANDS)
    assert "  bundle    One .tar.gz for a bug report, redacted.\n" in listed


def test_help_imports_no_command() -> None:
    # GIVEN a fresh interpreter
    # WHEN it shows the top-level help
    probe = (
        "import sys\nfrom logphase.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('logphase.cli.')), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    # THEN no command module (nor the pipeline behind it) was imported
    assert done.stderr.strip() == "[]"
