"""SourceFeed: each line of a source once to its matcher, the timeline, the dump parser and the context quoted."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from logphase.durations import format_duration
from logphase.frames import may_open_dump
from logphase.logs.annotations import Edit, edit
from logphase.logs.clocks import SKEW_STEP
from logphase.logs.matcher import CUT_LEAD, FALLBACK_PACK, UNREAD_STEP_RULE, Event, SourceMatcher
from logphase.logs.reader import ContextLine, Line
from logphase.logs.records import reports_step
from logphase.logs.stamps import CLOCK_JUMP
from logphase.logs.templates import TemplateMiner
from logphase.logs.timeline import Timeline, TimelineBuilder
from logphase.phases import FAILURE_KINDS, EventKind, Phase

if TYPE_CHECKING:
    from logphase.stacks.dumps import DumpParser
    from logphase.stacks.model import ProcessSnapshot

# Year-less stamps (vLLM's `INFO 03-07 09:19:58`) before the first line with a year take its year, and
# time-of-day stamps (SGLang 0.3's `[23:17:01 TP0]`) before the first line with a date its date (logs/dating.py).
# Read where it is used (feeding.YEAR_LOOKAHEAD), so that a test that shortens the head shortens it everywhere.
YEAR_LOOKAHEAD = 500
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 3
# Only the first failures keep their context: the root cause is among them.
MAX_CONTEXTS = 200
# A log per node: its events wait (at most this many) for its first dist-init line, whose time tells
# its clock from the first log's (DistInitClock).
MAX_EVENTS_HELD = 10_000


# The regex of a rule that reads every line its prefix rule took (nccl.dist_init.info): it says whose line it is, not
# which step
READS_ANY = "^"


@dataclass
class _Context:
    event_key: tuple[int, int]
    lines: list[ContextLine]
    wanted_after: int = CONTEXT_AFTER


@dataclass(frozen=True)
class EarlierStart:
    """A start of the server that a later start in the same log replaced: judged apart, listed."""

    timeline: Timeline
    first_line: int
    last_line: int


@dataclass
class ScanResult:
    """What one pass over the sources leaves: the timeline and what the report quotes."""

    timeline: Timeline
    last_lines: dict[int, tuple[Line, datetime | None]] = field(default_factory=dict)
    contexts: dict[tuple[int, int], tuple[ContextLine, ...]] = field(default_factory=dict)
    dumps: list[ProcessSnapshot] = field(default_factory=list)
    failures_kept: int = 0  # failures whose context is kept (at most MAX_CONTEXTS over all sources)
    notes: list[str] = field(default_factory=list)  # what reading the sources assumed (their envelopes)
    earlier: list[EarlierStart] = field(default_factory=list)  # starts a later one in the same log replaced
    # the head lines no rule knew, by template: shown when nothing was recognised
    unrecognised: TemplateMiner | None = None
    # (source, line) of a launch after its start went on, in a log of several (where no restart is split)
    relaunched: list[tuple[int, int]] = field(default_factory=list)


class SourceFeed:
    """Feeds one source's lines, each once, to its matcher, the shared timeline builder and a dump
    parser, and keeps a little context around failures and around the latest phase event (the root
    cause of a stall). `analyze` feeds a whole file; `watch` feeds batches as they arrive."""

    def __init__(
        self,
        index: int,
        matcher: SourceMatcher,
        builder: TimelineBuilder,
        result: ScanResult,
        *,
        restarts: bool = True,
        clocks: DistInitClock | None = None,
        rank_prefix: str | None = None,
        clock_offset_s: float | None = None,
    ) -> None:
        self.index, self.matcher, self.builder, self.result = index, matcher, builder, result
        self.rank_prefix = rank_prefix  # `b:`: a collected node's ranks, named by their node (nodes/logs.py)
        # a node's clock measured when its log was collected is known, not guessed from its dist-init line
        measured = clock_offset_s is not None
        self.clocks = clocks if not measured else None  # a log of several: each node's clock, told from dist init
        self.before_skew: list[Event] | None = [] if self.clocks is not None else None  # events waiting for it
        self.skew = timedelta(seconds=clock_offset_s or 0.0)
        self.unsettled: list[Event] = []  # events since a stamp the matcher holds (StampBelief)
        # a second start in this log judges apart (only where this source is the whole run: with a
        # log per node, the timeline is shared and another node's start is no restart)
        self.restarts = restarts
        self.start_line = 1
        self.progressed = False  # this start went past its launch
        self.fed = 0
        self.dumps = DumpsInLog()  # faulthandler / py-spy dumps printed into the log
        self.before: deque[ContextLine] = deque(maxlen=CONTEXT_BEFORE)
        self.waiting: list[_Context] = []
        self.latest: _Context | None = None
        self.last: Line | None = None  # the last line the program printed (a person's edit is not)
        self.last_read = False  # whether a rule read it
        self.last_by_module = False  # whether only its logger's module (a `[[module]]` hint) or a catch-all placed it
        self.fed_line = 0  # the number of the last line fed
        self.quoted: int | None = None  # the paste's first line, when a person put a copy of a later line there
        self.edits: list[tuple[int, Edit, str]] = []  # a person's edits in the head: line, kind, text
        self.ended = False

    def feed(self, line: Line) -> Sequence[Event]:
        """One line → the events it made (already in the builder)."""
        result = self.result
        self.fed_line = line.number
        if line.number == self.quoted:
            self._edited(line, Edit.QUOTE)  # the copy above the paste: its original is read where it stands
            return ()
        self.dumps.feed(line.text, writer=line.rank)
        here = ContextLine(line.number, line.text)
        for pending in self.waiting:
            if pending.lines[-1].line != line.number:  # one context line per physical line
                pending.lines.append(here)
                pending.wanted_after -= 1
        events = self._named(self.matcher.match_line(line))
        self._settle()
        self.fed += 1
        edited = self.matcher.edited
        if edited is None:
            self.last, self.last_read = line, bool(events)
            # placed by its module alone, or read by a rule that reads any line of its prefix (NCCL's catch-all for
            # its INFO lines): a step's line cut at the end says more (`cut_phase_line`)
            self.last_by_module = bool(events) and all(
                event.rule.pack == FALLBACK_PACK or event.rule.pattern.text == READS_ANY for event in events
            )
        else:
            self._edited(line, edited)
        if not events and edited is None and self.fed <= YEAR_LOOKAHEAD and result.unrecognised is not None:
            result.unrecognised.feed((line,))  # the head: read in full on every path, fast or not
        if edited is None and self.fed <= YEAR_LOOKAHEAD and _unread(events):
            self._note_unread_step(line)
        for index, event in enumerate(events):
            if self._launched_again(event):
                event = self._restart(event)
                events = (*events[:index], event, *events[index + 1 :])
            if self.matcher.clock_pending:
                self.unsettled.append(event)
            else:
                self._add(event)
            if event.line != line.number:
                continue  # a frame group's event, held back until its group ended
            if event.kind in FAILURE_KINDS and result.failures_kept < MAX_CONTEXTS:
                result.failures_kept += 1
                self.waiting.append(_Context((self.index, line.number), [*self._before(line.number), here]))
            elif event.phase is not None and event.kind not in FAILURE_KINDS:
                if self.latest is not None:
                    result.contexts.pop(self.latest.event_key, None)
                    if self.latest in self.waiting:
                        self.waiting.remove(self.latest)
                self.latest = _Context((self.index, line.number), [*self._before(line.number), here])
                self.waiting.append(self.latest)
        if self.before and self.before[-1].line == line.number:
            self.before[-1] = here
        else:
            self.before.append(here)
        if any(pending.wanted_after <= 0 for pending in self.waiting):
            for pending in self.waiting:
                if pending.wanted_after <= 0:
                    result.contexts[pending.event_key] = tuple(pending.lines)
            self.waiting = [pending for pending in self.waiting if pending.wanted_after > 0]
        return events

    def _note_unread_step(self, line: Line) -> None:
        """A line no rule read, outside a traceback, that reports a step by its structure (logs/records.py): kept as
        the run's newest such line. Only the head's lines (read in full on every path, fast or plain, analyze or
        watch: YEAR_LOOKAHEAD) are looked at, so every path reports the same line."""
        if self.matcher.open_block is not None or not reports_step(line.text):
            return
        event = Event(
            source=line.source,
            line=line.number,
            time=self.matcher.last_time,
            rank=None,
            rule=UNREAD_STEP_RULE,
            captures={},
            text=line.text,
            message=line.text,
        )
        self.builder.note_unread_step(self._on_run_clock(event))

    def quoting(self) -> bool:
        """Whether a context the report quotes still waits for the lines fed after its event."""
        return bool(self.waiting)

    def _named(self, events: Sequence[Event]) -> Sequence[Event]:
        """Events with their ranks named by their node (`b:TP2`), where the run's ranks are numbered per node."""
        prefix = self.rank_prefix
        if prefix is None or not events:
            return events
        return tuple(replace(e, rank=prefix + e.rank) if e.rank is not None else e for e in events)

    def ranks_seen(self) -> set[str]:
        """The ranks this source's lines named, as its events name them."""
        seen = self.matcher.ranks_seen
        return seen if self.rank_prefix is None else {self.rank_prefix + rank for rank in seen}

    def _before(self, number: int) -> list[ContextLine]:
        """The lines before line `number`: not an earlier `\\r` piece of it (a bar's redraw is the same line)."""
        return [context for context in self.before if context.line != number]

    def _settle(self) -> None:
        """The matcher decided on the stamp it held: the events since then enter the timeline, at that
        stamp if it was believed (a real silence: as if believed at once), else as they were read."""
        stamps = self.matcher.stamps
        settled, stamps.settled = stamps.settled, None
        if settled is None:
            return
        line, believed = settled
        unsettled, self.unsettled = self.unsettled, []
        for event in unsettled:
            self._add(replace(event, time=believed) if believed is not None and event.line >= line else event)

    def _add(self, event: Event) -> None:
        """Into the timeline, on the run's clock: a node's events wait for its first dist-init line."""
        waiting = self.before_skew
        if waiting is None:
            self.builder.add(self._on_run_clock(event))
            return
        waiting.append(event)
        clocks = self.clocks
        assert clocks is not None
        if event.phase is Phase.DIST_INIT and event.time is not None:
            self.skew = clocks.skew(self.index, event.time, event.rank)
        elif len(waiting) < MAX_EVENTS_HELD:
            return
        self._release()

    def _release(self) -> None:
        waiting, self.before_skew = self.before_skew or [], None
        for event in waiting:
            self.builder.add(self._on_run_clock(event))

    def _on_run_clock(self, event: Event) -> Event:
        if not self.skew or event.time is None:
            return event
        return replace(event, time=event.time - self.skew)

    def _launched_again(self, event: Event) -> bool:
        """A launch line after this start went past its launch: the server started again."""
        if event.phase is None or event.kind in FAILURE_KINDS:
            return False
        if event.phase is not Phase.LAUNCH:
            self.progressed = True
            return False
        again = self.progressed and event.kind is EventKind.BEGIN and event.rank is None
        if again and not self.restarts:
            self.result.relaunched.append((self.index, event.line))  # one of several logs holds two starts
        return self.restarts and again

    def _restart(self, event: Event) -> Event:
        for earlier in self.unsettled:
            self._add(earlier)  # the earlier start's, as they were read
        self.unsettled = []
        self.builder.see_ranks(self.ranks_seen())
        self.result.earlier.append(EarlierStart(self.builder.restart(), self.start_line, event.line - 1))
        self.matcher.ranks_seen.clear()  # the earlier start's ranks are not this one's
        self.start_line, self.progressed = event.line, False
        return self.matcher.restart_clock(event)

    def passed(self, line: Line) -> None:
        """A line read but not fed (a steady run summarised): it still is the source's last line, unless a
        person wrote it (a line the fast path left unread has no rule's words: its shape alone tells)."""
        if line.number != self.fed_line and edit(line.text) is None:
            self.last, self.last_read = line, False  # no candidate of any rule: the fast path left it unread
            self.last_by_module = False

    def _edited(self, line: Line, kind: Edit) -> None:
        """A person's edit, kept for the report's notes where the head (read in full on every path) holds it."""
        if self.fed <= YEAR_LOOKAHEAD:
            self.edits.append((line.number, kind, line.text.strip()))

    def end(self) -> Sequence[Event]:
        """The source ended: the events the matcher held back (a dump's last frames), the contexts
        still waiting for lines, the last line and the dumps. Once; later calls change nothing."""
        if self.ended:
            return ()
        self.ended = True
        held = self._named(self.matcher.finish(self.last))
        if self.last is not None and (not self.last_read or self.last_by_module):
            # a paste cut inside a traceback's first line, else inside a step's line (which its module may have
            # placed: the rule the cut line begins says more, `Using cache directory: …` of vLLM's backends.py), else
            # inside a record's prefix after its level said an error
            cut = (
                self.matcher.cut_header(self.last)
                or self.matcher.cut_phase_line(self.last)
                or self.matcher.cut_error_record(self.last)
            )
            if cut is not None:
                held = (*held, *self._named((cut,)))
        self._settle()
        for event in held:
            self._add(event)
        self._release()
        if self.last is not None and self.last_read:
            self.builder.fragment_at_end(self.index, self.last.number)  # a tick cut at the end: the whole one before
        if self.clocks is not None:
            self.clocks.ranks[self.index] = frozenset(self.ranks_seen())
        self.builder.see_ranks(self.ranks_seen())
        for pending in self.waiting:
            self.result.contexts[pending.event_key] = tuple(pending.lines)
        self.waiting = []
        if self.last is not None:
            clock = self.matcher.last_time
            self.result.last_lines[self.index] = (self.last, clock - self.skew if clock is not None else None)
        dumps = self.dumps.finish()
        if self.rank_prefix is not None:
            dumps = [replace(d, rank=self.rank_prefix + d.rank) if d.rank is not None else d for d in dumps]
        self.result.dumps.extend(dumps)
        return held


