"""A prefix's timestamp text read with a pack's strftime format: `datetime.strptime`'s result, cheaper.

strptime costs 2-4 µs a call, most of it checking the locale and building its result field by field;
a small log's scan calls it ~2000 times (every format a text is tried with until one fits, and the
fast path's probes of a line's digits, which fit none). A format made only of the numeric
directives below is read here with the very regex strptime builds for it (CPython's `_strptime`
patterns: the same digits, ranges and alternation order, matched from the start and required to end
at the text's end) and the same defaults (1900-01-01 00:00:00; no year and 29 February is an error,
as there). Any other format (names of months or days, %j, %z, %p, %%, a directive twice, an apostrophe,
which Python 3.13 reads as either of two) is left to
strptime itself. tests/test_stamp_text.py holds the two equal on every shipped format."""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache

# strptime's regex of each directive read here (CPython 3.11-3.13 `_strptime.TimeRE`)
_DIRECTIVES = {
    "Y": r"(?P<Y>\d\d\d\d)",
    "y": r"(?P<y>\d\d)",
    "m": r"(?P<m>1[0-2]|0[1-9]|[1-9])",
    "d": r"(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])",
    "H": r"(?P<H>2[0-3]|[0-1]\d|\d)",
    "M": r"(?P<M>[0-5]\d|\d)",
    "S": r"(?P<S>6[0-1]|[0-5]\d|\d)",
    "f": r"(?P<f>[0-9]{1,6})",
}
_REGEX_CHARS = re.compile(r"([\\.^$*+?\(\){}\[\]|])")  # what strptime escapes in a format's other text
_WHITESPACE = re.compile(r"\s+")  # a run of it in a format matches any run of whitespace


def read_stamp(text: str, fmt: str) -> datetime | None:
    """`datetime.strptime(text, fmt)`, or None where it raises ValueError."""
    regex = _regex(fmt)
    if regex is None:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            return None
    found = regex.match(text)
    if found is None or found.end() != len(text):
        return None
    fields = found.groupdict()
    year_text = fields.get("Y")
    if year_text is not None:
        year = int(year_text)
    elif (short := fields.get("y")) is not None:
        year = int(short) + (2000 if int(short) <= 68 else 1900)  # strptime's century for %y
    else:
        year = 1900
    fraction = fields.get("f")
    try:
        return datetime(
            year,
            _number(fields, "m", 1),
            _number(fields, "d", 1),
            _number(fields, "H", 0),
            _number(fields, "M", 0),
            _number(fields, "S", 0),
            int(fraction + "0" * (6 - len(fraction))) if fraction is not None else 0,
        )
    except ValueError:  # 30 February, a leap second, year 0: strptime raises there too
        return None


def _number(fields: dict[str, str | None], name: str, default: int) -> int:
    text = fields.get(name)
    return default if text is None else int(text)


@cache
def _regex(fmt: str) -> re.Pattern[str] | None:
    """strptime's regex for `fmt` when every directive in it is one of _DIRECTIVES, each once."""
    escaped = _WHITESPACE.sub(r"\\s+", _REGEX_CHARS.sub(r"\\\1", fmt))
    parts = escaped.split("%")
    names = [part[:1] for part in parts[1:]]
    if "'" in fmt or any(name not in _DIRECTIVES for name in names) or len(set(names)) != len(names):
        return None  # strptime reads it
    pattern = parts[0] + "".join(_DIRECTIVES[part[0]] + part[1:] for part in parts[1:])
    return re.compile(pattern, re.IGNORECASE)
