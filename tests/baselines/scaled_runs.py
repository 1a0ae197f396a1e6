"""Copies of a real log with its clock stretched (every stamp moved away from the first by a factor), as
runs of one setup that were faster or slower; and the time each line was written."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

# The stamps of the fixtures used: a CRI prefix (RFC 3339, nanoseconds), SGLang's `[YYYY-MM-DD HH:MM:SS`,
# vLLM's year-less `INFO MM-DD HH:MM:SS` (shared/reference). Year-less stamps are dated in a leap year
# so that 02-29 parses.
STAMP = re.compile(
    r"(?P<cri>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(?P<fraction>\d+)Z"
    r"|(?P<full>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})"
    r"|(?<![\d-])(?P<yearless>\d{2}-\d{2} \d{2}:\d{2}:\d{2})"
)
FORMATS = {"cri": "%Y-%m-%dT%H:%M:%S", "full": "%Y-%m-%d %H:%M:%S", "yearless": "%Y-%m-%d %H:%M:%S"}
LEAP_YEAR = "2000-"


def _parse(match: re.Match[str]) -> tuple[str, datetime]:
    kind = next(name for name in FORMATS if match.group(name))
    text = match.group(kind)
    moment = datetime.strptime(LEAP_YEAR + text if kind == "yearless" else text, FORMATS[kind])
    if kind == "cri":
        digits = match.group("fraction")
        moment = moment.replace(microsecond=int(digits[:6].ljust(6, "0")))
    return kind, moment


def _format(kind: str, moment: datetime, match: re.Match[str]) -> str:
    if kind == "cri":
        digits = match.group("fraction")  # beyond microseconds the digits stay as they were
        fraction = f"{moment.microsecond:06d}"[: len(digits)] + digits[6:]
        return f"{moment.strftime(FORMATS['cri'])}.{fraction}Z"
    text = moment.strftime(FORMATS[kind])
    return text[len(LEAP_YEAR) :] if kind == "yearless" else text


def scaled(text: str, factor: float) -> str:
    """`text` with every stamp moved `factor` times as far from the first stamp of its kind."""
    origins: dict[str, datetime] = {}

    def stretch(match: re.Match[str]) -> str:
        kind, moment = _parse(match)
        origin = origins.setdefault(kind, moment)
        return _format(kind, origin + (moment - origin) * factor, match)

    return STAMP.sub(stretch, text)


def docker_logs_t(text: str, year: int) -> str:
    """What `docker logs -t` gives: each line behind its RFC 3339 receive time (the line's own time,
    in `year` where the line has none; lines before any stamp take the first one)."""
    times = list(line_times(text))
    first = next((t for t in times if t is not None), datetime(year, 1, 1))
    out = []
    for line, when in zip(text.split("\n"), times, strict=True):
        stamp = (when or first).replace(year=year)
        out.append(f"{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond:06d}000Z {line}")
    return "\n".join(out)


def line_times(text: str) -> Iterator[datetime | None]:
    """The time of each physical line: its first stamp, else the last one before it (None before any).
    Year-less stamps keep the leap year; callers compare differences, not dates."""
    current: datetime | None = None
    for line in text.split("\n"):
        match = STAMP.search(line)
        if match is not None:
            current = _parse(match)[1]
        yield current
