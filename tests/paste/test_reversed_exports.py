"""An export listed newest first whose wrapper's stamps were dropped (a console's copy, a quoted paste: realworld
1209, 1200): the log's own lines say the order. Its own stamps going back from line to line throughout, or a
traceback whose carets stand right under a frame's `File` line (CPython prints them under the frame's source line:
Lib/traceback.py), is a log read bottom up: read in reverse, as an export's stamps say it is. Metamorphic: the
reversed paste gives the report of the log in time order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logphase.logs.envelope import sniff
from tests.conftest import run_json

# SGLang's start-up as it logs it (its own `[stamp TP0] ` prefix), in time order
SGLANG = [
    "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB",
    "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB",
    "[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=4.20 GB",
    "[2025-03-08 12:29:22 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=4.10 GB",
]
# a launcher's own logging (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`) as it stops the server it ran:
# uvicorn's shutdown lines (uvicorn/server.py, lifespan/on.py) after its own, several in one millisecond
LAUNCHER = [
    "2026-09-18 15:09:03,397 - __main__ - INFO - Stopping pid 1358 with SIGTERM because it remains",
    "2026-09-18 15:09:03,398 - __main__ - INFO - Stopping pid 1370 with SIGTERM because it remains",
    "2026-09-18 15:09:03,773 - __main__ - DEBUG - Members of process group 1358 at end of stopping are: []",
    "2026-09-18 15:09:03,773 - uvicorn.error - INFO - Waiting for application shutdown.",
    "2026-09-18 15:09:03,773 - uvicorn.error - INFO - Application shutdown complete.",
    "2026-09-18 15:09:03,774 - uvicorn.error - INFO - Finished server process [1]",
]
# vLLM's API server stopped by SIGTERM while it waits on a child during start-up (Python 3.12's carets), every line
# under its `(APIServer pid=1) ` tag
TRACEBACK = [
    "(APIServer pid=1) Traceback (most recent call last):",
    '(APIServer pid=1)   File "/usr/lib/python3.12/subprocess.py", line 1209, in communicate',
    "(APIServer pid=1)     stdout, stderr = self._communicate(input, endtime, timeout)",
    "(APIServer pid=1)                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '(APIServer pid=1)   File "/usr/lib/python3.12/selectors.py", line 415, in select',
    "(APIServer pid=1)     fd_event_list = self._selector.poll(timeout)",
    "(APIServer pid=1)                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py",'
    " line 566, in signal_handler",
    '(APIServer pid=1)     raise KeyboardInterrupt("terminated")',
    "(APIServer pid=1) KeyboardInterrupt: terminated",
]


def _report(tmp_path: Path, name: str, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / name
    log.write_text("".join(line + "\n" for line in lines))
    return run_json("analyze", "--post-mortem", str(log))[1]


def _answer(report: dict[str, Any]) -> tuple[Any, ...]:
    cause = report["root_cause"]
    return (
        report["verdict"],
        report["phase"],
        [span["phase"] for span in report["phases"]],
        cause["text"] if cause else None,
        cause["line"] if cause else None,
    )


@pytest.mark.parametrize(
    ("lines", "quote"),
    [(SGLANG, ""), (LAUNCHER, "> "), (TRACEBACK, "")],
    ids=["own-stamps", "own-stamps-quoted", "traceback-carets"],
)
def test_a_log_pasted_newest_first_gives_the_report_of_the_log_in_time_order(
    tmp_path: Path, lines: list[str], quote: str
) -> None:
    # GIVEN a log, and the same log as a console exports it newest first (in a markdown quote, or not)
    forward = _report(tmp_path, "forward.log", [quote + line for line in lines])
    backward = _report(tmp_path, "backward.log", [quote + line for line in reversed(lines)])
    # THEN both give one answer: verdict, phase, the phases in order, the cause and its line (numbered in time order)
    assert _answer(backward) == _answer(forward)
    # AND the reversed one says it was read in reverse
    assert any("the export lists the newest line first" in note for note in backward["notes"])
    assert not any("the export lists the newest line first" in note for note in forward["notes"])


def test_the_reversed_launchers_log_is_the_servers_clean_end(tmp_path: Path) -> None:
    # GIVEN the launcher's log newest first in a markdown quote
    report = _report(tmp_path, "launcher.log", ["> " + line for line in reversed(LAUNCHER)])
    # THEN uvicorn's `Finished server process` (printed only after a startup that succeeded, its main loop and its
    # shutdown) is its end: finished, the server's readiness the furthest a line proves
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "ready")


def test_the_reversed_traceback_ends_at_vllms_sigterm(tmp_path: Path) -> None:
    # GIVEN vLLM's start-up traceback newest first
    report = _report(tmp_path, "console.log", list(reversed(TRACEBACK)))
    # THEN it failed to start, stopped by SIGTERM (vLLM's init handler's `KeyboardInterrupt: terminated`)
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")
    assert report["root_cause"]["text"] == "(APIServer pid=1) KeyboardInterrupt: terminated"


@pytest.mark.parametrize(
    ("lines", "newest_first"),
    [
        (list(reversed(SGLANG)), True),
        (SGLANG, False),
        # one step back among steps forward (two writers' clocks a moment apart) is no reversed export
        ([SGLANG[0], SGLANG[2], SGLANG[1], SGLANG[3]], False),
        # stamps that are equal throughout tell no order
        ([line.replace("12:29:2", "12:29:1") for line in reversed(SGLANG[:2])], False),
        (list(reversed(TRACEBACK)), True),
        (TRACEBACK, False),
        # a traceback of Python 3.10 (no carets) reversed: its order is not told by carets; nothing is assumed
        ([line for line in reversed(TRACEBACK) if "^" not in line], False),
    ],
)
def test_the_order_is_told_by_the_logs_own_lines(lines: list[str], newest_first: bool) -> None:
    # GIVEN lines with no wrapper WHEN sniffed THEN newest first only where their own stamps go back throughout or
    # a traceback's carets stand under its frame lines
    assert sniff(lines).newest_first is newest_first
