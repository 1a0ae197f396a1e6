"""`--jobs`: workers scan ranges of a big log ahead of the walk; the report is the same for any number and split."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import queue
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.loggen import write_logs
from logphase import pipeline
from logphase import scan as scanning
from logphase.cli.common import jobs_from
from logphase.jobs import Jobs
from logphase.logs.fast import FastLines, ranges
from logphase.logs.fast import lines as fast_lines
from logphase.logs.fast.ranges import line_local
from logphase.logs.reader import open_sources
from logphase.packs import PackSet
from logphase.report.formats.json import JsonFormat
from logphase.scan.files import PLAIN_LINES
from tests.conftest import FIXTURES, REALWORLD, run_cli
from tests.equivalence.sampling import dealt, drawn

AS_OF = datetime(2030, 1, 1)
LOGS = sorted(p for p in (FIXTURES / "logs").glob("*/*.log") if not p.name.endswith(".part.log"))
LOGS += sorted((REALWORLD / "logs").glob("*.log"))
# Ranges small enough that every fixture is cut in many, and cuts fall everywhere: inside
# tracebacks, dumps, steady runs, right after blank lines (a prime, so they drift against lines).
SMALL_RANGE = 211

TRACEBACK = """Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 1845, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 702, in event_loop_overlap
    result = self.run_batch(batch)
RuntimeError: CUDA error: an illegal memory access was encountered
"""
# faulthandler's dump: a blank line before each thread (a cut right after it may split a match
# of the dump trigger `^\s{4}\S` that spans the blank line), indented frames.
DUMP = """Fatal Python error: Segmentation fault

Thread 0x00007f3a1c7fe700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 607 in wait

Current thread 0x00007f3a9d4b1740 (most recent call first):
  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", line 801 in synchronize
"""
# Short lines, then lines the trigger's indent class may reach across their newline.
SHORT_LINES = "\n   x = 1\n\u00e9\n X\n\n\n\n\nY\nab\n  z\n"


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher reads the first YEAR_LOOKAHEAD lines in full; one line leaves the rest of
    every fixture to the fast path (and so to the workers)."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)


@pytest.fixture
def walk_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk waits for the workers' answer to every range queued to them, instead of scanning
    the ranges no worker started yet itself: on a small log it would often be first, and the
    workers' answers go unread."""
    monkeypatch.setattr(ranges, "WALK_TAKES", False)


@pytest.fixture
def oracles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The range oracles a scan gives its FastLines, to count the pieces the workers answered;
    and every window they answer checked against the walk's own scan of it (the same lines,
    not only the same report: a line too many would change no report, only the speed)."""
    made: list[Any] = []
    original = FastLines.__init__
    answer = ranges.RangeOracle.line_starts

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self.ranges is not None:
            made.append(self.ranges)

    def checked(
        self: Any, scan: Any, buf: bytes, offset: int, start: int, end: int, chunk_end: int, plain: Any = None
    ) -> list[int]:
        found = answer(self, scan, buf, offset, start, end, chunk_end, plain)
        assert found == scan.line_starts(buf, start, end, chunk_end), (offset + start, offset + end)
        return found

    monkeypatch.setattr(FastLines, "__init__", init)
    monkeypatch.setattr(ranges.RangeOracle, "line_starts", checked)
    yield made


def report(paths: list[Path], packs: PackSet, jobs: Jobs) -> str:
    options = pipeline.Options(as_of=AS_OF, post_mortem=True, jobs=jobs)
    return JsonFormat().analysis(pipeline.report(open_sources([str(p) for p in paths]), packs, options))


_ALONE: dict[tuple[tuple[Path, ...], int], str] = {}


def expected_alone(logs: list[Path], packs: PackSet) -> str:
    """The report of one process, computed once per session for the same logs and head."""
    key = (tuple(logs), scanning.feed.YEAR_LOOKAHEAD)
    if key not in _ALONE:
        _ALONE[key] = report(logs, packs, Jobs(1))
    return _ALONE[key]


def split(count: int, range_bytes: int) -> Jobs:
    """`count` jobs at any size (the threshold forced down), ranges of `range_bytes`."""
    return Jobs(count, min_bytes=0, range_bytes=range_bytes)


def of_2029(stamp: re.Match[str]) -> datetime:
    """A `MM-DD HH:MM:SS` stamp's groups as a time of 2029."""
    month, day, hour, minute, second = map(int, stamp.groups())
    return datetime(2029, month, day, hour, minute, second)


