"""The fast scan keeps the matcher's clock: a day that turns at midnight under time-of-day stamps (SGLang
0.3's `[23:17:01 TP7]`) turns where reading every line turns it."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from logphase import scan as scanning
from logphase.logs.fast import lines
from logphase.logs.fast.templates import learn_template
from logphase.packs import PackSet
from tests.conftest import Generated, Written
from tests.test_prefilter import report

CLOCK = re.compile(r"^\[(\d\d):(\d\d):(\d\d)(?= |\])", re.MULTILINE)


def sglang_03(generated: Generated) -> str:
    """A generated SGLang 0.3 TP8 serving log: `[HH:MM:SS TPn]` stamps, 8 ranks and access lines interleaved."""
    [log] = generated("sglang-0.3", 1_000_000, 5)
    return log.read_text()


def restamped(text: str, clock: Any) -> str:
    """The log with the time of day of its n-th stamped line replaced by clock(n, old time)."""
    count = iter(range(10**9))

    def stamp(found: re.Match[str]) -> str:
        old = timedelta(hours=int(found[1]), minutes=int(found[2]), seconds=int(found[3]))
        new = clock(next(count), old) % timedelta(days=1)
        seconds = int(new.total_seconds())
        return f"[{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

    return CLOCK.sub(stamp, text)


def test_a_time_of_day_template_knows_where_its_hour_is(packs: PackSet) -> None:
    # GIVEN an SGLang 0.3.0 line THEN its template's stamp is the time of day, its hour at byte 1
    line = "[23:17:01 TP7] Decode batch, #running-req: 3, #token: 1"
    template = learn_template(packs, line.encode(), line)
    assert template is not None
    assert (template.stamp, template.hour, template.rank) == ("time", 1, "TP7")


@pytest.mark.slow
def test_a_log_crossing_midnight_in_a_steady_run_is_read_the_same(
    packs: PackSet, generated: Generated, written: Written, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a generated SGLang 0.3 serving log moved in time so that midnight falls in the middle
    # of its serving (8 ranks' decode batches, access lines: steady runs the fast path summarises)
    def midnight() -> bytes:
        text = sglang_03(generated)
        stamps = [timedelta(hours=int(h), minutes=int(m), seconds=int(s)) for h, m, s in CLOCK.findall(text)]
        middle = stamps[len(stamps) * 2 // 3]
        return restamped(text, lambda _, old: old - middle).encode()

    log = written("midnight.log", midnight)
    assert "[23:59:59 " in log.read_text() and "[00:00:00 " in log.read_text()
    # WHEN it is analysed with and without the fast path
    plain, fast = (report(log, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same (the crash is dated the next day in both), and the matcher saw
    # under a fifth of the lines past the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - scanning.feed.YEAR_LOOKAHEAD) * 5 < stats.lines


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [lines.CHUNK_BYTES, 64 << 10], ids=["one-chunk", "64-KiB-chunks"])
def test_a_log_of_two_midnights_and_a_noon_is_read_the_same(
    chunk: int,
    packs: PackSet,
    generated: Generated,
    written: Written,
    scanner: str,
    captured: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the same log with its n-th stamp at 20:00 + 30 s × n: 44 hours, two midnights and a noon
    # between them, each inside a steady run; read in one chunk, or in chunks of 64 KiB
    monkeypatch.setattr(lines, "CHUNK_BYTES", chunk)
    log = written(
        "two-days.log",
        lambda: restamped(sglang_03(generated), lambda n, _: timedelta(hours=20, seconds=30 * n)).encode(),
    )
    # WHEN it is analysed with and without the fast path
    plain, fast = (report(log, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same: the crash two days after the start
    assert fast == plain
    assert f'"time": "{(datetime(2029, 12, 31) + timedelta(days=2)):%Y-%m-%d}' in plain
    # (an hour is 120 lines here, and the matcher reads the first lines of each: logs/fast/hours.py)
    assert captured[-1].stats.emitted < captured[-1].stats.lines


@pytest.mark.slow
@pytest.mark.parametrize("every", [40, 3000], ids=["near", "far"])
def test_a_year_less_log_takes_its_year_from_a_dated_line_far_back_as_reading_every_line_does(
    every: int, packs: PackSet, generated: Generated, written: Written, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a generated vLLM V1 serving log (`INFO 03-02 09:14:13 …`: no year) with a line of Python
    # logging's default stamp (`2025-03-02 09:14:13,000 - INFO - …`: a year) every `every` lines, so the
    # nearest dated line before a line the matcher reads is near, or thousands of lines back
    def dated() -> bytes:
        [bare] = generated("vllm-v1", 1_000_000, 11)
        out = []
        for number, line in enumerate(bare.read_text().splitlines()):
            if number % every == 0:
                out.append(f"2025-03-02 09:14:{number % 60:02d},000 - INFO - step {number} checkpointed")
            out.append(line)
        return ("\n".join(out) + "\n").encode()

    log = written(f"dated-every-{every}.log", dated)
    # WHEN it is analysed with and without the fast path
    plain, fast = (report(log, packs, fast=fast) for fast in (False, True))
    # THEN the reports are the same, its year-less lines dated 2025 as the dated lines say
    assert fast == plain
    assert '"time": "2025-03-02' in plain and '"time": "2029-' not in plain
    assert captured[-1].stats.emitted * 5 < captured[-1].stats.lines
