"""ANSI colours of the terminal table (the only format a terminal shows as it is)."""

from __future__ import annotations

_CODES = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "bold": "1", "dim": "2"}


def paint(text: str, colour: str, enabled: bool) -> str:
    return f"\x1b[{_CODES[colour]}m{text}\x1b[0m" if enabled else text
