"""Clock: a log's clock as one immutable value, and the step a line's stamp moves it by (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import NamedTuple

from logphase.logs.clocks import FormatKey, format_offsets, stamp_format, timed_prefixes
from logphase.logs.dating import MIDNIGHT_JUMP, FirstDate, first_date, first_day, first_year, with_year
from logphase.logs.reader import Line
from logphase.logs.stamps import StampBelief
from logphase.packs import PackSet
from logphase.packs.model import PrefixFields

NO_OFFSETS: Mapping[FormatKey, timedelta] = {}  # never written to: a Clock's offsets are read only


class Clock(NamedTuple):
    """What the lines read so far say of a log's time: the matcher's clock, and what the fast path
    asks of it to choose the lines it must read (a tuple: a fork of the matcher shares it; every
    line that moves it makes a new one).

    `reference`: as_of, the dates of stamps without one are never after it; `year`: of a year-less
    stamp; `first_date`: the first stamp with a date in the log's head, and whether it has its year
    (the date of a time of day before any line with one); `offsets`: the stamp formats on another
    clock and how far to move them (logs/clocks.py), keyed by the `timed` prefixes a line's stamp
    stands in; `time`: the latest believed time; `day`: the date a time of day is on;
    `envelope_offset`: the log's clock minus its envelope's, as the last line with both showed."""

    reference: datetime
    year: int | None = None
    first_date: FirstDate | None = None
    offsets: Mapping[FormatKey, timedelta] = NO_OFFSETS
    timed: frozenset[str] = frozenset()
    time: datetime | None = None
    day: date | None = None
    envelope_offset: timedelta = timedelta(0)

    def read(
        self, number: int, fields: PrefixFields, envelope: datetime | None, belief: StampBelief
    ) -> tuple[Clock, datetime | None]:
        """The clock after line `number` (its prefix `fields`, its envelope's stamp), and the line's
        believed stamp on the log's clock (None: it reads at the clock, as an unstamped line does).
        An unstamped line in a stamped envelope takes the envelope's time moved by `envelope_offset`;
        a year-less or date-less stamp takes the year and day the log showed (an envelope's where the
        log showed none); a time of day over MIDNIGHT_JUMP before the clock is on the next day; a
        format on another clock is moved onto the log's; `belief` decides whether the stamp moves the
        clock (StampBelief: it keeps the stamps it holds or sets aside, for the report's notes)."""
        own = fields.time
        year, day = self.year, self.day
        if own is None:
            if envelope is None:
                return self, None
            stamp, has_year, has_date = envelope + self.envelope_offset, True, True
        else:
            stamp, has_year, has_date = own, fields.time_has_year, fields.time_has_date
            if envelope is not None and not has_year and year is None:
                year = envelope.year
                if not has_date and day is None:
                    day = envelope.date()
        dated = (year, day)
        if has_year:
            year = stamp.year
        elif has_date:
            stamp = with_year(stamp, year, self.reference)
        else:
            if day is None:
                day = first_day(stamp, self.first_date, year, self.reference)
            stamp = datetime.combine(day, stamp.time())
            if self.time is not None and stamp < self.time - MIDNIGHT_JUMP:
                stamp += timedelta(days=1)
                day = stamp.date()
        if own is not None and self.offsets:
            stamp += self.offset_of(fields.prefixes)
        if has_date:
            day = stamp.date()  # a time of day after it is on its date (on the log's clock)
        time, believed = belief.believe(number, stamp, self.time)
        if not believed:
            (year, day), line_time = dated, None  # another clock's stamp dates nothing after it
        else:
            line_time = stamp
        offset = self.envelope_offset
        if own is not None and line_time is not None and envelope is not None:
            offset = line_time - envelope
        clock = Clock(self.reference, year, self.first_date, self.offsets, self.timed, time, day, offset)
        return clock, line_time

    def restarted(self, fields: PrefixFields) -> Clock:
        """The clock of a new start of the server in the same log (a restarted container's lines may be
        stamped before the old ones'): the time of the line that began it, as its prefix gives it."""
        if fields.time is None:
            return self._replace(time=None)
        year, day, stamp = self.year, self.day, fields.time
        if fields.time_has_year:
            year = stamp.year
        elif fields.time_has_date:
            stamp = with_year(stamp, year, self.reference)
        else:
            day = day or first_day(stamp, self.first_date, year, self.reference)
            stamp = datetime.combine(day, stamp.time())
        return self._replace(year=year, day=day, time=stamp)

    def offset_of(self, prefixes: Sequence[str]) -> timedelta:
        """How far a stamp read by these prefixes moves onto the log's clock (logs/clocks.py)."""
        return self.offsets.get(stamp_format(prefixes, self.timed), timedelta(0)) if self.offsets else timedelta(0)

    def in_year(self, own: datetime, has_year: bool) -> datetime | None:
        """A stamp with a date, in the year the log showed where it has none (None: none shown yet)."""
        if has_year:
            return own
        return None if self.year is None else own.replace(year=self.year)

    @property
    def afternoon(self) -> bool:
        """The clock is past noon: a time of day before noon after it may be the next day's."""
        return self.time is not None and self.time.hour >= 12

    def hour(self, stamp: str, prefixes: Sequence[str]) -> datetime | None:
        """The hour (on their own clock) of the stamps of a line kind that are as near the clock as a
        line can be without the matcher weighing them (StampBelief): `stamp` is the kind's
        (`Template.stamp`: `year`, `date`, `time`), `prefixes` the prefixes they stand in. None where
        the clock does not tell: none yet, or a stamp without a year while the clock is in another year
        than the log showed (a year-less stamp's year is the one the log showed, or the reference's)."""
        time = self.time
        if time is None or (stamp != "year" and self.year not in (None, time.year)):
            return None
        hour = time.replace(minute=0, second=0, microsecond=0)
        return hour - self.offset_of(prefixes) if self.offsets else hour


NO_CLOCK = Clock(datetime.min)  # SourceMatcher's default: a fresh clock at its reference


def head_clock(head: Sequence[Line], packs: PackSet, reference: datetime) -> Clock:
    """What a log's head (read in full on every path) says of its clock: the year of year-less
    stamps, the date of time-of-day ones, the formats written on another clock. One reading for
    analyze's scan and watch alike."""
    year = first_year(head, packs)
    offsets = format_offsets(head, packs, year or reference.year)
    timed = timed_prefixes(packs) if offsets else frozenset()
    return Clock(reference, year, first_date(head, packs), offsets or NO_OFFSETS, timed)
