"""A prefix's timestamp text is read as `datetime.strptime` reads it, with every shipped format and
the numeric ones a user pack may write: the same time, and no time where strptime raises."""

from __future__ import annotations

from datetime import datetime

import pytest

from logphase.packs import load_packs
from logphase.packs.stamp_text import read_stamp

# formats a user pack may write besides the shipped ones: ISO's T, day first, a two-digit year, and
# directives left to strptime (a month's name, the day of the year, a literal %)
OTHER_FORMATS = (
    "%Y-%m-%dT%H:%M:%S.%f",
    "%d/%m/%Y %H:%M:%S",
    "%y%m%d %H%M%S",
    "%H:%M:%S,%f",
    "[%Y-%m-%d  %H:%M:%S]",
    "%b %d %H:%M:%S",
    "%Y %j %H:%M:%S",
    "%H:%M:%S%%",
)
MOMENTS = (
    datetime(2026, 4, 21, 9, 16, 16, 123456),
    datetime(2024, 2, 29, 23, 59, 59, 5),
    datetime(1999, 12, 31, 0, 0, 0),
    datetime(2068, 1, 2, 3, 4, 5, 600000),
)


def _shipped_formats() -> set[str]:
    packs = load_packs(check_examples=False)
    return {fmt for prefix in packs.prefixes for fmt in prefix.time_formats}


def _strptime(text: str, fmt: str) -> datetime | None:
    try:
        return datetime.strptime(text, fmt)
    except ValueError:
        return None


def _texts(fmt: str) -> list[str]:
    """What a log may hold where `fmt`'s stamp is: stamps written with it, each digit turned to 0
    and to 9 (the fast path's probes, a month 00 or 99), shortened, padded, and with shorter fractions."""
    texts = []
    for moment in MOMENTS:
        stamp = moment.strftime(fmt)
        texts += [stamp, stamp[:-1], stamp + "0", " " + stamp, stamp.replace(" ", "  ")]
        texts += [
            stamp[:i] + digit + stamp[i + 1 :] for i, char in enumerate(stamp) if char.isdigit() for digit in "09"
        ]
        texts += ["".join("0" if char.isdigit() else char for char in stamp)]
        texts += ["".join("9" if char.isdigit() else char for char in stamp)]
        if "." in stamp:
            texts += [stamp[: stamp.rindex(".") + 1 + keep] for keep in range(0, 7)]
    texts += ["", "02-30 10:00:00", "0229 10:00:00.5", "2026-02-29 10:00:00", "2026-04-21 09:16:61", "APR 21 09:16:16"]
    return texts


@pytest.mark.parametrize("fmt", sorted(_shipped_formats()) + list(OTHER_FORMATS))
def test_a_stamp_is_read_as_strptime_reads_it(fmt: str) -> None:
    # GIVEN a format and the texts a log may hold where its stamp is
    for text in _texts(fmt):
        # WHEN the text is read with the format
        # THEN the time is strptime's, and there is none where strptime raises
        assert read_stamp(text, fmt) == _strptime(text, fmt), (text, fmt)
