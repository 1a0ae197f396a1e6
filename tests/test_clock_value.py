"""The Clock value: each step makes a new clock and leaves the one it was given as it was."""

from __future__ import annotations

from datetime import datetime, timedelta

from logphase.logs.clock import Clock
from logphase.logs.stamps import StampBelief
from logphase.packs.model import PrefixFields

REFERENCE = datetime(2025, 3, 10, 12, 0, 0)


def time_of_day(hour: int, minute: int, second: int) -> PrefixFields:
    """SGLang 0.3's `[23:17:01 TP0]`: a time of day, no date (the date part is parse_time's placeholder)."""
    return PrefixFields(
        time=datetime(1900, 1, 1, hour, minute, second), time_has_year=False, time_has_date=False, prefixes=("p",)
    )


def test_a_time_of_day_past_midnight_is_the_next_days_on_a_new_clock() -> None:
    # GIVEN a clock that read `23:59:58` on 8 March 2025 (the date the log's first dated line gave)
    belief = StampBelief()
    start = Clock(REFERENCE, year=2025, first_date=(datetime(2025, 3, 8, 23, 0, 0), True))
    before, _ = start.read(1, time_of_day(23, 59, 58), None, belief)
    # WHEN a line stamped `00:00:01` is read
    after, time = before.read(2, time_of_day(0, 0, 1), None, belief)
    # THEN the line is on 9 March, the new clock shows it and is on that day, and the clock before is unchanged
    assert time == datetime(2025, 3, 9, 0, 0, 1)
    assert (after.time, after.day) == (datetime(2025, 3, 9, 0, 0, 1), datetime(2025, 3, 9).date())
    assert (before.time, before.day) == (datetime(2025, 3, 8, 23, 59, 58), datetime(2025, 3, 8).date())


def test_an_unstamped_line_takes_its_envelopes_time_on_the_logs_clock() -> None:
    # GIVEN a line stamped 12:00:05 in a `docker logs -t` envelope stamped 11:00:05 (the envelope's clock an
    # hour behind the log's)
    belief = StampBelief()
    own = PrefixFields(time=datetime(2025, 3, 8, 12, 0, 5), prefixes=("p",))
    clock, _ = Clock(REFERENCE).read(1, own, datetime(2025, 3, 8, 11, 0, 5), belief)
    # WHEN a line without a stamp of its own is read in an envelope stamped 11:00:10
    after, time = clock.read(2, PrefixFields(), datetime(2025, 3, 8, 11, 0, 10), belief)
    # THEN it is at 12:00:10: the envelope's time moved by the offset the line with both showed
    assert clock.envelope_offset == timedelta(hours=1)
    assert time == after.time == datetime(2025, 3, 8, 12, 0, 10)


def test_a_line_without_a_stamp_or_an_envelope_leaves_the_clock_itself() -> None:
    # GIVEN a clock that read a stamped line
    belief = StampBelief()
    clock, _ = Clock(REFERENCE).read(1, PrefixFields(time=datetime(2025, 3, 8, 12, 0, 5)), None, belief)
    # WHEN a line with neither a stamp nor an envelope is read
    after, time = clock.read(2, PrefixFields(), None, belief)
    # THEN the line has no time of its own and the clock is the very same value
    assert time is None
    assert after is clock
