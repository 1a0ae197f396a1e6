"""Files that change while they are read: a plain file is read up to the size it had when it was opened
(with and without --jobs, fast path or not), and a note says it grew; one truncated meanwhile is
reported, never waited on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from logphase.jobs import Jobs
from logphase.logs.reader import changes, open_sources, read_lines
from logphase.packs import PackSet
from logphase.pipeline import Options, report
from tests.conftest import FIXTURES, REPO

LOG = (FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log").read_bytes()
AS_OF = datetime(2026, 4, 21, 9, 30)
# What a live server keeps writing: lines of the same shape as the log's own
MORE = b"[2026-04-21 09:30:00 TP0] Decode batch. #running-req: 1, #token: 151, token usage: 0.00\n"
JOBS = {"one": Jobs(1), "fast-two-jobs": Jobs(2, min_bytes=0, range_bytes=1 << 14)}


def _big(folder: Path) -> Path:
    # the log, then decode lines: big enough for the workers to take ranges of it
    path = folder / "live.log"
    path.write_bytes(LOG + MORE * 4000)
    return path


@pytest.mark.parametrize("jobs", JOBS, ids=str)
def test_a_file_that_grew_after_it_was_opened_is_read_as_it_was(tmp_path: Path, packs: PackSet, jobs: str) -> None:
    # GIVEN a log opened for reading, then grown by a writer (a crash, even: it must not be read)
    path = _big(tmp_path)
    size = path.stat().st_size
    lines = (LOG + MORE * 4000).count(b"\n")
    sources = open_sources([str(path)], packs=packs)
    with path.open("ab") as out:
        out.write(MORE * 1000 + b"[2026-04-21 09:31:00 TP0] Scheduler hit an exception: RuntimeError: boom\n")
    # WHEN analysed
    analysed = report(sources, packs, Options(as_of=AS_OF, post_mortem=True, jobs=JOBS[jobs], fast=jobs != "one"))
    # THEN the report covers the lines it had when opened, and a note says it grew and by how much
    assert analysed.inputs[0].lines == lines
    assert analysed.inputs[0].bytes == size
    assert analysed.verdict.value == "ready"
    grown = path.stat().st_size - size
    assert f"live.log grew by {grown:,} bytes while it was read" in " ".join(analysed.notes)
    assert f"the {size:,} bytes it had when the read began" in " ".join(analysed.notes)


def test_a_file_truncated_while_read_is_said_and_its_read_ends(tmp_path: Path, packs: PackSet) -> None:
    # GIVEN a log of several read chunks, opened, then cut to a third while it is read
    path = tmp_path / "live.log"
    path.write_bytes(LOG + MORE * 50_000)
    size = path.stat().st_size
    total = (LOG + MORE * 50_000).count(b"\n")
    (source,) = open_sources([str(path)], packs=packs)
    lines = read_lines(source)
    first = [next(lines) for _ in range(10)]
    os.truncate(path, size // 3)
    # WHEN the read goes on THEN it ends (at what the file still holds), and the note says so
    rest = list(lines)
    assert first[0].number == 1 and 10 < rest[-1].number < total
    note = changes(source)
    assert note is not None
    assert note.startswith(f"{path} was truncated while it was read ({size:,} bytes when opened, {size // 3:,} now)")


def test_an_unchanged_file_has_no_note(tmp_path: Path, packs: PackSet) -> None:
    path = _big(tmp_path)
    (source,) = open_sources([str(path)], packs=packs)
    assert sum(1 for _ in read_lines(source)) > 0
    assert changes(source) is None


_WRITER = """
import sys, time
line = sys.argv[2].encode()
with open(sys.argv[1], "ab") as out:
    while True:
        out.write(line * 200)  # ~2 MB/s in small writes, as a server logs
        out.flush()
        time.sleep(0.01)
"""


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_analyze_of_a_log_a_writer_keeps_growing_ends(tmp_path: Path, jobs: str) -> None:
    # GIVEN a 35 MB log a writer keeps growing at ~2 MB/s
    path = tmp_path / "live.log"
    with path.open("wb") as out:
        out.write(LOG)
        for _ in range((40 << 20) // (len(MORE) * 10000)):
            out.write(MORE * 10000)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), MORE.decode()])
    try:
        time.sleep(0.3)
        # WHEN analysed (with workers or not) THEN it ends and says the file grew (the timeout is a
        # guard, not a timing: before, each small write gave the reader one more chunk to read, and
        # it chased the end of the file until the writer stopped)
        done = subprocess.run(
            [sys.executable, "-m", "logphase", "analyze", str(path), "--jobs", jobs, "--post-mortem"],
            capture_output=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO), "LOGPHASE_JOBS_MIN_BYTES": "0"},
        )
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 0, done.stderr.decode()[-500:]
    assert b"live.log grew by" in done.stdout
