"""The envelope clock of the fast path: docker's and CRI's stamps compared by their bytes as their times
compare, and a CRI log whose stamps go back within a second read as reading every line reads it."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.loggen import write_logs
from logphase import scan as scanning
from logphase.logs.envelope import parse_stamp
from logphase.logs.fast import lines
from logphase.logs.fast.envelope_clock import stamp_key
from logphase.packs import PackSet, load_packs
from tests.paste.wrappers import line_times
from tests.test_prefilter import report


def rfc3339_nano(when: datetime, nanos: int, *, trimmed: bool) -> str:
    """A stamp as Go writes it in UTC: RFC3339Nano trims the fraction's trailing zeros (and the `.` of
    a whole second), the fixed form keeps nine digits."""
    fraction = f"{nanos:09d}"
    if trimmed:
        fraction = fraction.rstrip("0")
    return f"{when:%Y-%m-%dT%H:%M:%S}" + (f".{fraction}" if fraction else "") + "Z"


def parsed(stamp: str) -> datetime:
    time = parse_stamp(stamp, ("rfc3339",))
    assert time is not None
    return time


def first_latest(values: list[datetime] | list[bytes]) -> int:
    """The index of the first of the greatest values (the line the clock reads among equals)."""
    return max(range(len(values)), key=values.__getitem__)


STAMPS = st.tuples(
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2099, 12, 31)).map(
        lambda when: when.replace(microsecond=0)
    ),
    st.one_of(
        st.integers(0, 999_999_999),
        st.sampled_from([0, 1, 10, 100_000_000, 735_700_000, 735_790_160, 735_700_001, 999_999_999]),
    ),
    st.booleans(),
)


@given(st.lists(STAMPS, min_size=1, max_size=12))
def test_the_keys_of_utc_stamps_sort_as_their_times(stamps: list[tuple[datetime, int, bool]]) -> None:
    # GIVEN stamps in UTC as docker and containerd write them: nanoseconds, the fraction trimmed of its
    # trailing zeros or not, some in the same second, some equal to the microsecond
    texts = [rfc3339_nano(when, nanos, trimmed=trimmed) for when, nanos, trimmed in stamps]
    times = [parsed(text) for text in texts]
    # WHEN they are keyed by their bytes
    keys = [stamp_key(text.encode()) for text in texts]
    # THEN each key is the ISO text of the time the envelope reads, and the first greatest key is the
    # first greatest time
    assert [key.decode() if key is not None else None for key in keys] == [
        f"{time:%Y-%m-%dT%H:%M:%S.%f}" for time in times
    ]
    assert first_latest([key for key in keys if key is not None]) == first_latest(times)


def test_a_trimmed_fraction_sorts_before_a_longer_one_of_the_same_digits() -> None:
    # GIVEN stamps whose plain bytes sort against their times (`Z` after the digits, `.` after `Z`... )
    earlier, later = b"2025-03-08T12:29:57.7357Z", b"2025-03-08T12:29:57.73579016Z"
    whole, tenth = b"2025-03-08T12:29:57Z", b"2025-03-08T12:29:57.1Z"
    assert earlier > later and whole > tenth  # the bytes as written
    # WHEN keyed THEN the keys sort as the times
    assert stamp_key(earlier) == b"2025-03-08T12:29:57.735700"
    assert stamp_key(later) == b"2025-03-08T12:29:57.735790"
    assert stamp_key(whole) == b"2025-03-08T12:29:57.000000"
    assert stamp_key(tenth) == b"2025-03-08T12:29:57.100000"


@pytest.mark.parametrize("stamp", [b"2025-03-08T12:29:13+0000", b"2025-03-08T12:29:13.5+02:00", b"2025-03-08 12:29:13"])
def test_a_stamp_with_an_offset_or_no_zone_has_no_key(stamp: bytes) -> None:
    # GIVEN a stamp in another zone than UTC's `Z` (or none) THEN it is read as a time, never by its bytes
    assert stamp_key(stamp) is None


def cri_backwards(bare: Path, *, docker: bool) -> bytes:
    """The bare log in CRI's file (or under `docker logs -t`), each line stamped in the second it was
    written at a random nanosecond (a second's stamps go back and forth, as the bench's `cri` shape's
    do), the fraction trimmed as RFC3339Nano writes it; a tenth of them on a whole or round fraction."""
    rng = random.Random(17)
    text = bare.read_text().splitlines()
    out = []
    for line, when in zip(text, line_times(text, load_packs(), rng), strict=True):
        nanos = rng.choice([0, 500_000_000, 120_000_000]) if rng.random() < 0.1 else rng.randrange(10**9)
        stamp = rfc3339_nano(when.replace(microsecond=0), nanos, trimmed=True)
        out.append(f"{stamp} {line}" if docker else f"{stamp} {rng.choice(['stdout', 'stderr'])} F {line}")
    return "".join(f"{line}\n" for line in out).encode()


@pytest.mark.slow
@pytest.mark.parametrize("wrapper", ["cri", "docker-t"])
@pytest.mark.parametrize("chunk", [lines.CHUNK_BYTES, 64 << 10], ids=["one-chunk", "64-KiB-chunks"])
def test_stamps_that_go_back_within_a_second_keep_the_clock_of_every_line(
    wrapper: str, chunk: int, packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a generated 1 MB SGLang TP8 serving log (NCCL lines take their time from the envelope)
    # under CRI or `docker logs -t`, its stamps going back and forth within each second, trimmed;
    # the fast path reads all of it past the first line, in one chunk or in chunks of 64 KiB (most
    # of them without a line to read: their clock's peaks are handed over)
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    monkeypatch.setattr(lines, "CHUNK_BYTES", chunk)
    [bare] = write_logs(tmp_path / "bare.log", 1_000_000, seed=11, shape="sglang-0.5")
    wrapped = tmp_path / f"{wrapper}.log"
    wrapped.write_bytes(cri_backwards(bare, docker=wrapper == "docker-t"))
    # WHEN it is analysed with and without the fast path
    plain, fast = (report(wrapped, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same
    assert fast == plain


@pytest.mark.slow
def test_an_envelope_more_than_a_second_behind_keeps_the_clock_of_every_line(
    packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the same log with every tenth envelope stamp a whole second behind its neighbours, read by
    # the fast path past its first line
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    [bare] = write_logs(tmp_path / "bare.log", 1_000_000, seed=11, shape="sglang-0.5")
    data = cri_backwards(bare, docker=False).decode().splitlines()
    for index in range(0, len(data), 10):
        stamp, rest = data[index].split(" ", 1)
        behind = datetime.fromisoformat(stamp[:19]) - timedelta(seconds=1)
        data[index] = f"{behind:%Y-%m-%dT%H:%M:%S}{stamp[19:]} {rest}"
    wrapped = tmp_path / "behind.log"
    wrapped.write_text("".join(f"{line}\n" for line in data))
    # WHEN it is analysed with and without the fast path THEN the reports are the same
    assert report(wrapped, packs, fast=True) == report(wrapped, packs, fast=False)


@pytest.mark.slow
def test_hours_of_lines_timed_by_the_envelope_keep_the_clock_of_every_line(
    packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a generated 1 MB SGLang TP8 log with two thirds NCCL lines (their time is the envelope's)
    # under CRI, its n-th line written at 2 s x n: hours in steps of seconds, so that the latest
    # envelope time among the lines a summary skips is often more than an hour past the clock
    # (the clock's outlier rule: logs/stamps.py), read by the fast path past its first line
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    [bare] = write_logs(tmp_path / "bare.log", 1_000_000, seed=11, shape="nccl-storm")
    start = datetime(2026, 3, 2, 9, 0, 0)
    own = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    out = []
    for number, line in enumerate(bare.read_text().splitlines()):
        when = start + timedelta(seconds=2 * number)
        line = own.sub(f"[{when:%Y-%m-%d %H:%M:%S}", line)
        out.append(f"{rfc3339_nano(when, 1000 * number % 10**9, trimmed=False)} stdout F {line}")
    wrapped = tmp_path / "hours.log"
    wrapped.write_text("".join(f"{line}\n" for line in out))
    assert (len(out) * 2) // 3600 >= 3
    # WHEN it is analysed with and without the fast path THEN the reports are the same
    assert report(wrapped, packs, fast=True) == report(wrapped, packs, fast=False)
