"""SourceScan: one source's scan, pushed a line or a batch at a time, the same for a file and a stream.

`analyze` pushes a file's lines (all of them, or those its fast path chose: logs/fast/FastLines) and
ends it; `watch` pushes each batch as it arrives (its fast path, FollowRuns, chooses within the batch)
and ends it when the input ends. What both need is written here once: the head clock (the year of
year-less stamps, the date of time-of-day ones, a logger on another clock), the matcher and the
SourceFeed, the merge of what a fast path counted instead of reading, and the notes on the stamps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from logphase.logs.annotations import Edit, quoted_top
from logphase.logs.clock import head_clock
from logphase.logs.clocks import format_offset_notes
from logphase.logs.matcher import Event, SourceMatcher
from logphase.logs.reader import Line
from logphase.logs.stamps import ignored_stamp_notes
from logphase.logs.timeline import TimelineBuilder
from logphase.packs import PackSet
from logphase.scan import feed as feeding
from logphase.scan.feed import DistInitClock, DumpsInLog, ScanResult, SourceFeed

if TYPE_CHECKING:
    from logphase.logs.fast.follow import FollowRuns
    from logphase.logs.fast.stats import ScanStats
    from logphase.scan.view import LineView


class SourceScan:
    """The scan of source `index` of a run. Its first YEAR_LOOKAHEAD lines (a stream's first batch:
    `push_batch`) are held until the head clock is read from them; then the matcher exists and every line
    pushed goes through the SourceFeed, each once. `started(matcher, dumps, quoting)` is called then: a fast path that
    chooses the lines itself (FastLines) attaches to them there."""

    def __init__(
        self,
        index: int,
        name: str,
        packs: PackSet,
        as_of: datetime,
        builder: TimelineBuilder,
        result: ScanResult,
        *,
        restarts: bool = True,
        clocks: DistInitClock | None = None,
        started: Callable[[SourceMatcher, DumpsInLog, Callable[[], bool]], None] | None = None,
        tap: LineView | None = None,
        rank_prefix: str | None = None,
        clock_offset_s: float | None = None,
    ) -> None:
        self.rank_prefix, self.clock_offset_s = rank_prefix, clock_offset_s
        self.index, self.name, self.packs, self.as_of = index, name, packs, as_of
        self.builder, self.result = builder, result
        self.restarts, self.clocks, self.started = restarts, clocks, started
        self.tap = tap  # shown each line as it is fed, with its events and the clock after it
        self.head: list[Line] | None = []  # None once the head clock is read
        self.matcher: SourceMatcher | None = None
        self.feed: SourceFeed | None = None
        self.skipped_events = 0  # steady events a fast path counted instead of reading

    # -- pushing

    def push(self, line: Line) -> Sequence[Event]:
        """One line → the events it made (none while the head is held)."""
        feed = self.feed
        if feed is None:
            assert self.head is not None
            self.head.append(line)
            if len(self.head) < feeding.YEAR_LOOKAHEAD:
                return ()
            return [event for held in self._start() for event in self._feed(held)]
        return self._feed(line)

    def push_batch(self, lines: Sequence[Line], runs: FollowRuns | None = None) -> bool:
        """A batch of a stream (watch), read now: the head clock from what came so far (a live log
        cannot wait for YEAR_LOOKAHEAD lines). `runs` holds back the steady lines it can (FollowRuns)
        and counts them. Whether any event came of it."""
        if not lines:
            return False
        if self.feed is None:
            lines = self._start(lines)
        assert self.matcher is not None
        added = False
        for line in lines if runs is None else runs.lines(lines, self.matcher):
            events = self._feed(line)
            added = added or bool(events)
            if runs is not None:
                runs.book(line, events)
        if runs is not None:
            self.count_skipped(runs.take_stats())
        self.builder.see_ranks(self.feed.ranks_seen() if self.feed is not None else ())
        self.passed(lines[-1])
        return added

    def _start(self, more: Sequence[Line] = ()) -> list[Line]:
        """The head clock from the lines held (and `more`, up to YEAR_LOOKAHEAD), the matcher and the
        feed made; the lines held and `more`, to be fed."""
        lines, self.head = [*(self.head or ()), *more], None
        clock = head_clock(lines[: feeding.YEAR_LOOKAHEAD], self.packs, self.as_of)
        self.result.notes += format_offset_notes(self.name, clock.offsets)
        matcher = SourceMatcher(self.packs, self.as_of, clock)
        feed = SourceFeed(
            self.index,
            matcher,
            self.builder,
            self.result,
            restarts=self.restarts,
            clocks=self.clocks,
            rank_prefix=self.rank_prefix,
            clock_offset_s=self.clock_offset_s,
        )
        quote = quoted_top([line.text for line in lines[: feeding.YEAR_LOOKAHEAD]])
        if quote is not None:
            feed.quoted = lines[quote].number
        self.matcher, self.feed = matcher, feed
        if self.started is not None:
            self.started(matcher, feed.dumps, feed.quoting)
        return lines

    def _feed(self, line: Line) -> Sequence[Event]:
        assert self.feed is not None and self.matcher is not None
        events = self.feed.feed(line)
        if self.tap is not None:
            self.tap.line(self.index, line, events, self.matcher.last_time)
        return events

    def passed(self, line: Line) -> None:
        """A line read but not pushed (a fast path held it back): still the source's last line."""
        if self.feed is not None:
            self.feed.passed(line)

    def count_skipped(self, stats: ScanStats) -> None:
        """What a fast path counted instead of reading, into the timeline (its event count, its system vote)."""
        self.skipped_events += stats.skipped_events
        stats.count_events(self.builder)

    # -- ending

    def end(self) -> Sequence[Event]:
        """The source ended: the events of a head still held (a source shorter than it) and those held
        back (a dump's last frames), the contexts still waiting, the notes on the stamps it ignored.
        Once; later calls change nothing."""
        head: list[Event] = []
        if self.feed is None:
            for line in self._start():
                head.extend(self._feed(line))
        assert self.feed is not None and self.matcher is not None
        if self.feed.ended:
            return ()
        held = self.feed.end()
        if self.tap is not None:
            self.tap.end(self.index, held)
        self.result.notes += ignored_stamp_notes(self.name, self.matcher.stamps)
        if self.feed.edits:
            self.result.notes.append(edits_note(self.name, self.feed.edits))
        return [*head, *held] if head else held


EDIT_WORDS = {
    Edit.NOTE: "a note",
    Edit.ELISION: "lines left out",
    Edit.KEYSTROKE: "Ctrl-C pressed: the interrupt",
    Edit.QUOTE: "a copy of a line below, put on top",
}
EDITS_SHOWN = 4
EDIT_TEXT = 60


def edits_note(name: str, edits: Sequence[tuple[int, Edit, str]]) -> str:
    """The report's note on a person's edits in a paste: what they wrote, quoted, and that none of it was read as
    the log's lines (docs/design.md §4.2: a note saying it hung may be quoted, never a rule's cause)."""
    shown = [
        f"line {number} `{text[:EDIT_TEXT]}{'…' if len(text) > EDIT_TEXT else ''}` ({EDIT_WORDS[kind]})"
        for number, kind, text in edits[:EDITS_SHOWN]
    ]
    more = f" and {len(edits) - EDITS_SHOWN} more" if len(edits) > EDITS_SHOWN else ""
    return f"{name}: a person's edits in the paste, none read as the program's lines: {', '.join(shown)}{more}"
