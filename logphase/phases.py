"""The vocabulary shared by every stage: phases, verdicts, event kinds and roles, and their order."""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never


class Phase(StrEnum):
    """Startup phases in the order a server passes them (docs/design.md §1)."""

    LAUNCH = "launch"
    TOKENIZER = "tokenizer"
    DIST_INIT = "dist_init"
    WEIGHT_LOAD = "weight_load"
    KV_CACHE = "kv_cache"
    DRAFT_INIT = "draft_init"
    COMPILE = "compile"
    CUDA_GRAPH = "cuda_graph"
    HTTP_START = "http_start"
    WARMUP = "warmup"
    READY = "ready"
    SERVING = "serving"

    @property
    def order(self) -> int:
        return _PHASE_ORDER[self]


_PHASE_ORDER = {phase: index for index, phase in enumerate(Phase)}

# Phases only the main process reports; they happen after every rank finished its own init.
MAIN_PROCESS_PHASES = frozenset({Phase.HTTP_START, Phase.WARMUP, Phase.READY, Phase.SERVING})


class Verdict(StrEnum):
    """What logphase concludes about a run."""

    READY = "ready"
    FINISHED = "finished"  # a job (not a server) whose every rank shut down cleanly
    PROGRESSING = "progressing"
    STALLED = "stalled"
    CRASHED = "crashed"
    ABORTED = "aborted"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"


def is_success(verdict: Verdict) -> bool | None:
    """The run did what it was started for (a server is up, a job ran to its end): True; a problem
    (stalled, crashed, aborted, timeout): False; neither yet (progressing, unknown): None. One
    exhaustive match: a new Verdict member is a mypy error here until it is placed."""
    match verdict:
        case Verdict.READY | Verdict.FINISHED:
            return True
        case Verdict.STALLED | Verdict.CRASHED | Verdict.ABORTED | Verdict.TIMEOUT:
            return False
        case Verdict.PROGRESSING | Verdict.UNKNOWN:
            return None
        case _:
            assert_never(verdict)


SUCCESS_VERDICTS = frozenset(verdict for verdict in Verdict if is_success(verdict) is True)
PROBLEM_VERDICTS = frozenset(verdict for verdict in Verdict if is_success(verdict) is False)


class EventKind(StrEnum):
    """What a matched line says happened."""

    BEGIN = "begin"  # a phase started
    PROGRESS = "progress"  # a step inside a phase, usually a bar with done/total
    END = "end"  # a phase completed
    MARK = "mark"  # evidence that a phase is current; repeated marks are not progress
    ERROR = "error"  # an exception or error: the process is crashing
    FATAL = "fatal"  # the process died of a signal (faulthandler, SIGABRT, SIGSEGV)
    TIMEOUT = "timeout"  # a watchdog fired
    READY = "ready"  # the server says it is ready
    EXIT = "exit"  # the rank shut down cleanly (its communicator destroyed); no phase
    INTERRUPT = "interrupt"  # a person stopped it (Ctrl-C): ends a stall, is not a crash; no phase


FAILURE_KINDS = frozenset({EventKind.ERROR, EventKind.FATAL, EventKind.TIMEOUT})


class Role(StrEnum):
    """How much a line can explain (docs/design.md §4.1)."""

    ROOT = "root"  # can be the root cause of a failure
    CASCADE = "cascade"  # a consequence of a failure elsewhere; root only when nothing else is
    PROGRESS = "progress"  # startup progress
    LIFECYCLE = "lifecycle"  # process lifecycle (started, exiting) without blame
    DIAGNOSTIC = "diagnostic"  # hints and context; never the root cause
