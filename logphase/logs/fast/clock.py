"""The envelope clock of the lines a summary skips: which of them keep the matcher's clock right (pure)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.envelope import Envelopes, envelope_time
from logphase.logs.fast.templates import Template
from logphase.packs import PackSet
from logphase.packs.model import PrefixRule, parse_time

OWN_CACHE = 4096  # own stamps remembered by their bytes (many lines share a second)

Anchor = tuple[int, bytes, Template]  # a line with a stamp of its own: offset, bytes, template

# The envelope stamp docker and CRI write most: RFC 3339 in UTC with nanoseconds, which `_rfc3339`
# reads as its first 26 characters (datetime keeps microseconds)
NANO_UTC = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z")


@dataclass(frozen=True)
class OwnStamp:
    """Where the one prefix of a template's stack that carries a stamp has it, in the line's bytes:
    the own time of each line on that template is its prefix's reading of those bytes."""

    start: int
    end: int
    prefix: PrefixRule


@dataclass
class _Walk:
    """One pass of `EnvelopeClock.peaks`: the matcher's clock as far as known, the offset the lines
    read so far set, the latest envelope stamp since the last line that set it, and the latest time
    such a line gives since the last line the matcher reads (with the line that set its offset)."""

    latest: datetime | None
    shift: timedelta | None
    anchor: Anchor | None = None  # the last line with a stamp of its own
    top: tuple[datetime, int] | None = None
    best: tuple[datetime, int, Anchor | None] | None = None
    read: set[int] = field(default_factory=set)