def _unread(events: Sequence[Event]) -> bool:
    """Whether no rule read the line `events` came of: none came, or only its logger's module placed it (a fallback,
    not a line cut at the end, which says its rule's step already)."""
    return all(event.rule.pack == FALLBACK_PACK and CUT_LEAD not in event.captures for event in events)


class DumpsInLog:
    """The dump parser of one source, made at its first line that may open a dump: the scan of a log
    without one does not import the parser and the stack model (~6 ms of a small log's start-up)."""

    def __init__(self) -> None:
        self.parser: DumpParser | None = None

    @property
    def open(self) -> int:
        """How many dumps are open (the fast path hands every line to the matcher while one is)."""
        return self.parser.open if self.parser is not None else 0

    def feed(self, raw: str, writer: str | None) -> None:
        if self.parser is None:
            if not may_open_dump(raw):
                return  # what the parser would do with it: no dump is open, and it opens none
            from logphase.stacks.dumps import DumpParser

            self.parser = DumpParser()
        self.parser.feed(raw, writer=writer)

    def finish(self) -> list[ProcessSnapshot]:
        return self.parser.finish() if self.parser is not None else []


@dataclass
class DistInitClock:
    """Whether the logs of one run (a log per node) share a clock. Every rank joins the distributed
    init within its timeout (NCCL's and torch's are minutes), so the logs' first dist-init lines are
    stamped within minutes of one another on one clock; more than CLOCK_JUMP apart, the clocks differ
    (a node in another time zone, a bad RTC), and a log's times are moved onto the first log's. Not
    where the rank that joins is one the first log showed: that is the same node started again (a
    rotated log's relaunch), hours later on the same clock."""

    names: Sequence[str]
    first: tuple[int, datetime] | None = None  # the first log with a dist-init line, and its time
    ranks: dict[int, frozenset[str]] = field(default_factory=dict)  # the ranks each ended log showed
    notes: list[str] = field(default_factory=list)

    def skew(self, index: int, joined: datetime, rank: str | None) -> timedelta:
        if self.first is None:
            self.first = (index, joined)
            return timedelta(0)
        reference, at = self.first
        apart = joined - at
        if abs(apart) <= CLOCK_JUMP or rank is None or rank in self.ranks.get(reference, frozenset([rank])):
            return timedelta(0)
        skew = SKEW_STEP * round(apart / SKEW_STEP)
        self.notes.append(
            f"{self.names[index]}: its clock is {format_duration(abs(skew.total_seconds()))} "
            f"{'ahead of' if skew > timedelta(0) else 'behind'} {self.names[reference]}'s (their ranks joined "
            f"the distributed init {format_duration(abs(apart.total_seconds()))} apart): its times are "
            f"read on {self.names[reference]}'s clock"
        )
        return skew
