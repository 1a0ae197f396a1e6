"""The envelope clock of the lines a summary skips: which of them keep the matcher's clock right (pure)."""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.envelope import Envelopes, envelope_time
from logphase.logs.fast.templates import Template
from logphase.packs import PackSet

OWN_CACHE = 4096  # own stamps remembered by their prefix's bytes (many lines share a second)


@dataclass
class _Walk:
    """One pass of `EnvelopeClock.peaks`: the matcher's clock as far as known, the offset the lines
    read so far set, and the latest envelope stamp since the last line that set it."""

    latest: datetime | None
    shift: timedelta | None
    anchor: tuple[int, bytes, Template] | None = None  # the last line with a stamp of its own
    top: tuple[datetime, int] | None = None
    read: set[int] = field(default_factory=set)


class EnvelopeClock:
    """A line with no stamp of its own in a stamped envelope (docker -t, CRI) takes the envelope's
    time, shifted by the offset between the envelope's clock and the log's that the last line with
    both showed, and the matcher's clock is the latest time any line gave (SourceMatcher). Such lines
    are summarised like any other; among those a summary skips before each line the matcher reads,
    this finds the one whose time would have moved the clock furthest, and the line that set its
    offset, for the matcher to read them. Between two lines that set the offset, the latest time is
    that of the latest envelope stamp: only that one is shifted and compared."""

    def __init__(self, packs: PackSet, envelopes: Envelopes) -> None:
        self.packs = packs
        self.envelopes = envelopes
        self.own: dict[bytes, datetime | None] = {}
        self.year: int | None = None

    def peaks(
        self,
        lines: Iterable[tuple[int, bytes, Template]],
        read: Container[int],
        *,
        offset: timedelta,
        year: int | None,
        latest: datetime | None,
    ) -> set[int]:
        """Of `lines` (offset in the chunk, bytes, template; in order, those on no template left out),
        the ones the matcher must read besides `read` for its clock to be the same at each line it
        reads. `offset`, `year`, `latest`: the matcher's envelope offset, year and clock before them."""
        self.year = year
        walk = _Walk(latest, offset)
        for start, raw, template in lines:
            if start in read:
                self._flush(walk)
            if template.stamp == "envelope":
                stamp = envelope_time(self.envelopes, raw[: template.envelope].decode("ascii"))
                if stamp is None:
                    continue
                if start in read:
                    shift = self._shift(walk)
                    if shift is not None and (walk.latest is None or stamp + shift > walk.latest):
                        walk.latest = stamp + shift
                elif walk.top is None or stamp > walk.top[0]:
                    walk.top = (stamp, start)
            elif template.stamp != "none":
                self._flush(walk)
                walk.anchor, walk.shift = (start, raw, template), None
        self._flush(walk)
        return walk.read

    def _flush(self, walk: _Walk) -> None:
        """The latest envelope-timed line since the last flush: read when it moves the clock."""
        if walk.top is None:
            return
        stamp, line = walk.top
        walk.top = None
        shift = self._shift(walk)
        if shift is not None and walk.latest is not None and stamp + shift <= walk.latest:
            return
        walk.read.add(line)
        if walk.anchor is not None:
            walk.read.add(walk.anchor[0])
        if shift is not None:
            walk.latest = stamp + shift

    def _shift(self, walk: _Walk) -> timedelta | None:
        if walk.shift is None and walk.anchor is not None:
            walk.shift = self._offset(walk.anchor[1], walk.anchor[2])
        return walk.shift

    def _offset(self, raw: bytes, template: Template) -> timedelta | None:
        """Own stamp minus envelope stamp of a line with both, as the matcher works it out; None where
        that needs more than the line (a time of day: the matcher's day)."""
        envelope = envelope_time(self.envelopes, raw[: template.envelope].decode("ascii"))
        key = raw[template.envelope : len(template.atoms)]
        if key not in self.own:
            if len(self.own) > OWN_CACHE:
                self.own.clear()
            fields, _ = self.packs.split_prefix(raw[template.envelope :].decode("utf-8", "replace"))
            self.own[key] = fields.time if fields.time is not None and fields.time_has_date else None
        own = self.own[key]
        if own is None or envelope is None:
            return None
        if template.stamp == "date":
            if self.year is None:
                return None
            own = own.replace(year=self.year)
        return own - envelope
