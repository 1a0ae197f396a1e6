"""The error tree of logphase: every error a user can cause carries a hint, and the exit codes."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, docs/design.md §6."""

    OK = 0
    BUG = 1
    USAGE = 2
    CANNOT_RUN = 3
    PROBLEM = 4
    STARTING = 5
    UNKNOWN = 6


class LogphaseError(Exception):
    """An error logphase reports as one line plus a hint, never as a traceback."""

    exit_code: ExitCode = ExitCode.CANNOT_RUN

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputError(LogphaseError):
    """A log or dump could not be read: missing, a directory, no permission, a broken archive."""


class PackError(LogphaseError):
    """A pattern pack is invalid: bad TOML, bad regex, an example that fails."""


class StoreError(LogphaseError):
    """The run store (SQLite) is unusable: corrupt, foreign, locked, not writable."""


class SnapshotError(LogphaseError):
    """Stacks could not be taken: py-spy missing, ptrace denied, no such process."""


class UsageError(LogphaseError):
    """Options that make no sense together, found after click parsed them."""

    exit_code = ExitCode.USAGE
