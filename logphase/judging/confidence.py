"""How far the evidence carries a verdict: the lines for it, what speaks against it, a confidence (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from logphase.judging.logs import Judgement, frame_placement, module_placement
from logphase.logs.matcher import CUT_TRACEBACK, RECORD_READ, Event
from logphase.logs.timeline import Timeline
from logphase.phases import SUCCESS_VERDICTS, Verdict

# A post-mortem excerpt with fewer phase spans than this cannot tell a stall from slow progress.
SHORT_EXCERPT_SPANS = 3


class Confidence(StrEnum):
    HIGH = "high"  # nothing in the log speaks against the verdict
    MEDIUM = "medium"  # something does, and is said
    LOW = "low"  # the log does not carry a verdict; a success never exits 0 on it


@dataclass(frozen=True)
class Assessment:
    confidence: Confidence
    support: tuple[Event, ...]  # the lines the verdict rests on
    doubts: tuple[str, ...]  # what speaks against it, in words with line numbers


def assess(timeline: Timeline, judgement: Judgement, *, post_mortem: bool, earlier_starts: int = 0) -> Assessment:
    """The judgement's own doubts, and what the timeline shows against its verdict."""
    verdict = judgement.verdict
    support = tuple(e for e in (judgement.root_cause, timeline.ready) if e is not None)
    if verdict is Verdict.UNKNOWN:
        nothing = "no line of the log matched a rule" if timeline.events == 0 else "no line read places the run"
        return Assessment(Confidence.LOW, (), (nothing,))
    doubts = list(judgement.doubts)
    root = judgement.root_cause
    if root is not None and root.captures.get(CUT_TRACEBACK) == "raise":
        doubts.append(
            f"the traceback is cut before its exception line: read from its raise statement (line {root.line})"
        )
    elif root is not None and root.captures.get(CUT_TRACEBACK) == "header":
        doubts.append(f"the log ends inside a traceback's first line (line {root.line}): its exception is not in it")
    elif root is not None and root.captures.get(CUT_TRACEBACK) == "dump":
        doubts.append(
            f"the log ends inside a faulthandler dump whose header is not in it (line {root.line}): a fatal error's"
            " dump by its `Current thread` (or `Stack`) line, which error not said; a dump faulthandler.register asked"
            " for looks alike"
        )
    elif root is not None and root.captures.get(CUT_TRACEBACK) == "handler":
        doubts.append(
            f"the log holds a fatal signal handler's frames whose header is not in it (line {root.line}): which"
            " signal is not said"
        )
    elif root is not None and root.captures.get(CUT_TRACEBACK) == RECORD_READ:
        doubts.append(
            f"the log ends inside a record logged at {root.captures.get('level', 'an error level')} (line {root.line}),"
            " cut before its message ends: which error is not said"
        )
    elif root is not None and CUT_TRACEBACK in root.captures:
        doubts.append(
            f"the log ends inside a traceback's frames, cut at both ends: its exception is not in it (read at line"
            f" {root.line})"
        )
    if verdict is Verdict.READY and timeline.ready is not None:
        survived = [f for f in timeline.failures if f.order_key < timeline.ready.order_key]
        if survived:
            doubts.append(f"a failure came before the ready line (line {survived[0].line}); the server went on")
    if verdict is Verdict.READY and timeline.ready is None:
        doubts.append("no ready line: ready because the server serves requests (the log may start mid-run)")
    if earlier_starts:
        doubts.append(f"the log holds {earlier_starts} earlier start(s): the last one is judged")
    spans = len(timeline.spans)
    if post_mortem and verdict in (Verdict.STALLED, Verdict.PROGRESSING) and spans < SHORT_EXCERPT_SPANS:
        doubts.append(f"a short excerpt ({spans} phase spans): a stall and slow progress look alike in it")
    if timeline.unfollowed:
        followed = len(timeline.ranks)
        doubts.append(
            f"the log names {followed + timeline.unfollowed} ranks: {timeline.unfollowed} more ranks after the "
            f"first {followed} are counted, not followed; the phases and progress judged are the first {followed}'s"
        )
    if module_placement(timeline, judgement) is not None or frame_placement(timeline, judgement) is not None:
        # a line no rule read, placed by its logger's module (the reason says which): a guess at where the run is,
        # which the log's own words do not carry; or a stack's frames alone, which say where a thread was, not whether
        # it moved after (judging/logs.py adds the doubt)
        return Assessment(Confidence.LOW, support, tuple(doubts))
    if timeline.system is None:
        doubts.append("no server or job system recognised: judged from generic lines only")
        if verdict in SUCCESS_VERDICTS and timeline.ready is None:
            # uvicorn access lines alone: any web app writes them; no server of ours said it was up
            return Assessment(Confidence.LOW, support, tuple(doubts))
    return Assessment(Confidence.MEDIUM if doubts else Confidence.HIGH, support, tuple(doubts))
