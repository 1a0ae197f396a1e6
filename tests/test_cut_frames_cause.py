"""A traceback cut before its exception line (a paste cut inside its frames, with or without its `Traceback` line):
the cause is its innermost frame the paste holds whole — its `File` line up to the function's name, which says where
the exception was raised or passed through — or that frame's `raise` / `assert` statement, which says what was raised
(fixtures/realworld/README.md, *cut traceback*). The header says only that something was raised. CPython's traceback
format (traceback.py StackSummary.format): `  File "f.py", line N, in func`, then the source line indented by four,
then from 3.11 a marker line of `^` / `~` under it; a frame whose source is not available has no source line."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

SGLANG_HICACHE_FRAMES = (
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2300, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)\n"
    "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 410, in __init__\n'
    "    self.tree_cache = HiRadixCache(\n"
    "                      ^^^^^^^^^^^^^\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/hiradix_cache.py", line 52, in __init__\n'
    "    self.token_to_kv_pool_host = MHATokenToKVPoolHost(\n"
    "                                 ^^^^^^^^^^^^^^^^^^^^^\n"
)


INNERMOST = '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/hiradix_cache.py", line 52, in __init__'


def test_frames_cut_at_both_ends_are_caused_at_the_innermost_frame(tmp_path: Path) -> None:
    # GIVEN frames of a scheduler's start, cut before the `Traceback` line and after the innermost frame's marker
    report = judge_text(tmp_path, SGLANG_HICACHE_FRAMES)
    # THEN a crash, its cause the innermost frame's `File` line (not its source line, not the outermost frame)
    assert report["verdict"] == "crashed"
    assert root_text(report) == INNERMOST
    assert report["root_cause"]["line"] == 7


def test_a_frame_cut_inside_its_file_line_leaves_the_whole_frame_before_it(tmp_path: Path) -> None:
    # GIVEN the same frames and a last `File` line cut mid-path (the paste ends there: it names no function)
    report = judge_text(tmp_path, SGLANG_HICACHE_FRAMES + '  File "/sgl-wor\n')
    # THEN the innermost frame named whole is the cause
    assert root_text(report) == INNERMOST


def test_a_frame_without_source_is_still_the_innermost_frame(tmp_path: Path) -> None:
    # GIVEN frames whose innermost one has no source line (a frozen module: CPython prints the `File` line alone)
    text = (
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 90, in __init__\n'
        "    self.model_executor = executor_class(vllm_config)\n"
        '  File "<frozen importlib._bootstrap>", line 1360, in _find_and_load\n'
    )
    report = judge_text(tmp_path, text)
    # THEN that frame is the cause: it is whole, and the innermost
    assert root_text(report) == '  File "<frozen importlib._bootstrap>", line 1360, in _find_and_load'


def test_frames_under_their_traceback_line_are_caused_at_the_innermost_frame_not_the_header(tmp_path: Path) -> None:
    # GIVEN the same frames under their `Traceback` line, cut before the exception line
    report = judge_text(tmp_path, "Traceback (most recent call last):\n" + SGLANG_HICACHE_FRAMES)
    # THEN the innermost frame is the cause, not the header
    assert report["verdict"] == "crashed"
    assert root_text(report) == INNERMOST
    assert report["root_cause"]["line"] == 8


def test_a_logger_header_with_the_traceback_line_gives_way_to_the_innermost_frame(tmp_path: Path) -> None:
    # GIVEN SGLang's scheduler header (`Scheduler hit an exception: ` + the traceback, scheduler.py's logger.error of
    # get_exception_traceback()) under its prefix, the frames cut before the exception line
    text = "[2025-06-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    report = judge_text(tmp_path, text + SGLANG_HICACHE_FRAMES)
    # THEN the innermost frame is the cause
    assert root_text(report) == INNERMOST


def test_an_assert_statement_in_the_innermost_frame_is_read_as_the_assertion_it_raises(tmp_path: Path) -> None:
    # GIVEN SGLang's warmup traceback cut after the innermost frame's `assert` statement (server.py _wait_and_warmup)
    text = (
        "[2024-11-26 14:25:58] Initialization failed. warmup error: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/sglang/srt/server.py", line 579, in _wait_and_warmup\n'
        '    assert res.status_code == 200, f"{res}"\n'
    )
    report = judge_text(tmp_path, text)
    # THEN the statement is the cause, read as the AssertionError it raises
    assert report["verdict"] == "crashed"
    assert root_text(report) == '    assert res.status_code == 200, f"{res}"'
    assert report["root_cause"]["rule"] == "python.traceback.exception"


def test_a_whole_exception_line_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN the same frames with their exception line
    text = "Traceback (most recent call last):\n" + SGLANG_HICACHE_FRAMES + "RuntimeError: CUDA out of memory.\n"
    report = judge_text(tmp_path, text)
    # THEN the exception line is the cause, as ever
    assert root_text(report) == "RuntimeError: CUDA out of memory."
