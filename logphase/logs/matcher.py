"""Lines × rules → Events: prefix stripping, time completion, traceback blocks (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from logphase.frames import frame_key
from logphase.logs.reader import Line
from logphase.packs import PackSet, PrefixFields, Rule, rank_from_tags
from logphase.phases import EventKind, Phase, Role

# Lines inside a traceback that are its structure, not a new message.
BLOCK_MARKERS = (
    "Traceback (most recent call last)",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "Thread 0x",
    "Current thread 0x",
    "Stack (most recent call first)",
)
# Frame keys whose phase lookup is remembered (frames repeat: every rank dumps the same stack).
FRAME_CACHE = 10_000
_UNSEEN = object()
# A time-of-day stamp that jumps back by more than this crossed midnight.
MIDNIGHT_JUMP = timedelta(hours=12)


@dataclass(frozen=True, slots=True)
class Event:
    """A line a rule recognised. `time` is the line's own stamp, or the last one before it in the
    same source (NCCL and traceback lines carry none); `block` is the line number of the line that
    opened the traceback this line belongs to."""

    source: int
    line: int
    time: datetime | None
    rank: str | None
    rule: Rule
    captures: Mapping[str, str]
    text: str
    message: str
    rank_from_prefix: bool = True
    block: int | None = None
    stamped: bool = True

    @property
    def phase(self) -> Phase | None:
        return self.rule.phase

    @property
    def kind(self) -> EventKind:
        return self.rule.kind

    @property
    def role(self) -> Role:
        return self.rule.role

    @property
    def order_key(self) -> tuple[datetime, int, int]:
        return (self.time or datetime.min, self.source, self.line)


@cache
def frame_rule(phase: Phase) -> Rule:
    """The rule an event derived from a frame carries: evidence of where the rank was, never
    progress and never a cause (a failure kind with the diagnostic role)."""
    return Rule(
        id=f"frames.{phase.value}",
        pack="frames",
        phase=phase,
        kind=EventKind.ERROR,
        role=Role.DIAGNOSTIC,
        priority=0,
        literal=None,
        pattern=None,
        ignore_case=False,
        draft=False,
        system=None,
        versions="",
        after_prefix=(),
        in_block=True,
        opens_block=False,
        summary="a frame of a traceback or dump places the rank in this phase",
        examples=(),
        counter_examples=(),
    )


@dataclass(frozen=True)
class Explanation:
    """What `patterns explain` shows for one line."""

    prefix: PrefixFields
    message: str
    matches: tuple[tuple[Rule, Mapping[str, str]], ...]


def explain(text: str, packs: PackSet) -> Explanation:
    fields, message = packs.split_prefix(text)
    return Explanation(fields, message, tuple(packs.matching_rules(message, fields.prefixes)))


@dataclass
class _Block:
    opener_line: int
    rank: str | None
    prefixes: tuple[str, ...]


@dataclass
class SourceMatcher:
    """Matches the lines of one source in order; keeps what carries from line to line."""

    packs: PackSet
    reference: datetime  # as_of: dates for stamps without one, never after it
    last_time: datetime | None = None
    year: int | None = None
    day: date | None = None
    lines_seen: int = 0
    block: _Block | None = field(default=None, repr=False)
    systems: Counter[str] = field(default_factory=Counter, repr=False)
    _frame_phases: dict[str, object] = field(default_factory=dict, repr=False)

    def match(self, lines: Iterable[Line]) -> Iterator[Event]:
        for line in lines:
            self.lines_seen = line.number
            event = self.match_line(line)
            if event is not None:
                yield event

    def match_line(self, line: Line) -> Event | None:
        fields, message = self.packs.split_prefix(line.text)
        stamp = self._complete_time(fields) if fields.time else None
        if stamp is not None:
            self.last_time = stamp
        inside = self._continues_block(fields, message)
        if message[:1].isspace() and (inside or message.lstrip().startswith('File "')):
            # a frame or a quoted code line: never a message, but a frame can tell the phase
            return self._frame_event(line, fields, message, stamp, inside)
        best = self._best_rule(message, fields.prefixes, inside)
        if best is None:
            return None
        rule, captures = best
        if rule.system:
            self.systems[rule.system] += 1
        rank, from_prefix = self._rank(fields, captures, inside)
        block_line = self.block.opener_line if inside and self.block else None
        if rule.opens_block and not inside:
            # a `Traceback` line right after `Process Process-6:` continues the same block
            self.block = _Block(line.number, rank, fields.prefixes)
            block_line = line.number
        return Event(
            source=line.source,
            line=line.number,
            time=stamp or self.last_time,
            rank=rank,
            rule=rule,
            captures=captures,
            text=line.text,
            message=message,
            rank_from_prefix=from_prefix,
            block=block_line,
            stamped=stamp is not None,
        )

    def _best_rule(self, message: str, prefixes: tuple[str, ...], inside: bool) -> tuple[Rule, dict[str, str]] | None:
        """The highest-priority rule that matches — but a line that several systems print alike
        (uvicorn's `Application startup complete.`, a rule with `system = ""`, or another system's
        rule) goes to a rule of the system this log has shown so far, when one matches."""
        lowered = message.lower()
        system = self.systems.most_common(1)[0][0] if self.systems else None
        winner: tuple[Rule, dict[str, str]] | None = None
        for rule in self.packs.rules:  # sorted by priority
            if (rule.in_block and not inside) or (winner is not None and rule.system != system):
                continue
            if not rule.prefilter(message, lowered):
                continue
            captures = rule.match(message, prefixes)
            if captures is None:
                continue
            if winner is not None:
                return rule, captures
            winner = (rule, captures)
            if system is None or rule.system is None or rule.system == system:
                return winner
        return winner

    def _frame_event(
        self, line: Line, fields: PrefixFields, message: str, stamp: datetime | None, inside: bool
    ) -> Event | None:
        key = frame_key(message)
        if key is None:
            return None
        phase = self._frame_phases.get(key, _UNSEEN)
        if phase is _UNSEEN:
            phase = self.packs.frame_phase(key)
            if len(self._frame_phases) < FRAME_CACHE:
                self._frame_phases[key] = phase
        if not isinstance(phase, Phase):
            return None
        rank = fields.rank if fields.rank is not None else (self.block.rank if inside and self.block else None)
        return Event(
            source=line.source,
            line=line.number,
            time=stamp or self.last_time,
            rank=rank,
            rule=frame_rule(phase),
            captures={"frame": key},
            text=line.text,
            message=message,
            block=self.block.opener_line if inside and self.block else None,
            stamped=stamp is not None,
        )

    def _continues_block(self, fields: PrefixFields, message: str) -> bool:
        """Inside a traceback: unprefixed lines, and lines with the opener's own prefix (vLLM
        prefixes every traceback line). Another rank's line, or a new message, ends the block."""
        if self.block is None:
            return False
        if not fields.prefixes:
            return True
        if fields.prefixes == self.block.prefixes and fields.rank == self.block.rank:
            if message[:1].isspace() or message.startswith(BLOCK_MARKERS):
                return True
            # the exception line that ends the traceback, in the same prefix: keep it in the block
            if any(r.in_block and r.match(message, fields.prefixes) is not None for r in self.packs.rules):
                return True
        self.block = None
        return False

    def _rank(self, fields: PrefixFields, captures: Mapping[str, str], inside: bool) -> tuple[str | None, bool]:
        if "tags" in captures:
            tagged = rank_from_tags(captures["tags"])
            if tagged:
                return tagged, False
        if captures.get("rank", "").isdigit():
            return f"rank {int(captures['rank'])}", False
        if fields.rank is not None:
            return fields.rank, True
        if inside and self.block is not None:
            return self.block.rank, True
        return None, True

    def _complete_time(self, fields: PrefixFields) -> datetime:
        """Give year-less and date-less stamps the date the rest of the log implies."""
        stamp = fields.time
        assert stamp is not None
        if fields.time_has_year:
            self.year, self.day = stamp.year, stamp.date()
            return stamp
        if fields.time_has_date:
            return stamp.replace(year=self.year or self.reference.year)
        if self.day is None:
            completed = datetime.combine(self.reference.date(), stamp.time())
            if completed > self.reference:
                completed -= timedelta(days=1)
            self.day = completed.date()
        completed = datetime.combine(self.day, stamp.time())
        if self.last_time is not None and completed < self.last_time - MIDNIGHT_JUMP:
            completed += timedelta(days=1)
            self.day = completed.date()
        return completed


def match_lines(lines: Iterable[Line], packs: PackSet, reference: datetime) -> Iterator[Event]:
    """Convenience for one source: every recognised line as an Event."""
    return SourceMatcher(packs, reference).match(lines)
