"""ClockWitness: the lines a chunk's walk reads for the matcher's clock besides those it chose (pure)."""

from __future__ import annotations

from datetime import datetime

from logphase.logs.fast.candidates import CandidateScan
from logphase.logs.fast.chunk import ChunkLines
from logphase.logs.fast.envelope_clock import Anchor, EnvelopeClock, Timed
from logphase.logs.fast.rollover import Rollovers
from logphase.logs.fast.templates import Template, time_step
from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import MAX_LINE_BYTES

NEAR_LINES = 32  # lines walked back one by one for a stamp before searching
SEARCH_SPAN = 1 << 16  # the first span searched back, in bytes (then 4 times the last)


class ClockWitness(ChunkLines):
    """What FastLines reads for the matcher's clock: for a line it reads, the nearest stamped line
    before it (the time it inherits, the year of a year-less stamp, the offset of an envelope's clock);
    the lines whose envelope time moves the clock (EnvelopeClock); before a line the day may turn on,
    the latest time (Rollovers); at a chunk's end, what the next chunk hands over. Over the chunk
    FastLines reads (ChunkLines)."""

    scan: CandidateScan
    matcher: SourceMatcher | None
    clock: EnvelopeClock | None
    rollovers: Rollovers
    rollover_at: int | None
    carried_stamps: list[tuple[int, bytes, str]]  # stamped lines after the last line read
    carried_peak: list[tuple[int, bytes]]  # the envelope clock's peaks the last chunks left
    carried_clock: datetime | None = None  # the clock they leave

    # -- stamped lines

    def _stamped_before(self, line: int, low: int, need: str) -> tuple[int, str] | None:
        """The nearest line before `line`, from `low` on, on a template whose stamp a line that
        needs `need` takes (time_step), and that stamp. Walked back line by line (a stamp is most
        often near), then searched in spans that grow: a year-less log would walk a whole chunk back
        for a year."""
        walk = line
        for _ in range(NEAR_LINES):
            if walk <= low:
                return None
            walk = self._previous(walk)
            if (stamp := self._serves(walk, need)) is not None:
                return walk, stamp
        finder = self.scan.stamp_finder(need)
        span = SEARCH_SPAN
        while walk > low and finder is not None:
            start = max(low, walk - span)
            starts = [hit.start() + 1 for hit in finder.finditer(self.buf, max(0, start - 1), walk)]
            for found in reversed(starts):  # what template_at says of the line decides, as walking does
                if found >= start and (stamp := self._serves(found, need)) is not None:
                    return found, stamp
            if start == 0:  # the chunk's first line: no newline before it
                stamp = self._serves(0, need) if walk > 0 else None
                return None if stamp is None else (0, stamp)
            walk, span = start, span * 4
        return None

    def _serves(self, line: int, need: str) -> str | None:
        """The stamp of the line's template, where a line that needs `need` takes it."""
        template = self.scan.template_at(self.buf, line)
        return template.stamp if template is not None and time_step(need, template.stamp)[0] else None

    # -- the clock

    def _time_lines(self, wanted: list[int]) -> tuple[set[int], list[tuple[int, bytes]]]:
        """For each line the matcher will see, the nearest stamped line before it that it would have
        seen (and, for a year-less stamp, the nearest line with a year; for a time the envelope gave,
        the nearest line with a stamp of its own, which set the envelope's offset): the time a line
        without a full date inherits, and the clock a line with one is measured against (a stamp far
        from it is held, StampBelief.believe). Lines of this chunk as offsets; lines of an earlier
        chunk as (number, bytes)."""
        found: set[int] = set()
        old: list[tuple[int, bytes]] = []
        low = self.pos
        for index, line in enumerate(wanted):
            need = "any"  # a full date too: it is measured against the clock (StampBelief)
            walk = line
            while need and (stamped := self._stamped_before(walk, low, need)) is not None:
                walk, stamp = stamped
                _, need = time_step(need, stamp)
                found.add(walk)
            if need and index == 0 and low == self.pos:
                for number, raw, stamp in reversed(self.carried_stamps):
                    take, need = time_step(need, stamp)
                    if take:
                        old.append((number, raw))
                    if not need:
                        break
            low = line
        return found, old

    def _clock_lines(self, offset: int, wanted: set[int]) -> set[int]:
        """The lines before `offset` the matcher must read besides `wanted` for its clock: the
        envelope clock's peaks, and before a line the day may turn on, the latest time before it."""
        lines, _ = self._clock_peaks(offset, wanted)
        if offset == self.rollover_at:
            peak = self.rollovers.peak(self._template_lines(self.pos, offset))
            if peak is not None:
                lines.add(peak)
        return lines

    def _clock_peaks(
        self, limit: int, read: set[int], at_least: datetime | None = None
    ) -> tuple[set[int], datetime | None]:
        """The lines from `pos` on, before `limit`, that keep the matcher's clock where every line
        would leave it at each line it `read`s (EnvelopeClock), and the clock they leave: none unless
        some template takes its time from the envelope. `at_least`: the clock lines it will read first
        leave (those an earlier chunk carried)."""
        if self.clock is None or self.matcher is None or not any(t.stamp == "envelope" for t in self.scan.templates):
            return set(), None
        matcher, clock, buf, template_at = self.matcher, self.clock, self.buf, self.scan.template_at
        lines: list[Timed] = []
        anchor: Anchor | None = None
        floor = self.pos
        for start in clock.timed(buf, self.pos, limit, self.scan.templates):
            # the line that set its offset: the nearest one before it with a stamp of its own
            line = start
            while line > floor:
                line = buf.rfind(b"\n", 0, line - 1) + 1  # the line before
                template = template_at(buf, line)
                if template is not None and template.stamp not in ("none", "envelope"):
                    anchor = (line, buf[line : self._line_end(line)], template)
                    break
            floor = start
            template = template_at(buf, start)
            if template is not None:
                prefix = buf[start : template.envelope_end(buf, start)]
                lines.append((start, prefix, clock.key(prefix), anchor))
        latest = matcher.clock.time
        if at_least is not None and (latest is None or at_least > latest):
            latest = at_least
        return self.clock.peaks(lines, read, matcher.clock, latest=latest)

    def _template_lines(self, low: int, high: int) -> list[tuple[int, bytes, Template]]:
        """The lines in [low, high) on a template: (offset, bytes, template)."""
        lines = []
        line = low
        while line < high:
            end = self._line_end(line)
            template = self.scan.template_at(self.buf, line)
            if template is not None:
                lines.append((line, self.buf[line:end], template))
            line = end + 1
        return lines

    def _next_rollover(self, limit: int) -> int | None:
        """The first line from `pos` on, before `limit`, that the day may turn on (fast/rollover.py)."""
        matcher = self.matcher
        if matcher is None or not self.scan.templates:
            return None
        if len(self.rollovers.seen) != len(self.scan.templates):
            self.rollovers.learn(self.scan.templates)
        self.rollover_at = self.rollovers.next(self.buf, self.pos, limit, afternoon=matcher.clock.afternoon)
        return self.rollover_at

    def _carry_times(self, end: int) -> None:
        """At a chunk's end: the last stamped lines and the envelope clock's peak the matcher has not
        seen, for the next chunk to hand over (after those of earlier chunks it has not seen either:
        a chunk without a line to read leaves them to the next)."""
        pending = self.carried_peak
        peaks, clock = self._clock_peaks(end, set(), self.carried_clock if pending else None)
        self.carried_peak = pending + [
            (self._number(line), self.buf[line : self._line_end(line)][:MAX_LINE_BYTES]) for line in sorted(peaks)
        ]
        if peaks and clock is not None:
            self.carried_clock = clock
        stamps: list[tuple[int, bytes, str]] = []
        need = "any"
        line = end
        while need and (stamped := self._stamped_before(line, self.pos, need)) is not None:
            line, stamp = stamped
            _, need = time_step(need, stamp)
            stamps.insert(0, (self._number(line), self.buf[line : self._line_end(line)], stamp))
        if stamps:
            for older in reversed(self.carried_stamps):  # what this chunk's lines still need from before
                if not need:
                    break
                take, need = time_step(need, older[2])
                if take:
                    stamps.insert(0, older)
            self.carried_stamps = stamps
