"""faulthandler dumps pasted without their header (issue 25, kind B/D): a run of `  File "x.py", line N in f` frames
under `Current thread 0x…` / `Thread 0x…` is a dump with or without its `Fatal Python error: …` line, placed by its
frames as a whole dump is; what it says of the process rests on what faulthandler prints it for (shared reference
§4.1-4.2): a `Current thread` only in a fatal error's dump and in one a signal asked for (`faulthandler.register`),
never in dump_traceback_later's (`Timeout (…)!`, every thread `Thread 0x…`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from logphase.logs.matcher import CUT_TRACEBACK, SourceMatcher
from logphase.logs.reader import Line
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text

# Frames as CPython's faulthandler writes them (traceback.c dump_frame: two spaces, no comma before `in`)
SGLANG_CAPTURE = (
    '  File "/opt/py/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 41 in capture\n'
    '  File "/opt/py/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 1290 in '
    "init_cuda_graphs\n"
)
VLLM_V0_STEP = (
    '  File "/usr/local/lib/python3.9/dist-packages/vllm/core/scheduler.py", line 1121 in _schedule_prefills\n'
    '  File "/usr/local/lib/python3.9/dist-packages/vllm/core/scheduler.py", line 1284 in schedule\n'
    '  File "/usr/local/lib/python3.9/dist-packages/vllm/engine/llm_engine.py", line 1340 in step\n'
    '  File "/app/serve.py", line 88 in <module>\n'
)
OTHER_THREAD = (
    "Thread 0x00007f2a1c7fe640 (most recent call first):\n"
    '  File "/usr/lib/python3.11/threading.py", line 331 in wait\n'
    '  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap\n'
    "\n"
)


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "dump.log")


def test_a_dump_cut_above_its_current_thread_is_the_fatal_error_it_was_printed_for(tmp_path: Path) -> None:
    # GIVEN a paste that begins at a dump's `Current thread` line (its `Fatal Python error:` header above the cut)
    # and ends in its frames, the innermost an SGLang capture
    report = _judge(tmp_path, "Current thread 0x00007f2a3b4c5740 (most recent call first):\n" + SGLANG_CAPTURE)
    # THEN aborted in cuda_graph, the thread line the cause, and the cut header a doubt
    assert (report["verdict"], report["phase"]) == ("aborted", "cuda_graph")
    assert root_text(report) == "Current thread 0x00007f2a3b4c5740 (most recent call first):"
    assert any("faulthandler dump whose header is not in it" in doubt for doubt in report["evidence"]["against"])


def test_a_dump_cut_inside_an_earlier_thread_is_read_from_its_current_thread(tmp_path: Path) -> None:
    # GIVEN a paste cut inside another thread's frames (its `Thread 0x…` line gone), then the current thread in
    # vLLM V0's scheduler (called only by the engine's step), the last frame cut mid-line
    text = (
        '  File "/usr/lib/python3.9/threading.py", line 312 in wait\n'
        '  File "/usr/lib/python3.9/threading.py", line 973 in _bootstrap\n'
        "\n"
        "Current thread 0x00007fe1d2c3b740 (most recent call first):\n" + VLLM_V0_STEP + '  File "/app/ser'
    )
    report = _judge(tmp_path, text)
    # THEN aborted while serving, the cause the current thread's line (line 4)
    assert (report["verdict"], report["phase"]) == ("aborted", "serving")
    assert report["root_cause"]["line"] == 4


def test_a_dump_the_program_goes_on_after_says_no_failure(tmp_path: Path) -> None:
    # GIVEN a dump faulthandler.register(SIGUSR1) printed (no header; the signalled thread `Current thread`) in an
    # SGLang capture, after which the server goes on with its own lines
    text = (
        "[2025-05-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
        + OTHER_THREAD
        + "Current thread 0x00007f2a3b4c5740 (most recent call first):\n"
        + SGLANG_CAPTURE
        + "\n"
        "[2025-05-01 10:02:00 TP0] Capture cuda graph end. Time elapsed: 120.00 s\n"
    )
    report = _judge(tmp_path, text)
    # THEN no failure is read from the dump: the process went on, it was no fatal error's
    assert report["verdict"] not in ("aborted", "crashed")
    assert report["root_cause"] is None or "Current thread" not in root_text(report)


def test_a_dump_of_threads_alone_claims_no_fatal_error(tmp_path: Path) -> None:
    # GIVEN the end of a dump whose threads are all `Thread 0x…` (dump_traceback_later's labels, its
    # `Timeout (…)!` cut): no `Current thread`
    text = OTHER_THREAD + "Thread 0x00007f2a3b4c5740 (most recent call first):\n" + SGLANG_CAPTURE
    report = _judge(tmp_path, text)
    # THEN its frames place the stack (cuda_graph), and it is said to be neither an abort nor a crash
    assert report["phase"] == "cuda_graph"
    assert report["verdict"] not in ("aborted", "crashed")


def test_a_whole_dump_keeps_its_header_as_the_cause(tmp_path: Path) -> None:
    # GIVEN the same dump with its header (§4.1: `Fatal Python error: Bus error`, a blank line, the threads)
    text = (
        "Fatal Python error: Bus error\n\n"
        + OTHER_THREAD
        + "Current thread 0x00007f2a3b4c5740 (most recent call first):\n"
        + SGLANG_CAPTURE
    )
    report = _judge(tmp_path, text)
    # THEN the header states the failure and stays the cause
    assert (report["verdict"], report["phase"]) == ("aborted", "cuda_graph")
    assert root_text(report) == "Fatal Python error: Bus error"


def test_a_headless_dump_is_read_at_the_end_of_the_source() -> None:
    # GIVEN a matcher fed a `Current thread` line with no dump open, then a frame
    matcher = SourceMatcher(load_packs(check_examples=False), reference=datetime(2025, 1, 1))
    lines = ["Current thread 0x00007f2a3b4c5740 (most recent call first):", *SGLANG_CAPTURE.splitlines()]
    during = [event for number, text in enumerate(lines, 1) for event in matcher.match_line(Line(number, text, 0))]
    # WHEN the source ends
    ended = matcher.finish()
    # THEN nothing is a failure while the dump may still go on; at the end the thread line is, marked cut
    assert all(event.role.value == "diagnostic" for event in during)
    cut = [event for event in ended if CUT_TRACEBACK in event.captures]
    assert [(event.line, event.kind.value, event.captures[CUT_TRACEBACK]) for event in cut] == [(1, "fatal", "dump")]


def test_frames_alone_are_a_dump_placed_by_its_frames_that_claims_no_fatal_error(tmp_path: Path) -> None:
    # GIVEN a paste of one thread's faulthandler frames alone (§4.1's `  File "…", line N in f`, no comma): its
    # `Fatal Python error:` / `Timeout (…)!` header and its thread line are above the cut, so it may be a fatal error's
    # dump or dump_traceback_later's (§4.2, every thread `Thread 0x…`), the last output of a hung process
    report = _judge(tmp_path, SGLANG_CAPTURE)
    # THEN its frames place the stack, as a dump's with its thread line, and it is said to be neither an abort nor a
    # crash: a dump without its label says no more than one of `Thread` lines alone
    assert report["phase"] == "cuda_graph"
    assert report["verdict"] not in ("aborted", "crashed")
    # AND the stack parser reads it as a faulthandler dump whose fatal error is not known
    [process] = report["stacks"]["processes"]
    assert (process["source"], process["fatal"]) == ("faulthandler", None)
    assert process["threads"][0]["frames"][0] == "capture (sglang/srt/model_executor/cuda_graph_runner.py:41)"


def test_frames_alone_under_rays_prefix_with_its_colour_codes_unescaped_read_alike(tmp_path: Path) -> None:
    # GIVEN the same kind of paste from a Ray worker: each line behind Ray's log monitor's `(Name pid=N) ` tag, its
    # cyan written without ESC (`[36m` … `[0m`, the ESC lost in the copy), the paste cut inside the next tag
    tag = "[36m(RayWorkerWrapper pid=812)[0m "
    text = "".join(tag + line + "\n" for line in VLLM_V0_STEP.splitlines()) + "[36m(RayWorkerWrappe"
    report = _judge(tmp_path, text)
    # THEN the frames are read as without the tag: vLLM V0's scheduler under the engine's step, serving; no failure
    assert report["phase"] == "serving"
    assert report["verdict"] not in ("aborted", "crashed")
    [process] = report["stacks"]["processes"]
    assert (process["source"], process["fatal"]) == ("faulthandler", None)
    assert process["threads"][0]["frames"] == [
        "_schedule_prefills (vllm/core/scheduler.py:1121)",
        "schedule (vllm/core/scheduler.py:1284)",
        "step (vllm/engine/llm_engine.py:1340)",
        "<module> (/app/serve.py:88)",
    ]


def test_a_dump_cut_above_its_stack_line_is_the_fatal_error_it_was_printed_for(tmp_path: Path) -> None:
    # GIVEN a paste that begins at the `Stack (most recent call first):` line faulthandler heads the dumping thread
    # with where it dumps that thread alone (§4.2; a fatal error's header above the cut), and ends in its frames
    report = _judge(tmp_path, "Stack (most recent call first):\n" + SGLANG_CAPTURE)
    # THEN read as a `Current thread` is: aborted in cuda_graph, the Stack line the cause, the cut header a doubt
    assert (report["verdict"], report["phase"]) == ("aborted", "cuda_graph")
    assert root_text(report) == "Stack (most recent call first):"
    assert any("faulthandler dump whose header is not in it" in doubt for doubt in report["evidence"]["against"])


def test_a_stack_dump_the_program_goes_on_after_says_no_failure(tmp_path: Path) -> None:
    # GIVEN a one-thread dump (`Stack …`, as faulthandler.register(…, all_threads=False) or dump_traceback print it)
    # in an SGLang capture, after which the server goes on with its own lines
    text = (
        "[2025-05-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
        "Stack (most recent call first):\n" + SGLANG_CAPTURE + "\n"
        "[2025-05-01 10:02:00 TP0] Capture cuda graph end. Time elapsed: 120.00 s\n"
    )
    report = _judge(tmp_path, text)
    # THEN no failure is read from the dump
    assert report["verdict"] not in ("aborted", "crashed")
    assert report["root_cause"] is None or "Stack (most" not in root_text(report)
