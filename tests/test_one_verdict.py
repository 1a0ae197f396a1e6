"""One verdict for every command: analyze, watch (fed the whole log) and bundle judge the same lines
the same way — verdict, confidence and exit code — over every fixture and real-world log."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from logphase.errors import ExitCode
from logphase.logs.reader import SNIFF_BYTES, sniff_bytes
from tests.conftest import FIXTURES, REALWORLD, run_cli, run_json

LOGS = sorted(
    [
        *(p for p in (FIXTURES / "logs").glob("*/*.log") if not p.name.endswith(".part.log")),
        *(REALWORLD / "logs").glob("*.log"),
    ]
)
# What the exit code of each verdict class is (docs/design.md §6), for the uvicorn case below.
UNKNOWN = int(ExitCode.UNKNOWN)


def _analyze(log: Path) -> tuple[int, dict[str, Any]]:
    return run_json("analyze", "--post-mortem", str(log))


def _watch(log: Path) -> dict[str, Any]:
    """`cat LOG | logphase watch - --format jsonl`: its outcome event."""
    result = run_cli("watch", "-", "--format", "jsonl", input=log.read_bytes())
    events = [json.loads(line) for line in result.stdout.splitlines()]
    outcome: dict[str, Any] = events[-1]
    assert outcome["event"] == "outcome" and outcome["exit_code"] == result.exit_code, result.stdout
    return outcome


def _bundle(log: Path, folder: Path) -> dict[str, Any]:
    """`logphase bundle LOG --post-mortem`: the analysis.json inside."""
    out = folder / "b.tar.gz"
    result = run_cli("bundle", str(log), "--post-mortem", "--no-redact", "-o", str(out))
    assert result.exit_code == 0, result.output
    with tarfile.open(out) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/analysis.json"))
        data = archive.extractfile(member)
        assert data is not None
        analysis: dict[str, Any] = json.load(io.TextIOWrapper(data, encoding="utf-8"))
        return analysis


@pytest.mark.slow  # three commands over every corpus log: CI's tier, not the quick one
@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_analyze_watch_and_bundle_give_one_verdict(log: Path, tmp_path: Path) -> None:
    # GIVEN a whole log, as a finished log is given to each command
    code, analysed = _analyze(log)
    # WHEN watch is fed it on stdin (the input ends: a finished log) and bundle packs it
    watched = _watch(log)
    bundled = _bundle(log, tmp_path)
    # THEN the three judge it alike: one verdict, one confidence, one exit code — but for an export listed newest
    # first, which analyze and bundle read in time order and watch, following a stream that arrives in its order
    # (logs/follow.py), reads as it comes: the same verdict and exit code, its cause (so its confidence) may differ
    newest_first = sniff_bytes(log.read_bytes()[:SNIFF_BYTES]).newest_first
    assert (watched["verdict"], watched["exit_code"]) == (analysed["verdict"], code), watched["text"]
    if not newest_first:
        assert watched["confidence"] == analysed["confidence"], (watched["text"], analysed["reason"])
    assert (bundled["verdict"], bundled["confidence"]) == (analysed["verdict"], analysed["confidence"])


def test_access_lines_alone_are_no_ready_for_any_command(tmp_path: Path) -> None:
    # GIVEN two uvicorn access lines, which any web app writes: no server of ours said it was up
    log = tmp_path / "access.log"
    log.write_text(
        'INFO:     127.0.0.1:50412 - "GET /health HTTP/1.1" 200 OK\n'
        'INFO:     127.0.0.1:50418 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    # WHEN analysed post-mortem, and watched live with a deadline
    analysed = run_cli("analyze", "--post-mortem", str(log))
    watched = run_cli("watch", str(log), "--timeout", "5", "--format", "jsonl")
    outcome = json.loads(watched.stdout.splitlines()[-1])
    # THEN both say ready with low confidence, and neither exits 0: a script must not take it for ready
    assert (analysed.exit_code, watched.exit_code) == (UNKNOWN, UNKNOWN)
    assert (outcome["verdict"], outcome["confidence"], outcome["exit_code"]) == ("ready", "low", UNKNOWN)


def test_a_last_line_entered_at_the_inputs_end_is_judged_by_watch(tmp_path: Path) -> None:
    # GIVEN c10's socket warning (a glog stamp without a year) and then, last, vLLM's engine error quoting gloo's
    # enforce failure: the feed enters the last event only when the input ends (the stamp it waited to believe)
    log = tmp_path / "gloo.log"
    log.write_text(
        "[W128 10:40:03.598159139 socket.cpp:752] [c10d] The client socket cannot be initialized to connect to "
        "[node-1]:58367 (errno: 97 - Address family not supported by protocol).\n"
        "ERROR 01-28 10:40:03 engine.py:366] [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
        "ifa != nullptr. Unable to find address for: eth0\n"
    )
    # WHEN analysed, and watched on stdin
    code, analysed = _analyze(log)
    watched = _watch(log)
    # THEN both say crashed, with the exit code of a problem
    assert (analysed["verdict"], code) == ("crashed", ExitCode.PROBLEM)
    assert (watched["verdict"], watched["exit_code"]) == ("crashed", ExitCode.PROBLEM)
