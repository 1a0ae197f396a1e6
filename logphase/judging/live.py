"""The verdict of a run someone is watching: the log's judgement weighed with what only a live observer
sees — health answers, the process's exit, silence by arrival time, the deadline, an interrupt (pure).

`watch` decides with `decide` at every tick, and its final report weighs the same decision with
`weigh`, so the verdict is decided here once, before its confidence and exit code are worked out."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from logphase.durations import format_duration
from logphase.judging.budgets import Budget, stall_words
from logphase.judging.logs import Judgement
from logphase.logs.matcher import Event
from logphase.phases import PROBLEM_VERDICTS, SUCCESS_VERDICTS, Phase, Verdict

# How long a live run's failure may rest on a traceback (or dump) the log leaves open, its exception line not
# read: the rest is most likely still on its way (a writer flushes line by line; docker, kubectl and pipes pass
# it on in chunks), and the whole traceback names the failure where its header or a frame only points at it.
# Past this, the open traceback is what the log holds, and it decides as it does post-mortem.
CUT_TRACEBACK_GRACE_S = 5.0


@dataclass(frozen=True)
class LiveFacts:
    """What a live observer saw as of `t` seconds after it began, besides the log's lines."""

    t: float
    silence_s: float  # by arrival time: since the last progress arrived (or a health change)
    phase: Phase | None = None  # the log's phase, for the words
    last_progress_line: int | None = None
    health_ready: bool = False  # the health URL answered ready
    health_text: str | None = None  # its newest answer, in words
    health_url: str | None = None  # given: only the URL can say ready
    pid: int | None = None
    process_exited: bool = False  # the watched process is gone
    input_ended: bool = False  # the log (a pipe, stdin) ended: a finished log
    timed_out: bool = False  # --timeout reached
    interrupted: bool = False  # a person stopped the watch (Ctrl-C, SIGTERM)
    cut_waited_s: float | None = None  # how long the log's failure has rested on an open traceback (`awaits_rest`)


class Source(StrEnum):
    """Where a live decision comes from: the log's own judgement, or a fact only the observer has."""

    LOG = "log"
    LIVE = "live"


@dataclass(frozen=True)
class LiveDecision:
    """A verdict and its reason; `ends` when the watch has its answer; `source` says whether the
    log's judgement carries it (then the report keeps the log's root cause and reason) or a live fact."""

    verdict: Verdict
    reason: str
    ends: bool
    source: Source = Source.LIVE


def decide(judgement: Judgement | None, facts: LiveFacts, budget: Budget) -> LiveDecision:
    """docs/design.md §4 for a watched run, in order: the log's failure; the health URL's ready; a log
    that ended (its post-mortem judgement, `judgement` then being one); the log's ready (only without
    a health URL: with one, only the URL can say ready); a finished job; the process gone; silence by
    arrival past the phase's budget; the deadline; an interrupt. Anything else: still starting."""
    where = f" during {facts.phase}" if facts.phase else ""
    logged = judgement.verdict if judgement is not None else None
    if judgement is not None and logged in PROBLEM_VERDICTS and logged is not Verdict.STALLED:
        if _rest_may_come(judgement, facts):
            line = judgement.root_cause.line if judgement.root_cause is not None else None
            reason = f"a traceback is being written (line {line}): waiting for its exception line"
            return LiveDecision(Verdict.PROGRESSING, reason, False)
        return LiveDecision(judgement.verdict, f"{judgement.verdict}: {judgement.reason}", True, Source.LOG)
    if facts.health_ready:
        return LiveDecision(Verdict.READY, f"ready: health {facts.health_text} after {format_duration(facts.t)}", True)
    if facts.input_ended:  # a finished log: judged post-mortem, as analyze judges it
        if judgement is None:
            return LiveDecision(Verdict.UNKNOWN, "unknown: no line matched any pattern", True, Source.LOG)
        said = judgement.reason if logged in SUCCESS_VERDICTS else f"{judgement.verdict}: {judgement.reason}"
        return LiveDecision(judgement.verdict, said, True, Source.LOG)
    if judgement is not None and logged is Verdict.READY and facts.health_url is None:
        return LiveDecision(Verdict.READY, f"ready: {log_ready(judgement)}", True, Source.LOG)
    if judgement is not None and logged in SUCCESS_VERDICTS and logged is not Verdict.READY:
        return LiveDecision(judgement.verdict, judgement.reason, True, Source.LOG)  # "the job finished: …"
    if facts.process_exited:
        return LiveDecision(Verdict.CRASHED, f"crashed: process {facts.pid} exited{where} without a ready line", True)
    if facts.silence_s > budget.seconds:
        last = f"; last progress at line {facts.last_progress_line}" if facts.last_progress_line else ""
        reason = f"stalled: {stall_words(budget, facts.silence_s, facts.phase)}{'' if budget.bar else last}"
        return LiveDecision(Verdict.STALLED, reason, True)
    if facts.timed_out:
        at = f" (in {facts.phase})" if facts.phase else ""
        reason = f"still starting after {format_duration(facts.t)}{at}: --timeout"
        return LiveDecision(Verdict.PROGRESSING, reason, True)
    if facts.interrupted:
        return LiveDecision(Verdict.PROGRESSING, "interrupted", True)
    reason = judgement.reason if judgement is not None else "waiting for a recognisable line"
    return LiveDecision(Verdict.PROGRESSING, reason, False)


def awaits_rest(judgement: Judgement | None, open_block: int | None) -> bool:
    """The log's failure rests on the traceback or dump the log leaves open (`open_block`, its first line: the
    matcher has not read its exception line and nothing after it): read live, that may only be where the
    writer has got to."""
    if judgement is None or judgement.verdict not in PROBLEM_VERDICTS or judgement.root_cause is None:
        return False
    return open_block is not None and open_block in (judgement.root_cause.block, judgement.root_cause.line)


def _rest_may_come(judgement: Judgement, facts: LiveFacts) -> bool:
    """Wait for an open traceback's rest (`cut_waited_s` set: the watch saw `awaits_rest`) while nothing says it
    will not come: the log still open, the process not gone, no deadline or interrupt, and the grace not spent."""
    if facts.cut_waited_s is None or facts.cut_waited_s >= CUT_TRACEBACK_GRACE_S:
        return False
    return not (facts.input_ended or facts.process_exited or facts.timed_out or facts.interrupted)


def log_ready(judgement: Judgement) -> str:
    """The judgement's reason for ready without its `ready: ` (said once, not `ready: ready:`)."""
    return judgement.reason.removeprefix("ready: ")


def weigh(judgement: Judgement, decision: LiveDecision, last_progress: Event | None) -> Judgement:
    """The run's judgement with the live decision in it. A decision the log carries (its failure, its
    ready, a finished job, a finished log) leaves the log's judgement as it is: the log judged as a
    whole says the same, with its root cause and reason. A live fact decides the verdict and says
    why; a stall by arrival time points at the last progress, as a stall in the log does."""
    if decision.source is Source.LOG and decision.verdict is judgement.verdict:
        return judgement
    root = judgement.root_cause if decision.verdict in PROBLEM_VERDICTS else None
    if decision.verdict is Verdict.STALLED:
        root = last_progress
    culprits = judgement.culprit_ranks if decision.verdict not in SUCCESS_VERDICTS else ()
    return replace(judgement, verdict=decision.verdict, reason=decision.reason, root_cause=root, culprit_ranks=culprits)
