"""House manners of the command line: usage errors in the house form, the version, durations."""

from __future__ import annotations

import pytest

from logphase import __version__
from logphase.durations import format_duration
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (
            ["anlyze", "x.log"],
            ["logphase: error: No such command 'anlyze'. Did you mean 'analyze'?", "  hint: see 'logphase --help'"],
        ),
        (
            ["analyze", "--fromat", "json", "x.log"],
            [
                "logphase: error: No such option '--fromat'. Did you mean '--format'?",
                "  hint: see 'logphase analyze --help'",
            ],
        ),
        (["analyze"], ["logphase: error: Missing argument 'LOGS...'.", "  hint: see 'logphase analyze --help'"]),
        (
            ["analyze", "--format", "yaml", "x.log"],
            [
                "logphase: error: Invalid value for '--format': 'yaml' is not one of 'table', 'json', 'markdown'.",
                "  hint: see 'logphase analyze --help'",
            ],
        ),
    ],
)
def test_usage_errors_are_one_line_and_a_hint(args: list[str], lines: list[str]) -> None:
    # GIVEN a mistyped command line WHEN run THEN exit 2 with the house form, nothing on stdout
    result = run_cli(*args)
    assert (result.exit_code, result.stderr.splitlines(), result.stdout) == (2, lines, "")


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    result = run_cli(flag)
    assert (result.exit_code, result.stdout) == (0, f"logphase, version {__version__}\n")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "?"),
        (44.6, "45s"),
        (185, "3m05s"),
        (3720, "1h02m"),
        (86399, "23h59m"),
        (86400 * 6 + 8 * 3600 + 59, "6d 8h"),
    ],
)
def test_durations_read_in_days_hours_minutes_seconds(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text