def rolled_over_midnight(log: Path) -> None:
    """Shift a vLLM V0 log's year-less stamps (`INFO 03-02 09:14:13`) so that its middle line is
    at the turn of the year: the matcher dates the later lines in the next year."""
    text = log.read_text(encoding="utf-8")
    stamp = re.compile(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
    found = list(stamp.finditer(text))
    middle = found[len(found) // 2]
    shift = datetime(2029, 12, 31, 23, 59, 59) - of_2029(middle)

    def moved(match: re.Match[str]) -> str:
        return (of_2029(match) + shift).strftime("%m-%d %H:%M:%S")

    log.write_text(stamp.sub(moved, text), encoding="utf-8")


def with_incidents(log: Path) -> None:
    """Put a traceback, a faulthandler dump and short lines at a quarter, half and three quarters."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    quarter = len(lines) // 4
    for at, text in ((3 * quarter, SHORT_LINES), (2 * quarter, DUMP), (quarter, TRACEBACK)):
        lines.insert(at, text)
    log.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Generated serving logs of 1 MB: SGLang 0.5 with a traceback, a dump and short lines in
    it; vLLM V0 across midnight on New Year's Eve; SGLang 0.5 as one file per rank, in containerd's
    CRI files (trimmed fractions) and under journald (a unit named `sglang`, a factor)."""
    folder = tmp_path_factory.mktemp("served")
    logs = {
        shape: write_logs(folder / f"{shape}.log", 1_000_000, seed=13, shape=shape)
        for shape in ("sglang-0.5", "vllm-v0", "per-rank", "cri", "journald")
    }
    with_incidents(logs["sglang-0.5"][0])
    rolled_over_midnight(logs["vllm-v0"][0])
    return logs


# --- the report is the same with any number of jobs -------------------------------------------------


# Every corpus log by one process and by three (cut in ranges of 211 bytes), in any layout: the
# equivalence harness (tests/equivalence/test_same_report.py), sampled. Each log inside a busy log:


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """300 kB of a busy SGLang 0.5 server, as bytes: long enough for the scan to learn its line
    templates and settle, so that the workers answer for the ranges after its first few."""
    log = write_logs(tmp_path_factory.mktemp("busy") / "busy.log", 300_000, seed=29, shape="sglang-0.5")[0]
    return log.read_bytes()


# Twelve corpus logs each run, drawn afresh (the run's seed: tests/equivalence/sampling.py), instead of
# the 44 of every run before: every log is read with three jobs each run by the equivalence harness, and
# inside a busy log over runs (LOGPHASE_TEST_FULL=1: all of them).
INSIDE_BUSY = drawn("jobs-inside-busy", LOGS, 12)


# The chunks the fast path reads a log in (8 MB), cut to 16 kB: a coloured log spliced into the busy log is
# scanned without its colour codes in its own chunks (fast/lines.py, `_whole_lines`), and the workers answer
# for the chunks after the scan's state settles again (a chunk's first window under a new state is the
# walk's: `ranges.SETTLE_SHARE`; the busy log's state settles at ~140 kB, its coloured guest's at the chunk after it).
SMALL_CHUNK = 1 << 14


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_lines, "CHUNK_BYTES", SMALL_CHUNK)
    monkeypatch.setattr(fast_lines, "READ_BYTES", SMALL_CHUNK // 4)  # the reads a chunk is made of (the reader's 1 MB)


@pytest.fixture
def answered(oracles: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The windows of the walk (file offsets) for which the workers answered a piece or more."""
    windows: list[tuple[int, int]] = []
    line_starts = ranges.RangeOracle.line_starts

    def counted(
        self: Any, scan: Any, buf: bytes, offset: int, start: int, end: int, chunk_end: int, plain: Any = None
    ) -> list[int]:
        before = self.answered
        found = line_starts(self, scan, buf, offset, start, end, chunk_end, plain)
        if self.answered > before:
            windows.append((offset + start, offset + end))
        return found

    monkeypatch.setattr(ranges.RangeOracle, "line_starts", counted)
    return windows


@pytest.mark.slow
@pytest.mark.parametrize("log", INSIDE_BUSY, ids=lambda p: p.name)
def test_every_log_inside_a_busy_log_reads_the_same(
    log: Path,
    packs: PackSet,
    short_head: None,
    busy: bytes,
    tmp_path: Path,
    oracles: list[Any],
    walk_waits: None,
    small_chunks: None,
) -> None:
    # GIVEN a corpus log (drawn this run) in the middle of a busy server's log, cut in
    # ranges of 4099 bytes and read in chunks of 16 kB: the workers scan its tracebacks, dumps and runs
    middle = busy.index(b"\n", 2 * len(busy) // 3) + 1
    spliced = tmp_path / log.name
    spliced.write_bytes(busy[:middle] + log.read_bytes() + b"\n" + busy[middle:])
    # WHEN it is analysed by one process and by three
    shared = report([spliced], packs, split(3, 4099))
    # THEN the reports are the same, and the workers answered for some of it
    assert shared == report([spliced], packs, Jobs(1))
    assert oracles[-1].answered > 0


@pytest.mark.slow
def test_a_coloured_log_leaves_the_workers_the_chunks_after_it(
    packs: PackSet,
    short_head: None,
    busy: bytes,
    tmp_path: Path,
    oracles: list[Any],
    walk_waits: None,
    small_chunks: None,
    answered: list[tuple[int, int]],
) -> None:
    # GIVEN vLLM's log with a terminal's colours on every line, spliced into a busy server's log at a third
    # (the chunks of 16 kB it is in scanned without the colour codes), cut in ranges of 4099 bytes
    coloured = (FIXTURES / "logs" / "vllm" / "v1-ansi-color-ready.log").read_bytes()
    assert b"\x1b[" in coloured
    third = busy.index(b"\n", len(busy) // 3) + 1
    spliced = tmp_path / "coloured-inside-busy.log"
    spliced.write_bytes(busy[:third] + coloured + busy[third:])
    after = third + len(coloured) + 2 * SMALL_CHUNK  # in a chunk wholly after the coloured log's
    # WHEN it is analysed by one process and by three
    shared = report([spliced], packs, split(3, 4099))
    # THEN the reports are the same, and the workers answered for windows of the chunks after the coloured one
    assert shared == report([spliced], packs, Jobs(1))
    assert any(low >= after for low, _ in answered)


@pytest.mark.slow
def test_a_log_coloured_on_every_line_is_the_workers_too(
    packs: PackSet,
    short_head: None,
    busy: bytes,
    tmp_path: Path,
    oracles: list[Any],
    walk_waits: None,
    small_chunks: None,
    answered: list[tuple[int, int]],
) -> None:
    # GIVEN the busy server's log with a terminal's colours on every line (each chunk of 16 kB scanned without
    # them), cut in ranges of 4099 bytes
    lines = busy.split(b"\n")
    coloured = tmp_path / "coloured-busy.log"
    coloured.write_bytes(b"\n".join(b"\x1b[36m" + line + b"\x1b[0m" if line else line for line in lines))
    # WHEN it is analysed by one process and by three
    shared = report([coloured], packs, split(3, 4099))
    # THEN the reports are the same, and the workers answered for windows of it (each answer the lines the
    # walk's own scan of that window gives: `oracles`)
    assert shared == report([coloured], packs, Jobs(1))
    assert answered


@pytest.mark.slow
def test_a_blank_line_before_a_ranges_first_line_leaves_the_walk_that_piece_only(
    packs: PackSet,
    short_head: None,
    busy: bytes,
    tmp_path: Path,
    oracles: list[Any],
    walk_waits: None,
    answered: list[tuple[int, int]],
) -> None:
    # GIVEN a busy server's log with a blank line at two thirds, right before the first line of a range of
    # 4099 bytes (a cut a match of the dump trigger `^\s{4}\S` may span: a seam)
    middle = busy.index(b"\n", 2 * len(busy) // 3) + 1
    seam = (middle // 4099 + 2) * 4099  # the range's first byte
    filler = b"# " + b"x" * (seam - middle - 4) + b"\n"  # a line, then the blank line
    blanked = tmp_path / "blank-line-on-a-seam.log"
    blanked.write_bytes(busy[:middle] + filler + b"\n" + busy[middle:])
    assert blanked.read_bytes()[seam - 3 : seam] == b"x\n\n"
    # WHEN it is analysed by one process and by three
    shared = report([blanked], packs, split(3, 4099))
    # THEN the reports are the same, and the workers answered for pieces of a window the seam is in
    assert shared == report([blanked], packs, Jobs(1))
    assert any(low < seam < high for low, high in answered)


# Each shape cut in ranges of one size, dealt afresh each run so that every size is used (a file per
# rank: 8 of ~125 kB); every shape with every size over runs (LOGPHASE_TEST_FULL=1: each run). Ranges of
# any size: test_where_the_ranges_are_cut_changes_nothing.
SHAPE_RANGES = dealt(
    "jobs-shape-ranges", ["sglang-0.5", "vllm-v0", "per-rank", "cri", "journald"], [4099, 8191, 16_384]
)


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "range_bytes"), SHAPE_RANGES, ids=[f"{s}-{r}" for s, r in SHAPE_RANGES])
def test_generated_logs_read_the_same_and_the_workers_answer(
    shape: str,
    range_bytes: int,
    packs: PackSet,
    served: dict[str, list[Path]],
    oracles: list[Any],
    short_head: None,
    walk_waits: None,
) -> None:
    # GIVEN a 1 MB serving log (a traceback, a dump and short lines in it; across midnight; a
    # file per rank; wrapped), cut in ranges
    logs = served[shape]
    # WHEN it is analysed by one process (once per session) and by three
    alone = expected_alone(logs, packs)
    shared = report(logs, packs, split(3, range_bytes))
    # THEN the reports are the same, and the workers answered for part of the log (a file of at most PLAIN_LINES
    # lines is read plainly, without them: some of the per-rank files)
    assert shared == alone
    assert len(oracles) == sum(log.read_bytes().count(b"\n") > PLAIN_LINES for log in logs)
    assert sum(oracle.answered for oracle in oracles) > 0


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(range_bytes=st.integers(min_value=1024, max_value=250_000), count=st.integers(min_value=2, max_value=4))
def test_where_the_ranges_are_cut_changes_nothing(
    range_bytes: int, count: int, packs: PackSet, served: dict[str, list[Path]]
) -> None:
    # GIVEN the SGLang log with a traceback, a dump and short lines, cut in ranges of any size
    log = served["sglang-0.5"]
    # WHEN it is analysed by 2 to 4 processes
    # THEN the report is that of one process
    assert report(log, packs, split(count, range_bytes)) == expected_alone(log, packs)


@pytest.mark.slow
def test_no_workers_below_the_threshold(packs: PackSet, served: dict[str, list[Path]], oracles: list[Any]) -> None:
    # GIVEN a 1 MB log and the default threshold (tens of MB)
    # WHEN it is analysed with four jobs
    report(served["sglang-0.5"], packs, Jobs(4))
    # THEN no worker was started: the file is read by one process
    assert oracles == []


class IdlePool:
    """A pool whose workers never start a task: every future stays pending."""

    def submit(self, *args: object) -> concurrent.futures.Future[None]:
        return concurrent.futures.Future()

    def shutdown(self, **kwargs: object) -> None:
        pass


@pytest.mark.slow
def test_the_walk_scans_the_ranges_no_worker_started(
    monkeypatch: pytest.MonkeyPatch, packs: PackSet, served: dict[str, list[Path]], oracles: list[Any], short_head: None
) -> None:
    # GIVEN workers that never start the ranges queued to them
    idle = ranges.Workers(IdlePool(), ranges.Claims.shared(multiprocessing.get_context()))  # type: ignore[arg-type]
    monkeypatch.setattr(ranges, "start_workers", lambda count: idle)
    log = served["sglang-0.5"]
    # WHEN the SGLang log is analysed with three jobs, in ranges of 16 kB
    shared = report(log, packs, split(3, 16_384))
    # THEN the walk did not wait for them: it claimed and scanned every range itself, and the
    # report is that of one process
    assert shared == expected_alone(log, packs)
    assert oracles[0].answered == 0
    assert oracles[0].taken > 0


class SlowWorker:
    """One worker, a thread: it starts the queued ranges in order, claiming each as it starts it (one
    the walk claimed first it skips), and answers each `delay` seconds after: slower than the walk,
    as where the scan is most of the work."""

    def __init__(self, claims: ranges.Claims, delay: float) -> None:
        self.claims, self.delay = claims, delay
        self.answers = 0  # ranges it claimed and answered
        self.queue: queue.Queue[tuple[concurrent.futures.Future[Any], Any, tuple[Any, ...]] | None] = queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def submit(self, task: Any, *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.queue.put((future, task, args))
        return future

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            future, task, args = item
            if not future.set_running_or_notify_cancel():
                continue  # the walk cancelled it before it started
            if not self.claims.claim(args[-1]):  # its ticket: the walk claimed it first
                future.set_result(None)
                continue
            time.sleep(self.delay)
            self.answers += 1
            future.set_result(task(*args))

    def shutdown(self, **kwargs: object) -> None:
        self.queue.put(None)


@pytest.mark.slow
def test_the_walk_scans_ranges_ahead_while_it_waits_for_a_worker(
    monkeypatch: pytest.MonkeyPatch, packs: PackSet, served: dict[str, list[Path]], oracles: list[Any], short_head: None
) -> None:
    # GIVEN one worker that answers each range it starts only 50 ms later
    claims = ranges.Claims.shared(multiprocessing.get_context())
    worker = SlowWorker(claims, 0.05)
    slow = ranges.Workers(worker, claims)  # type: ignore[arg-type]
    monkeypatch.setattr(ranges, "start_workers", lambda count: slow)
    log = served["journald"]
    # WHEN the journald log is analysed with two jobs, in ranges of 16 kB
    shared = report(log, packs, split(2, 16_384))
    # THEN while the walk waited for the worker's range it claimed and scanned ranges ahead (each of
    # its answers the lines the walk's own scan of that window gives: `oracles`), the worker answered
    # the ones it claimed, and the report is that of one process. (Whether the walk could use a
    # worker's answer depends on the timing: one given under a scan state the walk has since left
    # is dropped; a loaded machine made every one of them late once. The workers' answers are used
    # in test_generated_logs_read_the_same_and_the_workers_answer.)
    assert shared == expected_alone(log, packs)
    assert oracles[0].stolen > 0
    assert worker.answers > 0


def test_a_range_is_scanned_by_whoever_claims_it_first() -> None:
    # GIVEN the claims the walk shares with its workers
    claims = ranges.Claims.shared(multiprocessing.get_context())
    # WHEN the walk or a worker claims a ticket, and the other claims it after
    # THEN the first claim wins and the second loses
    assert claims.claim(7) is True
    assert claims.claim(7) is False
    # AND a ticket that comes back to the same slot much later is claimed afresh
    assert claims.claim(7 + ranges.SLOTS) is True
    assert claims.claim(7 + ranges.SLOTS) is False
    # AND a claimed ticket leaves the others free
    assert claims.claim(8) is True


# --- what the ranges may rely on -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "local"),
    [
        (rb"Decode batch\.", True),
        (rb"^(?:[^\[\n]|\[[^0-9\n])", True),  # a learned templates' complement: it excludes the newline
        (rb"^[^\n]{0,12}(?:#running-req)", True),
        (rb"^\s{4}\S", False),
        (rb"a\nb", False),
        (rb"[^a]", False),  # a negated class without the newline holds it
        (rb"x[\s,]y", False),
        (rb"(?s)a.b", False),
        (rb"a.b", True),  # `.` stops at a newline
        (b"a\\\nb", False),  # re.escape of a literal that holds a newline
        (rb"[\x00-\x1f]", False),  # a range of bytes that holds it
        (rb"^[\s\x1c-\x1f\x80-\xff]{4}\S", False),  # the dump trigger, as the plan widens it
        (rb"[\x1c-\x1f\x80-\xff]", True),
        (rb"\xe2\x94\x82 +in [\w<>]", True),  # a byte's hex escape is one atom (rich's `│` in UTF-8)
        (rb"a\x0ab", False),  # the newline's
    ],
)
def test_patterns_that_may_span_a_newline_are_told(pattern: bytes, local: bool) -> None:
    # GIVEN a scanner pattern WHEN asked whether a match may hold a newline THEN it says so
    assert line_local(pattern) is local


# --- the CLI ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_jobs_option_gives_the_same_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # GIVEN a log longer than the 500 lines of the head (a shorter one is read plainly, without
    # workers), the threshold forced down and ranges of 211 bytes (the environment)
    log = str(write_logs(tmp_path / "served.log", 100_000, seed=13, shape="sglang-0.5")[0])
    monkeypatch.setenv("LOGPHASE_JOBS_MIN_BYTES", "0")
    monkeypatch.setenv("LOGPHASE_JOBS_RANGE_BYTES", str(SMALL_RANGE))
    # WHEN it is analysed with --jobs 1 and --jobs 2
    one = run_cli("analyze", log, "--post-mortem", "--as-of", "2030-01-01 00:00:00", "--format", "json", "--jobs", "1")
    two = run_cli("analyze", log, "--post-mortem", "--as-of", "2030-01-01 00:00:00", "--format", "json", "--jobs", "2")
    # THEN the reports and exit codes are the same
    assert (two.exit_code, two.output) == (one.exit_code, one.output)
    assert '"verdict"' in one.output


@pytest.mark.parametrize("command", ["analyze", "bundle"])
@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", ""])
def test_a_bad_jobs_value_is_a_usage_error(command: str, value: str) -> None:
    # GIVEN --jobs that is not a whole number of at least 1
    log = str(FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log")
    # WHEN analyze or bundle is run with it
    result = run_cli(command, log, "--jobs", value)
    # THEN it exits 2 with click's usage error naming the option
    assert result.exit_code == 2
    assert "Invalid value for '--jobs'" in result.output


def test_a_bad_threshold_in_the_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN LOGPHASE_JOBS_MIN_BYTES that is not a byte count
    monkeypatch.setenv("LOGPHASE_JOBS_MIN_BYTES", "10M")
    log = str(FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log")
    # WHEN analyze is run
    result = run_cli("analyze", log)
    # THEN it exits 2 and says which variable and what it takes
    assert result.exit_code == 2
    assert "LOGPHASE_JOBS_MIN_BYTES='10M' is not a byte count" in result.output
    assert "whole number" in result.output


def test_workers_that_cannot_start_are_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # GIVEN a system that refuses new processes, and a log over the (lowered) threshold, of more than
    # PLAIN_LINES lines (a shorter one is read plainly, without workers)
    def refuse(*args: object, **kwargs: object) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    monkeypatch.setenv("LOGPHASE_JOBS_MIN_BYTES", "0")
    monkeypatch.setattr(
        os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False
    )  # --jobs is capped at the cores
    log = str(write_logs(tmp_path / "served.log", 400_000, seed=13, shape="sglang-0.5")[0])
    assert Path(log).read_bytes().count(b"\n") > PLAIN_LINES
    # WHEN analyze is run with --jobs 3
    result = run_cli("analyze", log, "--jobs", "3")
    # THEN it exits 3 (cannot run), saying why and that --jobs 1 needs no workers
    assert result.exit_code == 3
    assert "--jobs: cannot start 2 worker processes: [Errno 11] Resource temporarily unavailable" in result.output
    assert "run with --jobs 1" in result.output


def test_the_default_is_the_usable_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a process allowed on 3 of the machine's cores
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    # WHEN --jobs is not given THEN three processes scan, above 32 MB of plain files
    assert jobs_from(None) == Jobs(3, min_bytes=32 << 20, range_bytes=4 << 20)
