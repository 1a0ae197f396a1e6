"""ANSI colours of the terminal table (the only format a terminal shows as it is)."""

from __future__ import annotations

from typing import assert_never

from logphase.phases import Verdict

_CODES = {
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
    "bold": "1",
    "dim": "2",
    # bars: dark letters on a coloured ground, so a bar reads as a block and still names its phase
    "on_grey": "30;47",
    "on_cyan": "30;46",
    "on_blue": "97;44",
    "on_magenta": "30;45",
    "on_yellow": "30;43",
    "on_green": "30;42",
    "on_bright_cyan": "30;106",
    "on_bright_yellow": "30;103",
    "on_bright_green": "30;102",
    "on_bright_magenta": "30;105",
    "on_red": "97;41",
}


def verdict_colour(verdict: Verdict) -> str:
    """One exhaustive match: a new Verdict member is a mypy error here until it has a colour."""
    match verdict:
        case Verdict.READY | Verdict.FINISHED:
            return "green"
        case Verdict.PROGRESSING:
            return "cyan"
        case Verdict.STALLED:
            return "yellow"
        case Verdict.CRASHED | Verdict.ABORTED | Verdict.TIMEOUT:
            return "red"
        case Verdict.UNKNOWN:
            return "dim"
        case _:
            assert_never(verdict)


def paint(text: str, colour: str, enabled: bool) -> str:
    return f"\x1b[{_CODES[colour]}m{text}\x1b[0m" if enabled else text
