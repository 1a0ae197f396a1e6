"""The watch's hooks (`--on-ready`, `--on-stall`, `--on-crash`): the command a verdict runs, its environment, run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from logphase.phases import Verdict
from logphase.report.formats.line import report_line
from logphase.report.model import Report

# A hook that runs longer is killed (its whole process group): a watch must end.
HOOK_TIMEOUT_S = 60.0
# What a failed hook printed last, said in the note (its output is otherwise the hook's own business).
OUTPUT_TAIL = 300


@dataclass(frozen=True)
class Hooks:
    """Shell commands for the watch's outcome; `environment` is the one they start from (the caller's)."""

    on_ready: str | None = None
    on_stall: str | None = None
    on_crash: str | None = None
    timeout_s: float = HOOK_TIMEOUT_S
    environment: Mapping[str, str] = field(default_factory=dict)

    def command_for(self, verdict: Verdict) -> tuple[str, str] | None:
        """The hook a verdict runs, with its option's name: ready or finished, stalled, or crashed, aborted
        or timeout; none for a run still starting or unknown (a --timeout or an interrupt ended the watch)."""
        match verdict:
            case Verdict.READY | Verdict.FINISHED:
                chosen = ("--on-ready", self.on_ready)
            case Verdict.STALLED:
                chosen = ("--on-stall", self.on_stall)
            case Verdict.CRASHED | Verdict.ABORTED | Verdict.TIMEOUT:
                chosen = ("--on-crash", self.on_crash)
            case Verdict.PROGRESSING | Verdict.UNKNOWN:
                return None
        name, command = chosen
        return (name, command) if command else None


def hook_environment(report: Report, base: Mapping[str, str]) -> dict[str, str]:
    """`base` and the outcome: LOGPHASE_VERDICT, _PHASE, _RANK, _REASON, _WHERE (`path:line`), _EXIT_CODE and
    _LINE (the whole `--format line` line); a field with nothing to say is empty."""
    verdict, phase, rank, reason, where = report_line(report).rstrip("\n").split(" | ")
    fields = {"VERDICT": verdict, "PHASE": phase, "RANK": rank, "REASON": reason, "WHERE": where}
    env = dict(base)
    env.update({f"LOGPHASE_{name}": "" if value == "-" else value for name, value in fields.items()})
    env["LOGPHASE_EXIT_CODE"] = str(int(report.exit_code))
    env["LOGPHASE_LINE"] = report_line(report).rstrip("\n")
    return env


@dataclass(frozen=True)
class HookRun:
    """How a hook ended: its exit status (None: it could not start, or was killed at the time bound) and what to say."""

    option: str
    returncode: int | None
    said: str

    @property
    def failed(self) -> bool:
        return self.returncode != 0


def run_hook(option: str, command: str, env: Mapping[str, str], timeout_s: float) -> HookRun:
    """`command` through the shell, its output kept (the watch's stdout is its transitions), in a session of
    its own: past `timeout_s` the whole group is killed. Never raises: a failure is said, not fatal."""
    try:
        process = subprocess.Popen(
            command,
            shell=True,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as error:
        return HookRun(option, None, f"{option} could not start: {error.strerror}")
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        return HookRun(option, None, f"{option} ran past {timeout_s:g}s and was killed: {command}")
    code = process.returncode
    if code == 0:
        return HookRun(option, 0, f"{option} ran: {command}")
    tail = output.decode("utf-8", "replace").strip()[-OUTPUT_TAIL:]
    said = f"{option} failed (exit {code}): {command}" + (f"; it said: {' '.join(tail.split())}" if tail else "")
    return HookRun(option, code, said)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own in between
        os.killpg(process.pid, signal.SIGKILL)
