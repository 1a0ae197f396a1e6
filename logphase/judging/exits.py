"""Verdict → exit code (docs/design.md §6): one exhaustive match, so a new Verdict member is a mypy error here."""

from __future__ import annotations

from typing import assert_never

from logphase.errors import ExitCode
from logphase.phases import Verdict


def exit_code(verdict: Verdict, *, doubtful: bool = False) -> ExitCode:
    """`doubtful`: the evidence does not carry the verdict (low confidence): a success is then no
    exit 0 — a script must never take it for one."""
    match verdict:
        case Verdict.READY | Verdict.FINISHED:
            return ExitCode.UNKNOWN if doubtful else ExitCode.OK
        case Verdict.PROGRESSING:
            return ExitCode.STARTING
        case Verdict.STALLED | Verdict.CRASHED | Verdict.ABORTED | Verdict.TIMEOUT:
            return ExitCode.PROBLEM
        case Verdict.UNKNOWN:
            return ExitCode.UNKNOWN
        case _:
            assert_never(verdict)
