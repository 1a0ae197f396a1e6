"""Verdict and confidence → exit code (docs/design.md §6), for every command that judges a run: one
exhaustive match, so a new Verdict member is a mypy error here."""

from __future__ import annotations

from typing import assert_never

from logphase.errors import ExitCode
from logphase.judging.confidence import Confidence
from logphase.phases import Verdict


def exit_code(verdict: Verdict, confidence: Confidence) -> ExitCode:
    """A success the evidence does not carry (low confidence) is no exit 0: a script must never take
    it for one."""
    match verdict:
        case Verdict.READY | Verdict.FINISHED:
            return ExitCode.UNKNOWN if confidence is Confidence.LOW else ExitCode.OK
        case Verdict.PROGRESSING:
            return ExitCode.STARTING
        case Verdict.STALLED | Verdict.CRASHED | Verdict.ABORTED | Verdict.TIMEOUT:
            return ExitCode.PROBLEM
        case Verdict.UNKNOWN:
            return ExitCode.UNKNOWN
        case _:
            assert_never(verdict)
