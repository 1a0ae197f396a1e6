"""The envelope clock of the lines a summary skips: which of them keep the matcher's clock right (pure)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.bounded import in_calendar
from logphase.logs.clock import NO_CLOCK, Clock
from logphase.logs.envelope import Envelopes, envelope_time
from logphase.logs.fast.templates import Template
from logphase.packs import PackSet
from logphase.packs.model import PrefixRule, parse_time

OWN_CACHE = 4096  # own stamps remembered by their bytes (many lines share a second)

Anchor = tuple[int, bytes, Template]  # a line with a stamp of its own: offset, bytes, template
# an envelope-timed line: offset, bytes of its envelopes' prefix, its stamp's key (if it has one),
# the line that set its offset (None: the matcher's)
Timed = tuple[int, bytes, bytes | None, Anchor | None]

# An RFC 3339 stamp in UTC (docker's, CRI's) with its digits as `0`: its fraction, trimmed of its
# trailing zeros as Go's RFC3339Nano writes it, or fixed at nine digits, or none
UTC_SHAPE = re.compile(rb"0000-00-00T00:00:00(?:\.(0+))?Z")
DIGITS = bytes.maketrans(b"123456789", b"000000000")


def stamp_key_shape(shape: bytes) -> tuple[int, bytes] | None:
    """For the stamps of `shape` (their bytes, digits as `0`) that open it, in UTC: how many of its
    bytes, and what after them, make the key of each (`stamp_key`)."""
    found = UTC_SHAPE.match(shape)
    if found is None:
        return None
    digits = len(found[1] or b"")
    if not digits:
        return 19, b".000000"
    return 20 + min(digits, 6), b"0" * max(0, 6 - digits)


def stamp_key(stamp: bytes, shapes: dict[bytes, tuple[int, bytes] | None] | None = None) -> bytes | None:
    """The key of an RFC 3339 stamp in UTC that opens `stamp`: its time to the microsecond in ISO form
    (what the envelope's `_rfc3339` reads), so that keys sort as the times do, whatever the
    fraction's length (`57.7357Z` is before `57.73579016Z`, though `Z` sorts after the digits). None
    for another form (an offset). `shapes`: the shapes' answers so far (a log's stamps share a few)."""
    shape = stamp.translate(DIGITS)
    if shapes is None:
        known = stamp_key_shape(shape)
    else:
        if shape not in shapes:
            if len(shapes) > OWN_CACHE:
                shapes.clear()
            shapes[shape] = stamp_key_shape(shape)
        known = shapes[shape]
    return None if known is None else stamp[: known[0]] + known[1]


@dataclass(frozen=True)
class OwnStamp:
    """Where the one prefix of a template's stack that carries a stamp has it, in the line's bytes after
    its envelopes' prefix: the own time of each line on that template is its prefix's reading of those bytes."""

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
    top: tuple[datetime, int] | None = None  # of the stamps without a key
    top_key: tuple[bytes, int] | None = None  # of the stamps with one
    since: int = 0  # the first line since the last fold
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
        self.key_shapes: dict[bytes, tuple[int, bytes] | None] = {}  # by an envelopes' prefix's shape
        self.own_stamps: dict[tuple[str, bytes], datetime | None] = {}
        self.at = NO_CLOCK  # the matcher's clock at the lines `peaks` walks
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

    def key(self, prefix: bytes) -> bytes | None:
        """The key of the envelope stamp of a line whose envelopes' prefix is `prefix` (`stamp_key`),
        where its envelopes open with a stamp in UTC."""
        return stamp_key(prefix, self.key_shapes) if self.stamp_opens else None

    def peaks(
        self,
        lines: Sequence[Timed],
        read: Collection[int],
        clock: Clock,
        *,
        latest: datetime | None,
    ) -> tuple[set[int], datetime | None]:
        """Of the envelope-timed `lines` (in order), those the matcher must read besides `read` for its
        clock to be the same at each line it reads, with the lines that set their offsets; and the
        clock they leave. `clock`: the matcher's before them (its envelope offset, its year); `latest`:
        its time, or later where lines carried from an earlier chunk move it. Stamps with a key are
        compared by it; only the latest is read as a time."""
        self.at = clock
        walk = _Walk(latest, clock.envelope_offset)
        points = sorted(read)
        point = 0
        for index, (start, prefix, key, anchor) in enumerate(lines):
            while point < len(points) and points[point] <= start:
                self._flush(walk, lines, index, read)  # a line the matcher reads: its clock must be right there
                point += 1
            if anchor is not None and (walk.anchor is None or walk.anchor[0] != anchor[0]):
                self._fold(walk, lines, index, read)
                walk.anchor, walk.shift = anchor, None
            if start in read:
                stamp = self._time(prefix, key)
                shift = self._shift(walk)
                if stamp is not None and shift is not None and (walk.latest is None or stamp + shift > walk.latest):
                    walk.latest = stamp + shift
            elif key is not None:
                if walk.top_key is None or key > walk.top_key[0]:
                    walk.top_key = (key, start)
            elif (stamp := self.envelope_stamp(prefix)) is not None and (walk.top is None or stamp > walk.top[0]):
                walk.top = (stamp, start)
        self._flush(walk, lines, len(lines), read)
        return walk.read, walk.latest

    def envelope_stamp(self, prefix: bytes) -> datetime | None:
        """`envelope_time` of a line whose envelopes' prefix is `prefix` (ASCII: a template's)."""
        return envelope_time(self.envelopes, prefix.decode("ascii"))

    def _time(self, prefix: bytes, key: bytes | None) -> datetime | None:
        """The envelope's time of a line, from its stamp's key where it has one."""
        if key is not None:
            with suppress(ValueError):  # not in the calendar: the inner envelopes may still give a time
                if (time := in_calendar(datetime.fromisoformat(key.decode()))) is not None:
                    return time
        return self.envelope_stamp(prefix)

    def _top(self, walk: _Walk, lines: Sequence[Timed], end: int, read: Collection[int]) -> tuple[datetime, int] | None:
        """The first line of the latest envelope time among the lines since the last fold, before
        `end` (stamps with a key and without, compared as times)."""
        top, keyed = walk.top, walk.top_key
        walk.top = walk.top_key = None
        if keyed is None:
            return top
        key, start = keyed
        time: datetime | None = None
        with suppress(ValueError):
            time = in_calendar(datetime.fromisoformat(key.decode()))
        if time is not None:
            if top is None:
                return time, start
            candidates = [(time, start)]
        else:  # a stamp out of the calendar (or of logphase/bounded.py's years): every stamp read as a time
            group = lines[walk.since : end]
            candidates = [
                (stamp, at)
                for at, prefix, other, _ in group
                if other is not None and at not in read and (stamp := self._time(prefix, other)) is not None
            ]
        if top is not None:
            candidates.append(top)
        if not candidates:
            return None
        latest = max(time for time, _ in candidates)
        return min((candidate for candidate in candidates if candidate[0] == latest), key=lambda c: c[1])

    def _fold(self, walk: _Walk, lines: Sequence[Timed], end: int, read: Collection[int]) -> None:
        """The latest envelope-timed line since the last line that set the offset: the latest time
        since the last line read, if it moves the clock furthest; read at once where its time needs
        more than the line that set its offset (a time of day)."""
        top = self._top(walk, lines, end, read) if walk.top_key is not None or walk.top is not None else None
        walk.since = end
        if top is None:
            return
        stamp, line = top
        shift = self._shift(walk)
        if shift is None:
            walk.read.add(line)
            if walk.anchor is not None:
                walk.read.add(walk.anchor[0])
            return
        time = stamp + shift
        if (walk.latest is None or time > walk.latest) and (walk.best is None or time > walk.best[0]):
            walk.best = (time, line, walk.anchor)

    def _flush(self, walk: _Walk, lines: Sequence[Timed], end: int, read: Collection[int]) -> None:
        """Before a line the matcher reads: the line of the latest time since the last one, with the
        line that set its offset, read when it moves the clock."""
        self._fold(walk, lines, end, read)
        walk.since = end
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

    def _offset(self, raw: bytes, template: Template) -> timedelta | None:
        """Own stamp minus envelope stamp of a line with both, as the matcher works it out; None where
        that needs more than the line (a time of day: the matcher's day)."""
        at = template.envelope_end(raw)
        prefix = raw[:at]
        envelope = self._time(prefix, self.key(prefix))
        if envelope is None:
            return None
        own = self._own_time(raw, template, at)
        if own is None:
            return None
        dated = self.at.in_year(own, template.stamp != "date")
        return None if dated is None else dated - envelope

    def _own_time(self, raw: bytes, template: Template, at: int) -> datetime | None:
        """A line's own stamp as `split_prefix` reads it, where it has a date: remembered by the bytes
        of the stamp where one prefix of the template gives it (a second's lines share them whatever
        their rank, pid or thread), else by the bytes of the whole own prefix. `at`: where its
        envelopes' prefix ends."""
        known = self.own_spots.get(id(template))
        if known is None or known[0] is not template:
            known = (template, self._own_stamp(raw, template))
            self.own_spots[id(template)] = known
        spot = known[1]
        if spot is not None:
            key = (spot.prefix.id, raw[at + spot.start : at + spot.end])
            if key in self.own_stamps:
                return self.own_stamps[key]
            parsed = parse_time(key[1].decode("ascii"), spot.prefix.time_formats)
            if parsed is not None:  # else another prefix's time, if any, is the line's
                if len(self.own_stamps) > OWN_CACHE:
                    self.own_stamps.clear()
                self.own_stamps[key] = parsed[0] if parsed[2] else None
                return self.own_stamps[key]
        return self._own_time_whole(raw, template, at)

    def _own_time_whole(self, raw: bytes, template: Template, at: int) -> datetime | None:
        key = raw[at : at + len(template.atoms) - template.envelope]
        if key not in self.own:
            if len(self.own) > OWN_CACHE:
                self.own.clear()
            fields, _ = self.packs.split_prefix(raw[at:].decode("utf-8", "replace"))
            self.own[key] = fields.time if fields.time is not None and fields.time_has_date else None
        return self.own[key]

    def _own_stamp(self, raw: bytes, template: Template) -> OwnStamp | None:
        """Where a line of `template` has the stamp its prefixes read, after its envelopes' prefix, when
        exactly one of them reads one (in the template's bytes: every line on it has it there); None
        otherwise."""
        text = raw[template.envelope_end(raw) :].decode("utf-8", "replace")
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
                spots.append(OwnStamp(position + found.start("ts"), position + found.end("ts"), prefix))
            position += found.end()
        if len(spots) != 1 or spots[0].end > len(template.atoms) - template.envelope:
            return None
        return spots[0]
