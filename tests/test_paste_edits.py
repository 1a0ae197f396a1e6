"""A person's edits in a paste (issue 25, item H): notes, elisions, Ctrl-C echoes with a note, a quoted line on top.
Each is a person's, not the program's: no event of its own (Ctrl-C's interrupt excepted), never progress, never the
log's last line, never a rule's cause; the report's notes quote it. Each form on two logs written from the formats
the systems print (patterns/vllm.toml, sglang.toml, nccl_tests.toml cite them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from logphase.logs.annotations import Edit, edit, quoted_top
from logphase.packs.loading import load_packs
from tests.conftest import judge_text
from tests.equivalence import reports

VLLM_CAPTURE = (
    "INFO 12-20 10:25:00 llm_engine.py:234] Initializing an LLM engine (v0.6.4) with config: "
    "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=2\n"
    "INFO 12-20 10:25:52 model_runner.py:1099] Loading model weights took 14.9888 GB\n"
    "INFO 12-20 10:25:58 distributed_gpu_executor.py:57] # GPU blocks: 27616, # CPU blocks: 4096\n"
    "INFO 12-20 10:26:01 model_runner.py:1415] Capturing cudagraphs for decoding. This may lead to unexpected "
    "consequences if the model is not static.\n"
)
CAPTURE_LINE = 4

SGLANG_WEIGHTS = (
    "[2025-03-08 12:29:01 TP0] Init torch distributed begin.\n"
    "[2025-03-08 12:29:03 TP0] Init torch distributed ends. mem usage=0.13 GB\n"
    "[2025-03-08 12:29:04 TP0] Load weight begin. avail mem=21.63 GB\n"
)


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "paste.log")


def _root(report: dict[str, object]) -> dict[str, object]:
    root = report["root_cause"]
    assert isinstance(root, dict)
    return root


def _last_line(report: dict[str, object]) -> int:
    last = report["last_line"]
    assert isinstance(last, dict)
    return int(last["line"])


def _notes(report: dict[str, object]) -> list[str]:
    notes = report["notes"]
    assert isinstance(notes, list)
    return [str(note) for note in notes]


def _edits_note(report: dict[str, object]) -> str:
    found = [note for note in _notes(report) if "a person's edits in the paste" in note]
    assert len(found) == 1, _notes(report)
    return found[0]


# --- notes ---------------------------------------------------------------------------------------------------------


def test_a_note_in_angle_brackets_after_a_vllm_capture_is_quoted_not_read(tmp_path: Path) -> None:
    # GIVEN a vLLM engine that began capturing, then the reader's `<HANGS FOR 20+ min>`
    report = _judge(tmp_path, VLLM_CAPTURE + "<HANGS FOR 20+ min>\n")
    # THEN it stalled in the capture; the capture line is where it stopped and the log's last line; the note quoted
    assert (report["verdict"], report["phase"]) == ("stalled", "cuda_graph")
    assert _root(report)["line"] == CAPTURE_LINE
    assert _last_line(report) == CAPTURE_LINE
    assert "line 5 `<HANGS FOR 20+ min>` (a note)" in _edits_note(report)


def test_a_hash_note_naming_a_failure_is_no_failure(tmp_path: Path) -> None:
    # GIVEN an SGLang rank loading weights, then two `#` notes, one with an error's words in it
    report = _judge(
        tmp_path,
        SGLANG_WEIGHTS
        + "# stuck here for 30 min, nvidia-smi shows 100% util\n"
        + "# sometimes: RuntimeError: NCCL error: unhandled system error\n",
    )
    # THEN it stalled in weight_load with the load's begin the cause: a note is what someone thinks, not a line
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert _root(report)["line"] == 3
    assert _last_line(report) == 3
    assert "line 4 `# stuck here for 30 min, nvidia-smi shows 100% util` (a note)" in _edits_note(report)


# --- Ctrl-C with a note ----------------------------------------------------------------------------------------------


def test_ctrl_c_echo_with_a_note_is_the_interrupt(tmp_path: Path) -> None:
    # GIVEN a vLLM capture, then `^C <nothing on first Ctrl-C>` and a second `^C`
    report = _judge(tmp_path, VLLM_CAPTURE + "^C <nothing on first Ctrl-C>\n^C\n")
    # THEN a person stopped it during the capture: stalled, interrupted at the first Ctrl-C; the capture the last line
    assert (report["verdict"], report["phase"]) == ("stalled", "cuda_graph")
    assert "interrupted during cuda_graph" in str(report["reason"])
    assert "line 5" in str(report["reason"])
    assert _last_line(report) == CAPTURE_LINE


def test_ctrl_c_pressed_twice_with_a_comment_is_the_interrupt(tmp_path: Path) -> None:
    # GIVEN an SGLang weight load, then `^C^C  # pressed it twice, nothing happened`
    report = _judge(tmp_path, SGLANG_WEIGHTS + "^C^C  # pressed it twice, nothing happened\n")
    # THEN interrupted during weight_load
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert "interrupted during weight_load" in str(report["reason"])
    assert _last_line(report) == 3


# --- elisions --------------------------------------------------------------------------------------------------------


def test_an_elision_inside_a_traceback_leaves_its_exception_the_cause(tmp_path: Path) -> None:
    # GIVEN SGLang's scheduler traceback with `...` where the reader cut frames out
    report = _judge(
        tmp_path,
        "[2025-03-08 12:31:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 1748, in '
        "run_scheduler_process\n"
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
        "...\n"
        '  File "/usr/lib/python3.10/site-packages/sglang/srt/model_executor/model_runner.py", line 215, in __init__\n'
        "    self.init_memory_pool(\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n",
    )
    # THEN crashed, the exception line the cause; the cut is noted
    assert report["verdict"] == "crashed"
    assert str(_root(report)["text"]).startswith("RuntimeError: Not enough memory.")
    assert "line 4 `...` (lines left out)" in _edits_note(report)


def test_a_bracketed_count_of_lines_left_out_between_steps_changes_nothing(tmp_path: Path) -> None:
    # GIVEN a vLLM start with `[... 200 lines omitted ...]` between its weights and its KV cache, then `<snip>` at
    # its end
    lines = VLLM_CAPTURE.splitlines(keepends=True)
    report = _judge(tmp_path, "".join(lines[:2]) + "[... 200 lines omitted ...]\n" + "".join(lines[2:]) + "<snip>\n")
    # THEN as without them: stalled in the capture, whose line (now line 5) is the last
    assert (report["verdict"], report["phase"]) == ("stalled", "cuda_graph")
    assert _root(report)["line"] == CAPTURE_LINE + 1
    assert _last_line(report) == CAPTURE_LINE + 1
    note = _edits_note(report)
    assert "line 3 `[... 200 lines omitted ...]` (lines left out)" in note
    assert "line 6 `<snip>` (lines left out)" in note


# --- a quoted line on top --------------------------------------------------------------------------------------------


def test_a_vllm_line_quoted_on_top_is_no_second_start(tmp_path: Path) -> None:
    # GIVEN a paste whose first line quotes the capture line (in quote marks), the log from its launch below it
    report = _judge(
        tmp_path, '"Capturing cudagraphs for decoding. This may lead to unexpected consequences"\n' + VLLM_CAPTURE
    )
    # THEN one start, stalled in the capture (line 5): no launch after a capture, no draft worker
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("stalled", "cuda_graph", "cuda_graph")
    assert _root(report)["line"] == CAPTURE_LINE + 1
    assert not any("earlier start" in note for note in _notes(report))
    assert "(a copy of a line below, put on top)" in _edits_note(report)


def test_an_sglang_line_quoted_with_markdown_on_top_is_no_step_of_its_own(tmp_path: Path) -> None:
    # GIVEN the load's begin line quoted with markdown's `> ` above an SGLang paste that ends in the load
    text = "> Load weight begin. avail mem=21.63 GB\n" + SGLANG_WEIGHTS
    report = _judge(tmp_path, text)
    # THEN stalled in weight_load at line 4, the quote not read (nor taken for the load's begin)
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert _root(report)["line"] == 4
    assert "line 1 `> Load weight begin." in _edits_note(report)


# --- the program's own lines of those shapes ------------------------------------------------------------------------


def test_nccl_tests_hash_lines_are_the_programs(tmp_path: Path) -> None:
    # GIVEN nccl-tests' output (src/util.cu): `#` header lines, one result row, the `#` summary
    report = _judge(
        tmp_path,
        "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0\n"
        "#\n"
        "# Using devices\n"
        "#  Rank  0 Group  0 Pid 2181762 on   GENOA-01 device  0 [0x01] NVIDIA GeForce RTX 5090\n"
        "    33554432       8388608     float    none      -1    19.56  1715.44    0.00      0     0.78  43046.10    "
        "0.00    N/A\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 0 \n",
    )
    # THEN the benchmark finished, its last line its own, and no line is taken for a person's
    assert report["verdict"] == "finished"
    assert _last_line(report) == 7
    assert not any("a person's edits" in note for note in _notes(report))


def test_program_placeholders_and_reprs_are_not_notes() -> None:
    # GIVEN lines programs print in angle brackets or with dots
    for text in (
        "  <NO_OTHER_FAILURES>",
        "<N/A>",
        "<Foo object at 0x7f3a2c>",
        "<Process name='X' pid=1 started>",
        "Loading ...",
        "...done",
        "---",
    ):
        # THEN none is a person's edit
        assert edit(text) is None, text
    # AND a bare copy of a line is never a quote (programs print lines twice themselves)
    banner = "[TensorRT-LLM] TensorRT-LLM version: 1.1.0"
    assert quoted_top([banner, "[TensorRT-LLM][INFO] Engine loaded", banner]) is None
    assert edit("^C <nothing on first Ctrl-C>") is Edit.KEYSTROKE


def test_the_fast_path_reads_a_note_ending_a_long_log_as_the_plain_path_does(tmp_path: Path) -> None:
    # GIVEN a long log (past the head the plain path reads alone): a vLLM start, hundreds of progress bar lines of
    # its capture, then the reader's note as the file's last line
    bar = "Capturing CUDA graph shapes:  {pct:>2}%|#         | {done}/700 [00:{sec:02d}<00:30,  2.05it/s]"
    lines = VLLM_CAPTURE.splitlines()
    lines += [bar.format(pct=done * 100 // 700, done=done, sec=done % 60) for done in range(1, 700)]
    lines.append("<HANGS FOR 20+ min>")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs(check_examples=False)
    # WHEN read by the fast path and by the plain path
    fast = reports.fast([log], packs)
    # THEN the same report, whose last line is the bar's, not the note
    assert fast == reports.plain([log], packs)
    last = json.loads(fast)["last_line"]
    assert (last["line"], last["text"][:27]) == (703, "Capturing CUDA graph shapes")
