"""Stamps without a year or a date get them from the log or from the reference time, never a future."""

from __future__ import annotations

from datetime import datetime

import pytest

from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import Line
from logphase.packs import PackSet, load_packs

PACKS = load_packs()


def _time_of(packs: PackSet, text: str, reference: datetime) -> datetime | None:
    matcher = SourceMatcher(packs, reference)
    matcher.match_line(Line(number=1, text=text, source=0))
    return matcher.last_time


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        # vLLM's `%m-%d %H:%M:%S` read on 1 December 2026: three weeks ahead is last year's
        ("12-23 23:34:23", datetime(2025, 12, 23, 23, 34, 23)),
        ("11-30 08:00:00", datetime(2026, 11, 30, 8, 0, 0)),
        # a few hours ahead is another time zone or clock, not last year
        ("12-01 20:00:00", datetime(2026, 12, 1, 20, 0, 0)),
    ],
)
def test_year_less_stamp_is_never_read_as_a_future_date(stamp: str, expected: datetime) -> None:
    # GIVEN a vLLM line with a year-less stamp, read on 2026-12-01 12:00
    text = f"INFO {stamp} [gpu_worker.py:298] Available KV cache memory: 52.37 GiB"
    # WHEN its time is completed
    # THEN the year is the latest one that does not put the line after the reading (+ one day)
    assert _time_of(PACKS, text, datetime(2026, 12, 1, 12, 0, 0)) == expected


def test_year_less_stamp_takes_the_year_of_the_log() -> None:
    # GIVEN a log whose earlier line carried a year (SGLang's full stamp), then year-less vLLM lines
    # (two: one line days after the last is not believed until another confirms its clock)
    matcher = SourceMatcher(PACKS, datetime(2026, 12, 1, 12, 0, 0))
    matcher.match_line(Line(1, "[2024-12-20 10:00:00] server_args=ServerArgs(model_path='x')", 0))
    matcher.match_line(Line(2, "INFO 12-23 23:34:22 [gpu_worker.py:298] Available KV cache memory: 52.37 GiB", 0))
    matcher.match_line(Line(3, "INFO 12-23 23:34:23 [gpu_worker.py:298] Available KV cache memory: 52.37 GiB", 0))
    # THEN the year-less lines are in that year, however far from the reading they are
    assert matcher.last_time == datetime(2024, 12, 23, 23, 34, 23)
