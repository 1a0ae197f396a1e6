"""Dates for stamps without a year or a date: the log's dated lines give them, else the reference (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta

from logphase.logs.reader import Line
from logphase.packs import PackSet

# A year-less date this far after the reference time is last year's (syslog's rule): a log is
# never read before it was written, but clocks and time zones differ by up to a day.
FUTURE_SLACK = timedelta(days=1)
# A time-of-day stamp that jumps back by more than this crossed midnight.
MIDNIGHT_JUMP = timedelta(hours=12)

FirstDate = tuple[datetime, bool]  # the first stamp with a date in a log, and whether it has its year


def first_year(lines: Sequence[Line], packs: PackSet) -> int | None:
    """The year of the first dated line: year-less stamps before it take it."""
    for line in lines:
        fields, _ = packs.split_prefix(line.text)
        if fields.time is not None and fields.time_has_year:
            return fields.time.year
        if line.stamp is not None:
            return line.stamp.year  # the envelope's year, where the line's own stamp has none
    return None


def first_date(lines: Sequence[Line], packs: PackSet) -> FirstDate | None:
    """The first stamp with a date (its own, else its envelope's) and whether it has its year: the
    time-of-day stamps before it take its date."""
    for line in lines:
        fields, _ = packs.split_prefix(line.text)
        if fields.time is not None and fields.time_has_date and (fields.time_has_year or line.stamp is None):
            return fields.time, fields.time_has_year
        if line.stamp is not None:
            return line.stamp, True  # the envelope's date, where the line's own stamp has none or no year
    return None


def with_year(stamp: datetime, year: int | None, reference: datetime) -> datetime:
    """A year-less date in the log's `year`; without one known, the latest not after the reference."""
    if year is not None:
        return stamp.replace(year=year)
    dated = stamp.replace(year=reference.year)
    return dated.replace(year=dated.year - 1) if dated > reference + FUTURE_SLACK else dated


def first_day(stamp: datetime, first: FirstDate | None, year: int | None, reference: datetime) -> date:
    """The date of a time of day read before any line with a date: the date of the log's first dated
    line (SGLang 0.3's `[23:17:01 TP0]` before vLLM's `INFO 09-19 23:16:56`), the day before where
    that puts it over MIDNIGHT_JUMP after that line (it was written before it); with no dated line,
    the latest not after the reference."""
    if first is None:
        completed = datetime.combine(reference.date(), stamp.time())
        return (completed - timedelta(days=1) if completed > reference else completed).date()
    stamped, has_year = first
    anchor = stamped if has_year else with_year(stamped, year, reference)
    completed = datetime.combine(anchor.date(), stamp.time())
    return (completed - timedelta(days=1) if completed > anchor + MIDNIGHT_JUMP else completed).date()
