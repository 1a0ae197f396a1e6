"""`logphase analyze` end to end through the CLI: formats, modes, exit codes and bad inputs."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path
from typing import Any

import pytest
import zstandard

from tests.conftest import FIXTURES, REALWORLD, run_cli

STARTING = (
    "[2025-06-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2025-06-01 10:00:00 TP1] Init torch distributed begin.\n"
    "[2025-06-01 10:00:20 TP0] Init torch distributed ends. mem usage=0.50 GB\n"
    "[2025-06-01 10:00:20 TP1] Init torch distributed ends. mem usage=0.50 GB\n"
    "[2025-06-01 10:00:21 TP0] Load weight begin. avail mem=78.00 GB\n"
    "[2025-06-01 10:00:21 TP1] Load weight begin. avail mem=78.00 GB\n"
)


@pytest.fixture
def starting_log(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    path.write_text(STARTING)
    return path


def test_live_log_within_budget_is_progressing_exit_5(starting_log: Path) -> None:
    # GIVEN a log whose last progress is 60 s before "now"
    result = run_cli("analyze", "--as-of", "2025-06-01 10:01:21", str(starting_log), "--format", "json")
    report = json.loads(result.stdout)
    # THEN it is still starting
    assert (result.exit_code, report["verdict"], report["phase"]) == (5, "progressing", "weight_load")
    assert report["silence_s"] == 60.0


def test_live_log_silent_past_its_budget_is_stalled_exit_4(starting_log: Path) -> None:
    result = run_cli("analyze", "--as-of", "2025-06-02 10:00:00", str(starting_log), "--format", "json")
    report = json.loads(result.stdout)
    assert (result.exit_code, report["verdict"]) == (4, "stalled")
    assert report["root_cause"]["line"] == 6


def test_stall_after_is_one_budget_for_every_phase_as_watch_has_it(starting_log: Path) -> None:
    # GIVEN the log whose last progress is 60 s before "now" (within the pack's weight_load budget)
    argv = ("analyze", "--as-of", "2025-06-01 10:01:21", str(starting_log), "--format", "json")
    # WHEN analysed with --stall-after 30, and with --stall-after 90
    short, long = run_cli(*argv, "--stall-after", "30"), run_cli(*argv, "--stall-after", "90")
    # THEN 60 s of silence is past the first budget (stalled, exit 4) and within the second (exit 5)
    report = json.loads(short.stdout)
    assert (short.exit_code, report["verdict"], report["budget_s"]) == (4, "stalled", 30.0)
    assert (
        report["reason"] == "no progress for 1m00s in weight_load (budget 30s, --stall-after); last progress at line 6"
    )
    assert (long.exit_code, json.loads(long.stdout)["verdict"]) == (5, "progressing")


def test_post_mortem_log_that_ends_mid_startup_is_stalled(starting_log: Path) -> None:
    result = run_cli("analyze", "--post-mortem", str(starting_log))
    assert result.exit_code == 4
    assert result.stdout.startswith("logphase: STALLED at weight_load — the log ends during weight_load with no error")


def test_stdin_is_post_mortem_by_default(starting_log: Path) -> None:
    result = run_cli("analyze", "-", "--format", "json", input=starting_log.read_bytes())
    report = json.loads(result.stdout)
    assert report["post_mortem"] is True
    assert report["inputs"] == [{"path": "<stdin>", "lines": 6, "bytes": len(STARTING)}]


def test_json_has_every_contract_key(starting_log: Path) -> None:
    result = run_cli("analyze", "--post-mortem", str(starting_log), "--format", "json")
    report = json.loads(result.stdout)
    assert {
        "schema",
        "inputs",
        "system",
        "version",
        "ranks",
        "phase",
        "furthest_phase",
        "verdict",
        "reason",
        "culprit_ranks",
        "root_cause",
        "phases",
        "last_line",
        "baseline",
        "stacks",
    } <= set(report)
    assert report["schema"] == "logphase.analysis/1"
    assert report["ranks"] == ["TP0", "TP1"]
    first = report["phases"][0]
    assert {"phase", "rank", "start_line", "end_line", "start", "end", "seconds", "progress"} <= set(first)
    assert (first["phase"], first["rank"], first["seconds"]) == ("dist_init", "TP0", 20.0)
    assert report["last_line"] == {
        "line": 6,
        "text": STARTING.splitlines()[-1],
        "time": "2025-06-01 10:00:21",
        "path": str(starting_log),
    }


def test_markdown_is_ready_to_paste(starting_log: Path) -> None:
    result = run_cli("analyze", "--post-mortem", str(starting_log), "--format", "markdown")
    assert result.stdout.startswith("**logphase: STALLED** at `weight_load`")
    assert "| phase" in result.stdout and "```" in result.stdout


@pytest.mark.parametrize(
    ("content", "name"),
    [(b"", "empty.log"), (b"\n\n  \n", "blank.log"), (b"just some words\n" * 50, "words.txt")],
)
def test_unrecognisable_input_is_unknown_exit_6(tmp_path: Path, content: bytes, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run_cli("analyze", "--post-mortem", str(path), "--format", "json")
    assert result.exit_code == 6
    assert json.loads(result.stdout)["verdict"] == "unknown"


FR_DUMP = FIXTURES / "real" / "gpu-h200x2" / "fr" / "fr-rank-0"


BINARIES = {
    "random": (os.urandom(300_000), "a binary file, not a text log", "give the log itself"),
    "controls": (b"\x00\x01\x02" * 1000, "a binary file, not a text log", "give the log itself"),
    "gzip-of-binary": (gzip.compress(bytes(range(256)) * 100), "a binary file, not a text log", "give the log itself"),
    "utf-16": (STARTING.encode("utf-16"), "a UTF-16 text file", "iconv -f UTF-16 -t UTF-8"),
    # analyze reads these (tests/test_flight_recorder.py); stacks --from says what they are
    "flight-recorder": (FR_DUMP.read_bytes(), "a torch flight-recorder dump (a binary pickle), not a log", "fr_trace"),
}


@pytest.mark.parametrize(
    ("kind", "command"),
    [
        (kind, command)
        for kind in BINARIES
        for command in ("analyze", "stacks")
        if (kind, command) != ("flight-recorder", "analyze")
    ],
)
def test_binary_input_exits_3_with_a_hint(tmp_path: Path, kind: str, command: str) -> None:
    content, message, hint = BINARIES[kind]
    # GIVEN a file that is not a text log
    path = tmp_path / "input.bin"
    path.write_bytes(content)
    # WHEN it is given as a log (analyze) or a dump (stacks --from)
    result = run_cli(command, str(path)) if command == "analyze" else run_cli("stacks", "--from", str(path))
    # THEN exit 3, what the file is, and what to do
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0].startswith(f"logphase: error: {path}: {message}")
    assert hint in result.stderr.splitlines()[1]


def test_a_log_after_a_hole_of_nul_bytes_is_read(tmp_path: Path) -> None:
    # GIVEN a log truncated (copytruncate) while its writer kept its offset: NUL bytes, then lines
    path = tmp_path / "server.log"
    path.write_bytes(b"\x00" * 5000 + STARTING.encode())
    # WHEN analysed THEN it is a log like any other
    result = run_cli("analyze", "--post-mortem", str(path), "--format", "json")
    assert (result.exit_code, json.loads(result.stdout)["verdict"]) == (4, "stalled")


@pytest.mark.slow
def test_a_100_mb_line_is_analysed(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    with path.open("wb") as out:
        out.write(STARTING.encode())
        chunk = b"y" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(b"\n")
    result = run_cli("analyze", "--post-mortem", str(path), "--format", "json")
    report = json.loads(result.stdout)
    assert (result.exit_code, report["verdict"], report["inputs"][0]["lines"]) == (4, "stalled", 7)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "nope.log", "no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_bad_paths_exit_3_with_a_hint(tmp_path: Path, make: object, message: str) -> None:
    result = run_cli("analyze", str(make(tmp_path)))  # type: ignore[operator]
    assert result.exit_code == 3
    assert message in result.stderr.splitlines()[0]
    assert result.stderr.splitlines()[1].startswith("  hint: ")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        (".zst", lambda data: zstandard.ZstdCompressor().compress(data)),
    ],
)
def test_truncated_archive_exits_3_with_a_hint(tmp_path: Path, suffix: str, compress: Any) -> None:
    # GIVEN a compressed log cut in the middle (a download or a copy that stopped)
    data = compress(STARTING.encode() * 5000)
    path = tmp_path / f"cut.log{suffix}"
    path.write_bytes(data[: len(data) // 2])
    # WHEN analysed THEN it says the file ends early (never an empty log read as UNKNOWN)
    result = run_cli("analyze", str(path))
    assert result.exit_code == 3
    assert "ends early or is damaged" in result.stderr


def test_bad_as_of_is_a_usage_error(starting_log: Path) -> None:
    result = run_cli("analyze", "--as-of", "yesterday", str(starting_log))
    assert result.exit_code == 2
    assert "--as-of 'yesterday' is not a time" in result.stderr


def test_stack_dumps_in_a_log_are_merged_under_stacks() -> None:
    # GIVEN the realworld log where SGLang's watchdog printed py-spy dumps of its schedulers
    log = REALWORLD / "stacks" / "064_sglang-pp-watchdog-pyspy-dump.txt"
    # WHEN analysed
    result = run_cli("analyze", "--post-mortem", str(log), "--format", "json")
    report = json.loads(result.stdout)
    # THEN the timeout is the verdict and the dumps are merged under `stacks`
    assert report["verdict"] == "timeout"
    assert report["stacks"]["schema"] == "logphase.stacks/1"
    assert report["stacks"]["summary"].startswith("PP2 TP1 waits in gloo::transport::tcp::UnboundBuffer::waitRecv")


@pytest.mark.parametrize("mode", ["plain", "baseline", "record"])
def test_stack_dumps_in_a_log_stay_under_stacks_with_baseline_and_record(mode: str, tmp_path: Path) -> None:
    # GIVEN a log where SGLang's watchdog printed py-spy dumps: TP0-TP2 in all_reduce inside the
    # CUDA-graph capture, TP3 still loading weights (the stacks fixture's own labels)
    log = FIXTURES / "stacks" / "sglang-watchdog-pyspy-tp4.log"
    extra = {
        "plain": [],
        "baseline": ["--baseline", str(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log")],
        "record": ["--record", "--db", str(tmp_path / "runs.db")],
    }[mode]
    # WHEN analysed, plain or against a baseline or recorded (the latter two once lost `stacks`: null)
    result = run_cli("analyze", "--post-mortem", str(log), *extra, "--format", "json")
    report = json.loads(result.stdout)
    # THEN the dumps are judged under `stacks`: TP3 is the one behind
    assert report["stacks"]["summary"] == (
        "TP0, TP1, TP2 wait in all_reduce (torch.distributed) inside capture_one_batch_size (cuda_graph_runner.py); "
        "TP3 is still in load_file (safetensors/torch.py) (weight_load) (waiting: idle when sampled) — TP3 is behind"
    )
    assert report["stacks"]["culprit_ranks"] == ["TP3"]


@pytest.mark.parametrize("command", [["analyze"], ["stacks", "--from"]])
def test_a_device_that_never_ends_is_refused(command: list[str]) -> None:
    # GIVEN /dev/zero (endless NUL bytes: read as a log it would never end)
    result = run_cli(*command, "/dev/zero")
    # THEN exit 3 at once, saying what it is
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "logphase: error: /dev/zero: a device, not a log (it never ends)",
        "  hint: give a log file, or pipe a stream in: COMMAND | logphase analyze -",
    ]
