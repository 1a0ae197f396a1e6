"""Clocks: a log whose stamps run ahead of the time it is judged at (another host's clock, another
time zone, --as-of before the log) never gives a negative duration; silence is measured per clock; one
line of another clock decides nothing, on the fast path as on the plain one; a node whose clock is
hours off is read on the first node's."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.loggen import write_logs
from logphase import pipeline
from logphase import scan as scanning
from logphase.errors import UsageError
from logphase.logs.reader import open_sources
from logphase.packs import load_packs
from logphase.report.formats.json import JsonFormat
from tests.conftest import FIXTURES, REALWORLD, run_cli, run_json

PACKS = load_packs()

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


# The middle of a vLLM V1 worker's traceback as its ERROR lines print it (multiproc_executor logs each of its
# lines; Python 3.13 marks the call with carets), the paste cut inside the next record: stamped lines,
# none of them a step's progress.
WORKER_FRAMES = (
    "".join(
        f"(Worker_TP3 pid=69231) ERROR 02-13 15:54:32 [multiproc_executor.py:863] {text}\n"
        for text in [
            "    self._capture_cudagraphs(",
            "    ~~~~~~~~~~~~~~~~~~~~~~~~^",
            "        cudagraph_runtime_mode=runtime_mode,",
            "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "    )",
            "    ^",
            '  File "/opt/py/vllm/v1/worker/gpu_model_runner.py", line 4102, in _capture_cudagraphs',
        ]
    )
    + "(Worker_TP3 pid=69231) ERROR 02-13\n"
)


@pytest.mark.parametrize("months", [-10, 10], ids=["written-before", "written-after"])
def test_a_post_mortem_log_without_progress_measures_no_silence_by_its_files_time(tmp_path: Path, months: int) -> None:
    # GIVEN a stamped excerpt with no progress line, its file written months away from its stamps
    log = tmp_path / "worker.log"
    log.write_text(WORKER_FRAMES, encoding="utf-8")
    written = (datetime(2026, 2, 13, 15, 54) + timedelta(days=30 * months)).timestamp()
    os.utime(log, (written, written))
    # WHEN judged post-mortem
    _, report = run_json("analyze", "--post-mortem", "--as-of", "2026-02-13 16:00:00", str(log))
    # THEN no silence is measured: the file's time is not on the log's clock
    assert report["silence_s"] is None
    assert "before the end" not in report["reason"]


# --- one line of another clock ----------------------------------------------------------------------

AS_OF = datetime(2030, 1, 1)
# The stamp formats of the logs below: SGLang's `[%Y-%m-%d %H:%M:%S TPn]`, vLLM's year-less
# `INFO %m-%d %H:%M:%S`, torch's glog `[E601 10:29:14.729306087 ...` (month without its zero).
ISO = (re.compile(r"(?<=^\[)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "%Y-%m-%d %H:%M:%S")
VLLM = (re.compile(r"(?<=INFO )\d\d-\d\d \d\d:\d\d:\d\d"), "%m-%d %H:%M:%S")
GLOG = (re.compile(r"(?<=\]:\[[IWEF])\d{3,4} \d\d:\d\d:\d\d(?=\.)"), "%m%d %H:%M:%S")
GENERATED = {"sglang-0.4": ISO, "sglang-0.5": ISO, "vllm-v1": VLLM}  # bench/shapes.py's serving logs
FIXTURE_LOGS = {
    "sglang/eagle3-tp8-hung-cuda-graph-247.log": ISO,
    "vllm/v1-shm-broadcast-stuck-weight-load.log": VLLM,
    "torch/nccl-watchdog-timeout-rank4-lagging.log": GLOG,
}
OUTLIERS = {"a year ahead": timedelta(days=365), "a day behind": timedelta(days=-1), "8 h ahead": timedelta(hours=8)}
NEGATIVE_DURATION = re.compile(r"(?<![\w.:-])-\d+(?:s\b|m\d\ds|h\d\dm|d \d+h)")


def _stamp(line: str, stamp: tuple[re.Pattern[str], str]) -> datetime | None:
    pattern, fmt = stamp
    found = pattern.search(line)
    return datetime.strptime(found[0], fmt) if found else None


def _restamped(line: str, stamp: tuple[re.Pattern[str], str], at: datetime) -> str:
    pattern, fmt = stamp
    found = pattern.search(line)
    assert found is not None
    text = at.strftime(fmt)
    text = text[len(text) - len(found[0]) :]  # glog writes March as `3`, not `03`
    return line[: found.start()] + text + line[found.end() :]


def _with_outlier(lines: list[str], stamp: tuple[re.Pattern[str], str], shift: timedelta) -> tuple[list[str], int]:
    """The log with one line more, past its first third: a copy of a stamped line, stamped `shift` from
    the latest stamp before it (the log's clock there). Its line number comes with it."""
    middle = next(i for i in range(len(lines) // 3, len(lines)) if _stamp(lines[i], stamp) is not None)
    clock = max(t for line in lines[: middle + 1] if (t := _stamp(line, stamp)) is not None)
    outlier = _restamped(lines[middle], stamp, clock + shift)
    return [*lines[: middle + 1], outlier, *lines[middle + 1 :]], middle + 2


def _report(paths: list[Path], *, fast: bool) -> str:
    options = pipeline.Options(as_of=AS_OF, post_mortem=True, fast=fast)
    return JsonFormat().analysis(pipeline.report(open_sources([str(p) for p in paths], packs=PACKS), PACKS, options))


def _cases() -> list[tuple[str, str, timedelta]]:
    logs = [*GENERATED, *FIXTURE_LOGS]
    return [
        (log, outlier, shift)
        for log in logs
        for outlier, shift in OUTLIERS.items()
        # a stamp without a year cannot be a year ahead
        if not (outlier == "a year ahead" and (GENERATED | FIXTURE_LOGS)[log] is not ISO)
    ]


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path reads past the first lines (not only past the head read in full). The head still
    holds the first line with a year of each log (the torch fixture's first `[rank0]:2025-06-01 …` is
    its line 5): the year of the year-less lines before it is read there, as in a real head."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 5)


@pytest.mark.slow
@pytest.mark.parametrize(("log", "outlier", "shift"), _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_one_line_of_another_clock_decides_nothing(
    tmp_path: Path, short_head: None, log: str, outlier: str, shift: timedelta
) -> None:
    # GIVEN a log (a generated serving log of one format, or a fixture), and the same log with one
    # line more past its first third: a copy of a stamped line, stamped a year ahead, a day behind or 8 h
    # ahead of the log's clock there
    stamp = (GENERATED | FIXTURE_LOGS)[log]
    original = tmp_path / "original.log"
    if log in GENERATED:
        write_logs(original, 300_000, seed=7, shape=log)
    else:
        shutil.copy(FIXTURES / "logs" / log, original)
    lines = original.read_text().split("\n")
    skewed_lines, number = _with_outlier(lines, stamp, shift)
    skewed = tmp_path / "skewed.log"
    skewed.write_text("\n".join(skewed_lines))
    # WHEN both are analysed, the skewed one on the fast path (analyze's default) and reading every line
    fast, plain = _report([skewed], fast=True), _report([skewed], fast=False)
    report, before = json.loads(fast), json.loads(_report([original], fast=True))
    # THEN both paths give the same report
    assert fast == plain
    # AND its verdict, silence and end time are those of the log without the line
    assert (report["verdict"], report["silence_s"]) == (before["verdict"], before["silence_s"])
    assert report["last_line"]["time"] == before["last_line"]["time"]
    # AND a note names the line and how far its clock is from the log's
    away = {"a year ahead": "365d 0h ahead", "a day behind": "1d 0h behind", "8 h ahead": "8h00m ahead"}[outlier]
    note = next(note for note in report["notes"] if "another clock's stamp" in note)
    assert note.startswith(f"{skewed}: 1 line is stamped over 1h00m away from the log's clock")
    assert f"line {number} (" in note and note.endswith(f", {away})")


def test_a_silence_is_believed_once_a_second_line_shows_the_new_clock(tmp_path: Path) -> None:
    # GIVEN a SGLang log hung in CUDA-graph capture, and the same log with two lines three hours after
    # its last: TP0's and TP1's `Capture cuda graph end` (the first is held until the second shows
    # its clock)
    original = FIXTURES / "logs" / "sglang" / "eagle3-tp8-hung-cuda-graph-247.log"
    lines = original.read_text().rstrip("\n").split("\n")
    last = max(t for line in lines if (t := _stamp(line, ISO)) is not None)
    later = (last + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M:%S")
    ended = [
        f"[{later} TP{rank}] Capture cuda graph end. Time elapsed: 10881.00 s. mem usage=4.28 GB. avail mem=9.70 GB."
        for rank in (0, 1)
    ]
    woke = tmp_path / "woke.log"
    woke.write_text("\n".join([*lines, *ended]) + "\n")
    # WHEN analysed on both paths
    fast, plain = _report([woke], fast=True), _report([woke], fast=False)
    report = json.loads(fast)
    # THEN the lines' clock is the log's: it ends three hours later, TP0 progressed then (its line dated
    # by its own stamp, as if believed at once), and no stamp was set aside
    assert fast == plain
    assert report["last_line"]["time"] == later
    tp0 = next(state for state in report["rank_states"] if state["rank"] == "TP0")
    assert (tp0["last_progress_line"], tp0["last_progress"]) == (len(lines) + 1, later)
    assert not [note for note in report["notes"] if "another clock's stamp" in note]


def test_a_node_whose_clock_is_eight_hours_ahead_is_read_on_the_first_nodes_clock(tmp_path: Path) -> None:
    # GIVEN a two-node TP16 startup, a log per node, and the same with node 1's clock 8 h ahead (its
    # host in another time zone): every stamp of its log 8 h later
    node0 = FIXTURES / "logs" / "sglang" / "two-node-tp16-node0.log"
    node1 = FIXTURES / "logs" / "sglang" / "two-node-tp16-node1.part.log"
    ahead = tmp_path / "node1.log"
    ahead.write_text(
        "\n".join(
            _restamped(line, ISO, t + timedelta(hours=8)) if (t := _stamp(line, ISO)) else line
            for line in node1.read_text().split("\n")
        )
    )
    # WHEN both pairs are analysed, the skewed one on both paths
    fast, plain = _report([node0, ahead], fast=True), _report([node0, ahead], fast=False)
    report, same_clock = json.loads(fast), json.loads(_report([node0, node1], fast=True))
    # THEN both paths agree, and phases, verdict, silence and end are those of the pair on one clock
    assert fast == plain

    def timing(analysis: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(p["phase"], p["rank"], p["start"], p["end"], p["seconds"]) for p in analysis["phases"]]

    assert timing(report) == timing(same_clock)
    assert (report["verdict"], report["silence_s"]) == (same_clock["verdict"], same_clock["silence_s"])
    assert report["last_line"]["time"] == same_clock["last_line"]["time"]
    # AND a note says the clocks disagree, and by how much
    assert (
        f"{ahead}: its clock is 8h00m ahead of {node0}'s (their ranks joined the distributed init 8h00m "
        f"apart): its times are read on {node0}'s clock"
    ) in report["notes"]


@pytest.mark.parametrize("output", ["table", "markdown", "html"])
def test_as_of_before_the_log_shows_no_negative_duration_in_any_format(output: str) -> None:
    # GIVEN --as-of a year before the lines of a hung SGLang log
    log = FIXTURES / "logs" / "sglang" / "eagle3-tp8-hung-cuda-graph-247.log"
    end, _ = _end_and_progress(log)
    as_of = (end - timedelta(days=365)).strftime("%Y-%m-%d %H:%M:%S")
    # WHEN judged live, in each format a person reads
    text = run_cli("analyze", "--live", "--as-of", as_of, "--format", output, str(log)).stdout
    # THEN no duration in it is negative
    assert text and not NEGATIVE_DURATION.findall(text)


def test_a_logger_a_day_behind_the_others_is_read_on_their_clock() -> None:
    # GIVEN realworld 001: SGLang stamps its lines `[2025-03-08 12:29:04]`, the vLLM logger running
    # inside it `INFO 03-07 12:29:02` (line 2), `INFO 03-07 12:29:08` (lines 4-7): the same moments a day
    # behind
    log = REALWORLD / "logs" / "001_sglang-qwq32b-tp4-ready.log"
    # WHEN analysed on both paths
    fast, plain = _report([log], fast=True), _report([log], fast=False)
    report = json.loads(fast)
    # THEN the main process's launch lasts from line 2 (12:29:02 on SGLang's clock) to uvicorn's start
    # (line 75, 12:29:29): 27 s, not a day
    assert fast == plain
    launch = next(p for p in report["phases"] if p["phase"] == "launch" and p["rank"] is None)
    assert (launch["start"], launch["end"], launch["seconds"]) == ("2025-03-08 12:29:02", "2025-03-08 12:29:29", 27.0)
    # AND a note says which lines run on another clock
    assert (
        f"{log}: lines stamped by vllm.prefix.log run on a clock 1d 0h behind the log's other lines: read on theirs"
    ) in report["notes"]


def test_a_logger_that_opens_the_log_on_another_clock_is_read_on_the_others(tmp_path: Path) -> None:
    # GIVEN a torchrun log whose agent's glog lines (`W0603 16:40:02.000000 771 run.py:793]`, the first
    # four) are stamped in UTC, 8 h behind its ranks' Python logging lines (`[rank1]:2025-06-03
    # 16:40:08,709 - INFO -`, local time): the other clock opens the log, no line of the log's clock is before it
    source = (FIXTURES / "logs" / "torch" / "gloo-hang-dist-init.log").read_text().split("\n")
    utc = [re.sub(r"^W0603 16:", "W0603 08:", line) for line in source]
    assert utc[:4] != source[:4]
    log = tmp_path / "torchrun-agent-utc.log"
    log.write_text("\n".join(utc))
    # WHEN analysed on both paths
    fast, plain = _report([log], fast=True), _report([log], fast=False)
    report, original = (
        json.loads(fast),
        json.loads(_report([FIXTURES / "logs" / "torch" / "gloo-hang-dist-init.log"], fast=True)),
    )
    # THEN the agent's lines are read on the ranks' clock: the phases are those of the log on one clock
    assert fast == plain

    def unplaced(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{key: value for key, value in phase.items() if key != "path"} for phase in phases]

    assert unplaced(report["phases"]) == unplaced(original["phases"])
    # AND a note says which lines run on another clock
    assert any("run on a clock 8h00m behind the log's other lines" in note for note in report["notes"])


def test_a_relaunch_hours_later_in_a_second_log_is_no_skewed_clock(tmp_path: Path) -> None:
    # GIVEN a two-node TP16 startup's node-0 log, and a second log of the same node (TP0-TP7 again)
    # started eight hours later: a relaunch written to a rotated file
    node0 = FIXTURES / "logs" / "sglang" / "two-node-tp16-node0.log"
    relaunch = tmp_path / "node0-relaunch.log"
    relaunch.write_text(
        "\n".join(
            _restamped(line, ISO, t + timedelta(hours=8)) if (t := _stamp(line, ISO)) else line
            for line in node0.read_text().split("\n")
        )
    )
    # WHEN both are analysed as one run
    # THEN no clock is moved to merge them: they are two runs (issue 26), refused with the gap in words
    with pytest.raises(UsageError) as refused:
        _report([node0, relaunch], fast=True)
    gap = r"7h5\dm"  # eight hours less node 0's own few minutes
    assert re.fullmatch(
        f"{re.escape(str(relaunch))} begins {gap} after {re.escape(str(node0))} ends: two runs, not one",
        refused.value.message,
    )
