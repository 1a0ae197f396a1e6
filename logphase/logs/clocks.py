"""Stamp formats of one log that run on another clock than the log's, told from its head (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from logphase.durations import format_duration
from logphase.logs.reader import Line
from logphase.logs.stamps import CLOCK_JUMP
from logphase.packs import PackSet

# Time zones are whole quarter hours apart: a skew is rounded to one, the rest is the writers' own lag.
SKEW_STEP = timedelta(minutes=15)
# One line never decides: a format is another clock's only when this many of its lines say so.
LINES_NEEDED = 2

FormatKey = tuple[str, ...]  # the ids of the prefixes of a line that can carry its stamp


def stamp_format(prefixes: Sequence[str], timed: frozenset[str]) -> FormatKey:
    return tuple(prefix for prefix in prefixes if prefix in timed)


def timed_prefixes(packs: PackSet) -> frozenset[str]:
    """The prefixes that read a timestamp."""
    return frozenset(prefix.id for prefix in packs.prefixes if prefix.time_formats)


def format_offsets(head: Sequence[Line], packs: PackSet, year: int) -> dict[FormatKey, timedelta]:
    """Two loggers of one process may write on two clocks (realworld 001: the vLLM logger inside
    SGLang stamps `INFO 03-07 12:29:08` between SGLang's `[2025-03-08 12:29:04]`): the format most
    lines of the head are stamped in is the log's clock; another format whose lines stand over
    CLOCK_JUMP from the nearest line of it before them, else after them (the median of at least
    LINES_NEEDED lines), is moved onto it, by whole quarter hours. `year`: the year of a year-less stamp."""
    timed = timed_prefixes(packs)
    stamped: list[tuple[FormatKey, datetime]] = []
    for line in head:
        fields, _ = packs.split_prefix(line.text)
        if fields.time is None or not fields.time_has_date:
            continue
        try:
            stamp = fields.time if fields.time_has_year else fields.time.replace(year=year)
        except ValueError:
            continue  # 29 February of another year
        stamped.append((stamp_format(fields.prefixes, timed), stamp))
    formats = Counter(key for key, _ in stamped)
    if len(formats) < 2:
        return {}
    main = formats.most_common(1)[0][0]
    # each other line against the nearest line of the log's clock before it (after it, where the
    # head opens with the other logger: torchrun's agent before its ranks' first lines)
    nearest: list[datetime | None] = []
    clock: datetime | None = None
    for key, stamp in reversed(stamped):
        clock = stamp if key == main else clock
        nearest.append(clock)
    nearest.reverse()
    apart: dict[FormatKey, list[float]] = {}
    clock = None
    for (key, stamp), after in zip(stamped, nearest, strict=True):
        if key == main:
            clock = stamp
        elif (reference := clock or after) is not None:
            apart.setdefault(key, []).append((stamp - reference).total_seconds())
    offsets: dict[FormatKey, timedelta] = {}
    if apart:
        import statistics  # only for a log with lines on two clocks (~3 ms of a small log's start-up)
    for key, seconds in apart.items():
        median = timedelta(seconds=statistics.median(seconds))
        if len(seconds) >= LINES_NEEDED and abs(median) > CLOCK_JUMP:
            offsets[key] = -SKEW_STEP * round(median / SKEW_STEP)
    return offsets


def format_offset_notes(source: str, offsets: Mapping[FormatKey, timedelta]) -> list[str]:
    return [
        f"{source}: lines stamped by {' + '.join(key) or 'an envelope'} run on a clock "
        f"{format_duration(abs(offset.total_seconds()))} {'behind' if offset > timedelta(0) else 'ahead of'} "
        f"the log's other lines: read on theirs"
        for key, offset in offsets.items()
    ]
