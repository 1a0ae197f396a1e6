"""Clocks: a log whose stamps run ahead of the time it is judged at (another host's clock, another
time zone, --as-of before the log) never gives a negative duration; silence is measured per clock."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_json

LIVE_LOGS = [
    FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log",
    FIXTURES / "logs" / "vllm" / "v1-compose-hang-piecewise-capture.log",
]


def _end_and_progress(log: Path) -> tuple[datetime, float]:
    """The log's last stamp and its own silence (last stamp − last progress), post-mortem."""
    report = run_json("analyze", "--post-mortem", str(log))[1]
    return datetime.fromisoformat(report["last_line"]["time"]), report["silence_s"]


@pytest.mark.parametrize("log", LIVE_LOGS, ids=lambda p: p.stem)
def test_a_log_eight_hours_ahead_is_judged_on_its_own_clock(tmp_path: Path, log: Path) -> None:
    # GIVEN a live log stamped in UTC, read on a machine whose clock is 8 h behind; written 10 s ago
    end, own_silence = _end_and_progress(log)
    now = end - timedelta(hours=8)
    copy = tmp_path / log.name
    shutil.copy(log, copy)
    written = (now - timedelta(seconds=10)).timestamp()
    os.utime(copy, (written, written))
    # WHEN judged live as of that machine's now
    _, report = run_json("analyze", "--live", "--as-of", now.strftime("%Y-%m-%d %H:%M:%S"), str(copy))
    # THEN silence is the log's own silence plus the 10 s since the last write, never negative
    assert report["silence_s"] == pytest.approx(own_silence + 10, abs=1)
    assert "the log's clock is 8h00m ahead of the time it is judged at" in report["reason"]


@pytest.mark.parametrize(
    "log",
    [LIVE_LOGS[0], FIXTURES / "logs" / "sglang" / "eagle3-tp8-hung-cuda-graph-247.log"],
    ids=lambda p: p.stem,
)
def test_as_of_before_the_log_gives_no_negative_age(log: Path) -> None:
    # GIVEN --as-of a year before the lines of a log whose stamps carry their year (SGLang's: a
    # year-less stamp such as vLLM's is dated by --as-of itself)
    end, _ = _end_and_progress(log)
    as_of = (end - timedelta(days=365)).strftime("%Y-%m-%d %H:%M:%S")
    # WHEN judged live
    _, report = run_json("analyze", "--live", "--as-of", as_of, str(log))
    # THEN no duration is negative, and the reason says the clocks disagree
    assert report["silence_s"] is None or report["silence_s"] >= 0
    assert "ahead of the time it is judged at" in report["reason"]