class EnvelopeClock:
    """A line with no stamp of its own in a stamped envelope (docker -t, CRI) takes the envelope's
    time, shifted by the offset between the envelope's clock and the log's that the last line with
    both showed, and the matcher's clock is the latest time any line gave (SourceMatcher). Such lines
    are summarised like any other; among those a summary skips before each line the matcher reads,
    this finds the one whose time would have moved the clock furthest, and the line that set its
    offset, for the matcher to read them (the clock is the latest time: the lines it passed on the way
    change nothing there). Between two lines that set the offset, the latest time is that of the
    latest envelope stamp: only that one is shifted and compared."""

    def __init__(self, packs: PackSet, envelopes: Envelopes) -> None:
        self.packs = packs
        self.envelopes = envelopes
        self.own: dict[bytes, datetime | None] = {}
        first = envelopes.layers[0] if envelopes.layers else None
        # the outermost envelope opens the line with its stamp, read as RFC 3339 first (docker, CRI)
        self.stamp_opens = first is not None and first.time_formats[:1] == ("rfc3339",)
        self.stamp_opens &= first is not None and first.pattern.pattern.startswith("^(?P<ts>")
        self.own_spots: dict[int, tuple[Template, OwnStamp | None]] = {}  # by the template's id
        self.own_stamps: dict[tuple[str, bytes], datetime | None] = {}
        self.year: int | None = None
        self.timed_templates: tuple[Template, ...] = ()
        self.timed_re: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None = None

    def timed(self, buf: bytes, start: int, end: int, templates: Sequence[Template]) -> list[int]:
        """The starts of the lines in [start, end) (`start` starts one; the chunk's lines end by `end`)
        on a template whose time is the envelope's, found by one regex search."""
        timed = tuple(t for t in templates if t.stamp == "envelope")
        if not timed:
            return []
        if timed != self.timed_templates:
            self.timed_templates = timed
            heads = b"(?:" + b"|".join(sorted({t.regex() for t in timed})) + b")"
            self.timed_re = (re.compile(heads), re.compile(b"\n" + heads))  # a literal first: `re` skips ahead
        assert self.timed_re is not None
        at_start, after_newline = self.timed_re
        found = [start] if start == 0 and at_start.match(buf, 0, end) else []
        return found + [hit.start() + 1 for hit in after_newline.finditer(buf, max(0, start - 1), end)]

    def peaks(
        self,
        lines: Iterable[tuple[int, bytes, Anchor | None]],
        read: Collection[int],
        *,
        offset: timedelta,
        year: int | None,
        latest: datetime | None,
    ) -> tuple[set[int], datetime | None]:
        """Of the envelope-timed `lines` (offset in the chunk, bytes of its envelopes' prefix, the line
        with its own stamp that set its offset; in order), those the matcher must read besides
        `read` for its clock to be the same at each line it reads, with the lines that set their
        offsets; and the clock they leave. `offset`, `year`, `latest`: the matcher's envelope offset,
        year and clock before them (an anchor of None: the offset is the matcher's)."""
        self.year = year
        walk = _Walk(latest, offset)
        points = sorted(read)
        point = 0
        for start, prefix, anchor in lines:
            while point < len(points) and points[point] <= start:
                self._flush(walk)  # a line the matcher reads: its clock must be right there
                point += 1
            if anchor is not None and (walk.anchor is None or walk.anchor[0] != anchor[0]):
                self._fold(walk)
                walk.anchor, walk.shift = anchor, None
            stamp = self.envelope_stamp(prefix)
            if stamp is None:
                continue
            if start in read:
                shift = self._shift(walk)
                if shift is not None and (walk.latest is None or stamp + shift > walk.latest):
                    walk.latest = stamp + shift
            elif walk.top is None or stamp > walk.top[0]:
                walk.top = (stamp, start)
        self._flush(walk)
        return walk.read, walk.latest

    def _fold(self, walk: _Walk) -> None:
        """The latest envelope-timed line since the last line that set the offset: the latest time
        since the last line read, if it moves the clock furthest; read at once where its time needs
        more than the line that set its offset (a time of day)."""
        if walk.top is None:
            return
        stamp, line = walk.top
        walk.top = None
        shift = self._shift(walk)
        if shift is None:
            walk.read.add(line)
            if walk.anchor is not None:
                walk.read.add(walk.anchor[0])
            return
        time = stamp + shift
        if (walk.latest is None or time > walk.latest) and (walk.best is None or time > walk.best[0]):
            walk.best = (time, line, walk.anchor)

    def _flush(self, walk: _Walk) -> None:
        """Before a line the matcher reads: the line of the latest time since the last one, with the
        line that set its offset, read when it moves the clock."""
        self._fold(walk)
        if walk.best is None:
            return
        time, line, anchor = walk.best
        walk.best = None
        walk.read.add(line)
        if anchor is not None:
            walk.read.add(anchor[0])
        walk.latest = time

    def _shift(self, walk: _Walk) -> timedelta | None:
        if walk.shift is None and walk.anchor is not None:
            walk.shift = self._offset(walk.anchor[1], walk.anchor[2])
        return walk.shift

    def envelope_stamp(self, prefix: bytes) -> datetime | None:
        """`envelope_time` of a line whose envelopes' prefix is `prefix` (ASCII: a template's); docker's
        and CRI's usual stamp read from its bytes."""
        if self.stamp_opens and NANO_UTC.match(prefix):
            try:
                return datetime.fromisoformat(prefix[:26].decode())
            except ValueError:
                pass  # not in the calendar: the inner envelopes may still give a time
        return envelope_time(self.envelopes, prefix.decode("ascii"))

    def _offset(self, raw: bytes, template: Template) -> timedelta | None:
        """Own stamp minus envelope stamp of a line with both, as the matcher works it out; None where
        that needs more than the line (a time of day: the matcher's day)."""
        envelope = self.envelope_stamp(raw[: template.envelope])
        if envelope is None:
            return None
        own = self._own_time(raw, template)
        if own is None:
            return None
        if template.stamp == "date":
            if self.year is None:
                return None
            own = own.replace(year=self.year)
        return own - envelope

    def _own_time(self, raw: bytes, template: Template) -> datetime | None:
        """A line's own stamp as `split_prefix` reads it, where it has a date: remembered by the bytes
        of the stamp where one prefix of the template gives it (a second's lines share them whatever
        their rank, pid or thread), else by the bytes of the whole own prefix."""
        known = self.own_spots.get(id(template))
        if known is None or known[0] is not template:
            known = (template, self._own_stamp(raw, template))
            self.own_spots[id(template)] = known
        spot = known[1]
        if spot is not None:
            key = (spot.prefix.id, raw[spot.start : spot.end])
            if key in self.own_stamps:
                return self.own_stamps[key]
            parsed = parse_time(key[1].decode("ascii"), spot.prefix.time_formats)
            if parsed is not None:  # else another prefix's time, if any, is the line's
                if len(self.own_stamps) > OWN_CACHE:
                    self.own_stamps.clear()
                self.own_stamps[key] = parsed[0] if parsed[2] else None
                return self.own_stamps[key]
        return self._own_time_whole(raw, template)

    def _own_time_whole(self, raw: bytes, template: Template) -> datetime | None:
        key = raw[template.envelope : len(template.atoms)]
        if key not in self.own:
            if len(self.own) > OWN_CACHE:
                self.own.clear()
            fields, _ = self.packs.split_prefix(raw[template.envelope :].decode("utf-8", "replace"))
            self.own[key] = fields.time if fields.time is not None and fields.time_has_date else None
        return self.own[key]

    def _own_stamp(self, raw: bytes, template: Template) -> OwnStamp | None:
        """Where a line of `template` has the stamp its prefixes read, when exactly one of them reads
        one (in the template's bytes: every line on it has it there); None otherwise."""
        text = raw[template.envelope :].decode("utf-8", "replace")
        fields, message = self.packs.split_prefix(text)
        own = text[: len(text) - len(message)]
        if fields.time is None or not own.isascii():
            return None
        by_id = {prefix.id: prefix for prefix in self.packs.prefixes}
        spots: list[OwnStamp] = []
        position = 0
        for prefix_id in fields.prefixes:
            prefix = by_id[prefix_id]
            found = prefix.pattern.match(text[position:])
            if found is None:
                return None
            if "ts" in found.re.groupindex and found.start("ts") >= 0:
                start = template.envelope + position + found.start("ts")
                spots.append(OwnStamp(start, template.envelope + position + found.end("ts"), prefix))
            position += found.end()
        if len(spots) != 1 or spots[0].end > len(template.atoms):
            return None
        return spots[0]
