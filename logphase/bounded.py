"""Numbers, rank ids and dates read from input text, within bounds: the one place they are parsed.

Input is anyone's text: `\\d` and `str.isdigit` also take `٣` and `²` (`int('²')` raises), a run of 5,000
digits passes Python's int-string limit (ValueError), 10^30 passes SQLite's INTEGER (OverflowError), and
a stamp of year 9999 overflows once a clock adds a day to it. So a number is ASCII digits of a bounded
length (None otherwise: the field reads as absent, as text that does not fit a format does), and a date
keeps to years that leave room for every offset the clocks add to it."""

from __future__ import annotations

from datetime import UTC, datetime

# Any count, size, id, line number or duration a log states has at most 18 digits: it fits SQLite's
# 64-bit INTEGER and never nears the int-string limit.
MAX_DIGITS = 18
MAX_NUMBER = 10**MAX_DIGITS - 1
# A rank id past this is no rank (the largest jobs have ~10^5 GPUs); a label over it is left out.
MAX_RANK = (1 << 24) - 1
# The years a stamp may hold. strptime's year-less stamps are in 1900 (their year is supplied later);
# the offsets the clocks add (a day's rollover, the envelope's offset, the skew between logs: each a
# difference of two stamps in these years) keep every datetime made from them inside 1..9999.
FIRST_YEAR, LAST_YEAR = 1900, 2200
_FIRST_EPOCH_S = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC).timestamp()
_LAST_EPOCH_S = datetime(LAST_YEAR, 12, 31, tzinfo=UTC).timestamp()


def is_number(text: str) -> bool:
    """ASCII digits only, at least one, at most MAX_DIGITS of them."""
    return 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


def read_int(text: str | None, limit: int = MAX_NUMBER) -> int | None:
    """`text` as a number when it is one (`is_number`) and at most `limit`; else None."""
    if text is None or not is_number(text):
        return None
    value = int(text)
    return value if value <= limit else None


def read_signed(text: str | None) -> int | None:
    """`read_int` with a leading minus allowed (torch's `last completed NCCL work: -1`)."""
    if text is not None and text.startswith("-"):
        value = read_int(text[1:])
        return -value if value is not None else None
    return read_int(text)


def read_rank(text: str | None) -> int | None:
    """A rank id: a number up to MAX_RANK."""
    return read_int(text, MAX_RANK)


def rank_label(text: str | None, kind: str = "rank") -> str | None:
    """`rank 3` (`local_rank 3`, `task 3`) for the rank id `text`; None where it is no rank id."""
    number = read_rank(text)
    return None if number is None else f"{kind} {number}"


def in_calendar(moment: datetime | None) -> datetime | None:
    """`moment` where its year is within FIRST_YEAR..LAST_YEAR; else None (a stamp out of range reads
    as one that fits no format)."""
    return moment if moment is not None and FIRST_YEAR <= moment.year <= LAST_YEAR else None


def from_epoch(text: str) -> datetime | None:
    """An epoch stamp in seconds, or in milli-, micro- or nanoseconds (told by its digits past ten), as a
    naive UTC datetime; None where it is no number or out of the calendar's bounds."""
    if not (0 < len(text) <= 19 and text.isascii() and text.isdigit()):  # nanoseconds: 19 digits
        return None
    seconds = int(text) / 10 ** max(0, len(text) - 10)
    if not _FIRST_EPOCH_S <= seconds <= _LAST_EPOCH_S:
        return None
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
