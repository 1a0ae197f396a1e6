"""A paste cut inside a traceback's first line (issue 25's verdict misses read as a kind: a crash read as a stall):
CPython began printing an exception (`Traceback (most recent call last):`, multiprocessing's `Process <name>:`) and
the excerpt ends there. An exception was printed: crashed, its text beyond the excerpt, the cut line the cause only
where nothing else is. Written from CPython's formats (Lib/traceback.py, Lib/multiprocessing/process.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from logphase.logs.matcher import cut_header
from logphase.packs.loading import load_packs
from tests.conftest import judge_text
from tests.equivalence import reports


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "paste.log")


def _root(report: dict[str, object]) -> dict[str, object]:
    root = report["root_cause"]
    assert isinstance(root, dict)
    return root


def _against(report: dict[str, object]) -> list[str]:
    evidence = report["evidence"]
    assert isinstance(evidence, dict)
    return [str(item) for item in evidence["against"]]


def test_a_named_process_header_cut_before_its_colon_ends_a_crashed_start(tmp_path: Path) -> None:
    # GIVEN a Ray-backed start whose gloo group came up, then multiprocessing's header of a process the program
    # named, cut before its colon where the paste ends
    report = _judge(
        tmp_path,
        "2026-03-13 10:15:06,517 INFO worker.py:1810 -- Connecting to existing Ray cluster at address: "
        "10.0.0.4:6379...\n"
        "2026-03-13 10:15:06,604 INFO worker.py:2013 -- Connected to Ray cluster.\n"
        "(RayWorkerWrapper pid=2951) [Gloo] Rank 0 is connected to 7 peer ranks. Expected number of connected peer "
        "ranks is : 7\n"
        "Process engine_main_proc\n",
    )
    # THEN crashed, the cut header the cause, and the confidence says its exception is not in the log
    assert report["verdict"] == "crashed"
    assert (_root(report)["line"], _root(report)["text"]) == (4, "Process engine_main_proc")
    assert any("inside a traceback's first line (line 4)" in doubt for doubt in _against(report))


def test_a_traceback_line_cut_to_its_first_word_ends_a_crashed_server(tmp_path: Path) -> None:
    # GIVEN an SGLang server serving, then an aborted request and the first letters of a traceback
    report = _judge(
        tmp_path,
        "[2025-02-19 11:45:37 TP0] Prefill batch. #new-seq: 1, #new-token: 1, #cached-token: 0, cache hit rate: "
        "0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0\n"
        '[2025-02-19 11:45:37] INFO:     10.0.0.9:43128 - "GET /health_generate HTTP/1.1" 200 OK\n'
        "[2025-02-19 11:45:46] Abort request 0f2c1a\n"
        "Traceba\n",
    )
    # THEN crashed, the cut line the cause
    assert report["verdict"] == "crashed"
    assert (_root(report)["line"], _root(report)["text"]) == (4, "Traceba")


def test_a_cut_header_after_a_stated_failure_leaves_that_failure_the_cause(tmp_path: Path) -> None:
    # GIVEN a TensorRT-LLM engine build that failed (its own error lines), then `Traceback` cut at the end
    report = _judge(
        tmp_path,
        "[11/10/2023-06:30:40] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: "
        "OutOfMemory (no further information)\n"
        "[11/10/2023-06:30:40] [TRT-LLM] [E] Engine building failed, please check the error log.\n"
        "Traceback\n",
    )
    # THEN crashed with the stated failure the cause, not the cut header
    assert report["verdict"] == "crashed"
    assert _root(report)["line"] != 3


def test_only_a_cut_header_at_the_end_is_one() -> None:
    # GIVEN lines that are whole headers, words, or too short to tell
    for text in ("Traceback (most recent call last):", "Tra", "Process finished", "Process 88693", "Processing"):
        # THEN none is read as a cut header
        assert cut_header(text) is None, text
    # AND the cut ones name the header they start
    assert cut_header("Trace") == "Traceback (most recent call last):"
    assert cut_header("Process SpawnProcess-3") == "Traceback (most recent call last):"


def test_a_header_cut_mid_log_is_not_the_end(tmp_path: Path) -> None:
    # GIVEN `Trace` in the middle of a paste, a vLLM engine's lines after it
    report = _judge(
        tmp_path,
        "INFO 12-20 10:25:00 llm_engine.py:234] Initializing an LLM engine (v0.6.4) with config: "
        "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=2\n"
        "Trace\n"
        "INFO 12-20 10:25:52 model_runner.py:1099] Loading model weights took 14.9888 GB\n",
    )
    # THEN no crash: the log ends in the weights
    assert report["verdict"] == "stalled"


def test_the_fast_path_reads_a_cut_header_ending_a_long_log_as_the_plain_path_does(tmp_path: Path) -> None:
    # GIVEN a long log (past the head the plain path reads alone) of capture bar lines, ending in `Trace`
    bar = "Capturing CUDA graph shapes:  {pct:>2}%|#         | {done}/700 [00:{sec:02d}<00:30,  2.05it/s]"
    lines = [
        "INFO 12-20 10:25:00 llm_engine.py:234] Initializing an LLM engine (v0.6.4) with config: "
        "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=2",
        "INFO 12-20 10:25:52 model_runner.py:1099] Loading model weights took 14.9888 GB",
    ]
    lines += [bar.format(pct=done * 100 // 700, done=done, sec=done % 60) for done in range(1, 700)]
    lines.append("Trace")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs(check_examples=False)
    # WHEN read by the fast path and by the plain path
    fast = reports.fast([log], packs)
    # THEN the same report: crashed at the cut header
    assert fast == reports.plain([log], packs)
    report = json.loads(fast)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 702)
