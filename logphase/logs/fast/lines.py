"""FastLines: the walk of one source's chunks, handing the matcher the lines it needs, chosen by a byte scan."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import IO, Protocol

from logphase.logs.envelope import Unwrapper
from logphase.logs.fast.cache import ScannerCache
from logphase.logs.fast.candidates import CandidateScan
from logphase.logs.fast.envelope_clock import EnvelopeClock
from logphase.logs.fast.hours import OtherHours
from logphase.logs.fast.plan import Plan, votes_in_matcher
from logphase.logs.fast.ranges import PlainChunk, RangeOracle, plain_chunk
from logphase.logs.fast.rollover import Rollovers
from logphase.logs.fast.runs import RankPhases, Runs, book_runs
from logphase.logs.fast.scanners import trie_regex
from logphase.logs.fast.stats import ScanStats, unread_votes
from logphase.logs.fast.steady import SteadyRuns
from logphase.logs.fast.templates import Template, learn_template, text_of
from logphase.logs.fast.witness import ClockWitness
from logphase.logs.matcher import Event, SourceMatcher
from logphase.logs.reader import CHUNK_BYTES as READ_BYTES
from logphase.logs.reader import (
    MAX_LINE_BYTES,
    READ_ERRORS,
    Line,
    LogSource,
    clean_line,
    damaged,
    decoded_text,
    envelopes_of,
    line_updates,
    open_source,
    uncoloured,
)
from logphase.packs import Rule

# Big chunks: the per-chunk Python work is constant, the scan itself is C.
CHUNK_BYTES = 8 << 20
SAMPLE_BYTES = 1 << 18  # of a chunk, where the mix of its unread lines' systems is counted (~1,500 lines)
WINDOW_BYTES = 1 << 16  # the first window of a candidate scan
SPARSE = 64  # fewer candidates than this in a window: the next window is twice as big
PROBE_CACHE = 4096  # lines whose events are remembered (walks ask about a line more than once)


class OpenDumps(Protocol):
    """The dump parser, as far as the fast path asks: how many dumps are open."""

    @property
    def open(self) -> int: ...


class FastLines(ClockWitness, SteadyRuns):
    """The lines of one source the matcher needs, in order: candidate lines (a rule's literal, a
    dump's trigger), the lines around them (the caller's context, the timestamp they inherit), the
    first two and the last line of each steady run, and everything while a traceback or dump is
    open (`busy`).

    A template line with no candidate factor produces no event and changes nothing the matcher
    keeps but its time, which is handed over by the nearest stamped line before the next line
    the matcher sees. Steady events (serving batches, access lines, NCCL chatter) between the
    second and the last of a run only repeat what the last says; they are counted in `stats`,
    not read, for the caller to merge (ScanStats)."""

    def __init__(
        self,
        source: LogSource,
        plan: Plan,
        reference: datetime,
        *,
        context: tuple[int, int],
        plain_head: int = 0,
        accelerate: bool = True,
        scanners: ScannerCache | None = None,
        ranges: RangeOracle | None = None,
    ) -> None:
        self.source = source
        self.plan = plan
        self.reference = reference
        self.context_before, self.context_after = context  # the lines the report quotes around an event
        self.plain_head = plain_head
        self.matcher: SourceMatcher | None = None
        self.dumps: OpenDumps | None = None
        self.quoting: Callable[[], bool] | None = None
        self.unprobed = False  # the last line emitted was read without a probe of its events
        self.stats = ScanStats()
        self.runs: Runs = {}
        self.phases = RankPhases()  # what a restarting run may move (book_runs)
        self.steady_rules = plan.steady_rules
        # a line of the plain head holds a steady factor or is read as no event: one search of the
        # factors' trie, not a substring test per factor (every line there pays it)
        self.steady_factor = re.compile(trie_regex(plan.steady)) if plan.steady else None
        self.after = 0  # context lines still owed after the last emission
        self.carried_stamps: list[tuple[int, bytes, str]] = []  # stamped lines after the last emission
        self.failure: BaseException | None = None
        self.probe_cache: dict[tuple[int, int], tuple[Event, ...]] = {}
        # a source in envelopes (docker, CRI, journald, srun, a quote: prefixes of each line, never a
        # hard-wrapped paste or an export listed newest first): its templates start with the envelopes'
        # prefix; the lines read are unwrapped in order, CRI's parts joined (`holding`)
        self.envelopes = envelopes_of(source)
        self.scan = CandidateScan(plan, accelerate=accelerate, cache=scanners, enveloped=bool(self.envelopes))
        self.unwrapper = Unwrapper(self.envelopes) if self.envelopes else None
        stamped = any(envelope.time_formats for envelope in self.envelopes.layers)
        self.clock = EnvelopeClock(plan.packs, self.envelopes) if stamped else None
        self.carried_peak: list[tuple[int, bytes]] = []  # the envelope clock's peak the last chunk left
        self.rollovers = Rollovers()  # time-of-day stamps: where the day may turn
        self.rollover_at: int | None = None
        self.hours = OtherHours()  # lines stamped in another hour than the clock: the matcher sees them
        self.ranges = ranges  # workers' candidate lines of the ranges ahead (--jobs); the same answers
        if ranges is not None and source.size is not None:
            ranges.size = min(ranges.size, source.size)  # the walk reads the file as it was when opened
        self.chunk_offset = 0  # the file offset of the chunk's first byte
        self.plain: PlainChunk | None = None  # the chunk is scanned without its colour codes: its ranges in it

    def attach(
        self, matcher: SourceMatcher, dumps: OpenDumps | None = None, quoting: Callable[[], bool] | None = None
    ) -> None:
        """The matcher (and dump parser) that read these lines: what they hold decides what the
        next line must be (a copy of the matcher's state predicts its events). `quoting`: whether the
        reader still waits for the lines after an event it quotes (the feed's context)."""
        self.matcher, self.dumps, self.quoting = matcher, dumps, quoting

    def busy(self) -> bool:
        """A traceback or a dump is open, a stamp far ahead of the clock waits for the next stamped line to
        confirm it, or the last line may be the first part of a wrapped frame of rich's box (the next line may
        complete it): the matcher must see every line until then."""
        matcher = self.matcher
        return matcher is not None and (
            matcher.block is not None
            or matcher.clock_pending
            or matcher.rich_piece
            or (self.dumps is not None and self.dumps.open > 0)
        )

    # -- reading

    def __iter__(self) -> Iterator[Line]:
        stream = open_source(self.source)
        try:
            yield from self._chunks(stream)
            if self.unwrapper is not None:
                for held in self.unwrapper.end():  # a part CRI cut that nothing continued
                    yield from line_updates(held, self.source._index)
        except READ_ERRORS as exc:
            raise damaged(self.source, self.stats.lines, exc) from None
        finally:
            stream.close()

    def _chunks(self, stream: IO[bytes]) -> Iterator[Line]:
        read = getattr(stream, "read1", stream.read)
        pending = b""
        base = 0
        upcoming = self._read(read)
        while upcoming:
            data = pending + upcoming
            upcoming = self._read(read) if self.failure is None else b""
            cut = data.rfind(b"\n") + 1
            final = not upcoming and self.failure is None
            if final:
                cut = len(data)
            elif self.ranges is not None and b"\x1b" in data:
                cut = self.ranges.last_first_line(data, self.chunk_offset, cut)
            elif cut == 0:
                pending = self._long_line(data)
                self.ranges = None  # the chunks no longer follow the file's bytes
                continue
            yield from self._whole_lines(data, cut, base, final=final)
            pending = data[cut:]
            self.chunk_offset += cut
            base = self.stats.lines
        if self.failure is not None:
            raise self.failure  # after the whole lines read before it, as the reader does
        if pending:
            yield from self._whole_lines(pending, len(pending), base, final=True)

    def _whole_lines(self, data: bytes, cut: int, base: int, *, final: bool) -> Iterator[Line]:
        """The lines of data[:cut], scanned without their colour codes where the reader's text of each
        line is the same without them (`uncoloured`): a terminal's colours on every line (vLLM's and
        uvicorn's on a TTY, `docker logs` of one) would split every literal and template, and send every
        line to the matcher (issue 27 (d)). Lines keep their numbers; their offsets no longer follow
        the file's: the workers' ranges (--jobs) are placed in the chunk by where each range's first line
        is in it (`plain_chunk`), and a worker scans a range's lines without their codes alike
        (`ranges.range_answer`)."""
        plain = uncoloured(data[:cut])
        if plain is None:
            yield from self._chunk(data, cut, base, final=final)
            return
        if self.ranges is not None:
            self.plain = plain_chunk(data[:cut], self.chunk_offset, self.ranges.range_bytes)
        try:
            yield from self._chunk(plain, len(plain), base, final=final)
        finally:
            self.plain = None

    def _read(self, read: Callable[[int], bytes]) -> bytes:
        """Up to CHUNK_BYTES, in the reader's own read sizes: a damaged archive then fails after
        the same bytes, and the error names the same line."""
        parts: list[bytes] = []
        size = 0
        while size < CHUNK_BYTES:
            try:
                part = read(READ_BYTES)
            except READ_ERRORS as exc:
                self.failure = exc
                break
            if not part:
                break
            parts.append(part)
            size += len(part)
            self.stats.bytes += len(part)
        return b"".join(parts)

    @staticmethod
    def _long_line(data: bytes) -> bytes:
        """A line longer than a chunk: only its first MAX_LINE_BYTES matter (the reader's rule)."""
        return data[: MAX_LINE_BYTES + 1]

    # -- one chunk: whole lines, `base` lines before it

    def _chunk(self, buf: bytes, end: int, base: int, *, final: bool) -> Iterator[Line]:
        """The whole lines of buf[:end] (what follows is the next chunk's first line)."""
        self.buf = buf
        self.end = end
        self.base = base
        self.pos = 0
        self._number_cache = (0, base + 1)
        self.targets: list[int] = []
        self.target_index = 0
        self.targets_from = -1
        self.targets_to = 0
        self.window = WINDOW_BYTES
        self.kind_next: dict[int, tuple[int, int | None, int]] = {}
        self.rollovers.search, self.rollover_at = None, None  # offsets of the last chunk
        self.hours.reset()
        for run in self.runs.values():
            run.member = -1
        emitted_before = self.stats.emitted
        last_start = buf.rfind(b"\n", 0, end - 1) + 1 if end else 0
        while self.pos < end:
            if self._plain():
                yield from self._emit_line(self.pos)
                continue
            target = self._next_target()
            rollover = self._next_rollover(end if target is None else target)
            if rollover is not None:
                target = rollover
            if final and (target is None or target > last_start) and self.pos <= last_start:
                target = last_start  # the last line: the report quotes it, with its time
            limit = end if target is None else target
            first = self._next_unstable(limit)
            other_hour = self.hours.next(
                self.buf, self.pos, end, limit if first is None else first, self.scan.templates, self.matcher
            )
            if other_hour is not None:
                yield from self._emit_with_context(other_hour)
            elif first is not None:
                yield from self._emit_with_context(first)
            elif target is not None:
                yield from self._emit_with_context(target)
            else:
                break
        self._carry(end)
        known, number = self._number_cache
        lines = number - 1 - base + buf.count(b"\n", known, end) + (0 if buf[end - 1 : end] == b"\n" else 1)
        self._count_skipped(lines - (self.stats.emitted - emitted_before), end)
        self.stats.lines = base + lines

    def _plain(self) -> bool:
        """Every line goes to the matcher: the head (read for the log's year), while a traceback
        or dump is open, while owed context lines, or before any template is known (but for empty
        lines, where the scan leaves them unread: `CandidateScan.quiet_empty`)."""
        if self.after > 0 or (self.unwrapper is not None and self.unwrapper.holding):
            return True
        if self.unprobed and self.quoting is not None and self.quoting():
            # the last line read was not probed (the head, or no template known), so its events did not
            # say whether the lines after it are context the report quotes: the feed says (a line of no
            # prefix is read only for what it may hold, `BareStarts`, not as every such line once was)
            return True
        if self._number(self.pos) <= self.plain_head or not (self.scan.templates or self.scan.quiet_empty):
            return True
        if self.busy():
            for run in self.runs.values():
                run.stage = 0
            return True
        return False

    # -- candidates

    def _next_target(self) -> int | None:
        if self.scan.refresh(self.stats.emitted):
            self.stats.recompiles += 1
            self.targets_from = -1
        if self.targets_from < 0 or self.targets_from > self.pos:
            self._find_targets(self.pos)
        while True:
            while self.target_index < len(self.targets) and self.targets[self.target_index] < self.pos:
                self.target_index += 1
            if self.target_index < len(self.targets):
                return self.targets[self.target_index]
            if self.targets_to >= self.end:
                return None
            self._find_targets(max(self.pos, self.targets_to))

    def _find_targets(self, start: int) -> None:
        """Candidates in a window from `start`: small while they are dense (the matcher reads most
        lines anyway), doubling while they are sparse, so a scan never runs far ahead for nothing."""
        end = self.end
        if start + self.window < end:
            end = self.buf.find(b"\n", start + self.window) + 1 or end
        self._scan_targets(start, end)
        self.window = min(self.window * 2, CHUNK_BYTES) if len(self.targets) < SPARSE else WINDOW_BYTES
        self.targets_from, self.targets_to = start, end

    def _scan_targets(self, start: int, end: int) -> None:
        self.scan.scanned += end - start
        if self.ranges is not None:  # ranges ahead scanned by workers (--jobs): the same answer
            self.targets = self.ranges.line_starts(
                self.scan, self.buf, self.chunk_offset, start, end, self.end, self.plain
            )
        else:
            self.targets = self.scan.line_starts(self.buf, start, end, self.end)
        self.target_index = 0

    # -- emitting

    def _emit_with_context(self, offset: int) -> Iterator[Line]:
        """Emit a line with what the matcher must see first: each steady run's last line since
        the matcher's last look, the two lines before (context), the nearest timestamp."""
        wanted: set[int] = {offset}
        carried: list[tuple[int, bytes]] = self.carried_peak
        self.carried_peak = []
        for run, last in self._unseen_lasts(offset):
            if last is not None:
                wanted.add(last)
            elif run.carried is not None:
                carried.append(run.carried)
            run.carried = None
        for anchor in sorted(wanted):  # a run's last line may be a stall's cause: its context is quoted too
            line = anchor
            for _ in range(self.context_before):
                if line <= self.pos:
                    break
                line = self._previous(line)
                wanted.add(line)
        wanted |= self._clock_lines(offset, wanted)
        stamps, old = self._time_lines(sorted(wanted))
        wanted |= stamps
        carried += old
        for number, raw in sorted(set(carried)):
            yield from self._emit_raw(raw, number)
        self.carried_stamps = []
        for line_start in sorted(wanted):
            if line_start >= self.pos:
                yield from self._emit_line(line_start)
        self.after = self.context_after

    def _lines(self, raw: bytes, number: int, *, read: bool) -> list[Line]:
        """The Lines a physical line makes: `read`, as the matcher reads it (the source's unwrapper,
        which joins CRI's parts); else on its own (a probe)."""
        if self.unwrapper is None:
            return list(clean_line(raw, number, self.source._index))
        unwrapper = self.unwrapper if read else Unwrapper(self.envelopes)
        text = decoded_text(raw)
        return [line for part in unwrapper.feed(number, text) for line in line_updates(part, self.source._index)]

    def _emit_raw(self, raw: bytes, number: int) -> Iterator[Line]:
        lines = self._lines(raw, number, read=True)
        self._book(self._probe(lines), None)
        self.stats.emitted += 1
        yield from lines

    def _emit_line(self, offset: int) -> Iterator[Line]:
        end = self._line_end(offset)
        raw = self.buf[offset:end]
        if len(raw) > MAX_LINE_BYTES:
            raw = raw[:MAX_LINE_BYTES]
            self.stats.truncated_lines += 1
        number = self._number(offset)
        lines = self._lines(raw, number, read=True)
        if self.after > 0:
            self.after -= 1
        self.unprobed = self._plain_now(offset)
        if self.unprobed:
            self.stats.plain_lines += 1
            holds_factor = self.steady_factor is not None and self.steady_factor.search(raw) is not None
            events = self._probe(lines) if holds_factor else ()
        elif lines and lines[0].number != number:
            events = self._probe(lines)  # the rest of a line CRI cut, joined to its first part
        else:
            events = self._probe_at(offset, lines)
            if not events:
                self._learn_quiet(offset, raw, lines)
        self._book(events, (offset, raw, lines))
        if any(event.rule.id not in self.steady_rules for event in events):
            # an event read as another line's context has context of its own (the report quotes the
            # lines after a failure and after the latest phase event); a steady run's members are
            # shown with theirs where the run is (`_emit_with_context`)
            self.after = self.context_after
        self.stats.emitted += 1
        self.pos = end + 1
        self.carried_stamps = []
        yield from lines

    def _plain_now(self, offset: int) -> bool:
        return not self.scan.templates or self._number(offset) <= self.plain_head

    # -- what a line is

    def _probe_at(self, offset: int, lines: list[Line] | None = None) -> tuple[Event, ...]:
        """The events of the line at `offset` (remembered: walks ask about a line more than once)."""
        cache = self.probe_cache
        key = (self.base, offset)
        if key in cache:
            return cache[key]
        if lines is None:
            raw = self.buf[offset : self._line_end(offset)][:MAX_LINE_BYTES]
            lines = self._lines(raw, self._number(offset), read=False)
        events = self._probe(lines)
        if len(cache) > PROBE_CACHE:
            cache.clear()
        cache[key] = events
        return events

    def _probe(self, lines: Iterable[Line]) -> tuple[Event, ...]:
        """What the matcher will make of these lines: a fork of it reads them (before the
        matcher is attached, while the head is read, a fresh one)."""
        self.stats.probed += 1
        probe = self.matcher.fork() if self.matcher is not None else SourceMatcher(self.plan.packs, self.reference)
        return tuple(event for line in lines for event in probe.match_line(line))

    def _book(self, events: tuple[Event, ...], where: tuple[int, bytes, list[Line]] | None) -> None:
        """Keep the runs' state as the matcher sees this line's events; learn templates."""
        for event in events:
            run = book_runs(self.runs, self.steady_rules, event, self.phases)
            if run is not None and where is not None:
                run.member = where[0]
                self._learn(where, event.rule)

    def _learn(self, where: tuple[int, bytes, list[Line]], rule: Rule) -> None:
        offset, raw, lines = where
        if len(lines) != 1:
            return
        template = self._known_template(offset, raw, lines[0])
        if template is None:
            template = learn_template(self.plan.packs, raw, lines[0].text, self.envelopes)
        if template is not None and self.scan.learn(template, rule, raw):
            self.kind_next.clear()

    def _known_template(self, offset: int, raw: bytes, line: Line) -> Template | None:
        """The adopted template a line the reader left as it is starts with: what learning it would
        make of it (every line on a template splits into the same prefixes), without the work."""
        template = self.scan.known_template_at(self.buf, offset)
        if template is None or text_of(raw)[template.envelope_end(raw) :] != line.text:
            return None
        return template

    def _learn_quiet(self, offset: int, raw: bytes, lines: list[Line]) -> None:
        """A line that made no event teaches its template too: lines of that shape without a
        candidate factor then stay unread wherever they fall (a busy server interleaves its
        request logs, access lines and NCCL chatter with the batches), not only inside a run."""
        if len(lines) != 1 or self.scan.known_template_at(self.buf, offset) is not None:
            return
        template = learn_template(self.plan.packs, raw, lines[0].text, self.envelopes)
        if template is not None and self.scan.sight(template):
            self.kind_next.clear()

    def _count_skipped(self, lines: int, end: int) -> None:
        """Events of runs the matcher never saw, among a chunk's unread lines, counted by the mix of
        its last SAMPLE_BYTES (`unread_votes`; the runs' stages at the chunk's end are not those they
        had in it). The matcher's vote takes them now: which rule wins a line follows the log's system."""
        # two rules of one system with the same factors (SGLang's two `Prefill batch` marks): a line is one
        # event, its factor counted once for the system
        voters: dict[tuple[str, tuple[bytes, ...]], Rule] = {}
        for kind in self.scan.kinds:
            if kind.rule.system:
                found = (kind.rule.system, tuple(sorted(self.scan.factors_of.get(kind.rule.id, []))))
                voters.setdefault(found, kind.rule)
        rules = list(voters.values())
        factors = [(system, list(found)) for system, found in voters]
        start = max(0, end - SAMPLE_BYTES)
        for system, events in unread_votes(self.buf, start, end, lines, factors).items():
            self.stats.skip(system, events)
        if self.matcher is None:
            return
        # the matcher's vote leaves out a line its logger's module placed (the timeline's count takes it)
        voting = [found for found, rule in zip(factors, rules, strict=True) if votes_in_matcher(rule)]
        for system, events in unread_votes(self.buf, start, end, lines, voting).items():
            self.matcher.count_unread(system, events)

    def _carry(self, end: int) -> None:
        """At a chunk's end: each run's last line, the last stamped lines and the envelope clock's
        peak the matcher has not seen, for the next chunk to hand over."""
        for run, last in self._unseen_lasts(end):
            if last is not None:
                run.carried = (self._number(last), self.buf[last : self._line_end(last)][:MAX_LINE_BYTES])
        self._carry_times(end)
