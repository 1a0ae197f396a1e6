"""`watch` on a finished file (one that does not grow) judges silence by the log's own clock, as `analyze` does,
not by the file's mtime (issue 30): both give the same verdict on the same file, whenever it was copied or touched."""

from __future__ import annotations

import os
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path

from logphase.errors import ExitCode
from tests.conftest import FIXTURES, run_cli

# SGLang TP8 (expected.json): the weight_load bar stopped at 57/163 (line 56) long ago, by its stamps (2026-04-25)
SLOW = FIXTURES / "logs" / "sglang" / "slow-weight-load-live.log"


def test_a_copied_finished_log_is_stalled_for_watch_as_for_analyze(tmp_path: Path) -> None:
    # GIVEN the fixture copied now: a fresh mtime, and stamps months old
    log = tmp_path / "server.log"
    shutil.copy(SLOW, log)
    os.utime(log)
    # WHEN analyze judges it live, and watch follows it (with a timeout far inside the bar's 2-minute bound)
    analysed = run_cli("analyze", str(log), "--format", "line")
    started = time.monotonic()
    watched = run_cli("watch", str(log), "--timeout", "20", "--interval", "0.1")
    # THEN both say stalled in weight_load at once, exit 4: the log's clock says the bar stopped months ago
    assert analysed.stdout.split(" | ")[:2] == ["stalled", "weight_load"]
    assert (analysed.exit_code, watched.exit_code) == (ExitCode.PROBLEM, ExitCode.PROBLEM)
    said = [line.split("] ", 1)[1] for line in watched.stdout.splitlines()]
    assert said[-1].startswith("stalled: the weight_load bar stopped at 57/163 (line 56): still for 2")
    assert time.monotonic() - started < 15


def test_an_old_mtime_does_not_stall_a_log_whose_stamps_say_it_moved_just_now(tmp_path: Path) -> None:
    # GIVEN a log whose last progress is stamped 20 s ago (SGLang's `[stamp rank] message` lines), but whose
    # file was last modified an hour ago (restored from a backup, copied with its times)
    now = datetime.now().replace(microsecond=0)
    stamp = [(now - timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S") for s in (40, 30, 20)]
    log = tmp_path / "server.log"
    log.write_text(
        f"[{stamp[0]} TP0] Init torch distributed begin.\n"
        f"[{stamp[1]} TP0] Init torch distributed ends. mem usage=0.10 GB\n"
        f"[{stamp[2]} TP0] Load weight begin. avail mem=78.00 GB\n"
    )
    hour_ago = time.time() - 3600
    os.utime(log, (hour_ago, hour_ago))
    # WHEN analyze judges it live, and watch follows it for 1 s
    analysed = run_cli("analyze", str(log), "--format", "line")
    watched = run_cli("watch", str(log), "--timeout", "1", "--interval", "0.1")
    # THEN both say it is still starting in weight_load (exit 5): 20 s is within the budget, whatever the mtime
    assert analysed.stdout.split(" | ")[:2] == ["progressing", "weight_load"]
    assert (analysed.exit_code, watched.exit_code) == (ExitCode.STARTING, ExitCode.STARTING)
    assert not any("stalled" in line for line in watched.stdout.splitlines())
