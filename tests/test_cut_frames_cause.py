"""A traceback pasted as frames cut at both ends (no `Traceback` line, no exception line): the cause is the innermost
frame's source line the paste holds, the nearest line to the exception that was cut. CPython's traceback format
(traceback.py StackSummary.format): `  File "f.py", line N, in func`, then the source line indented by four, then
from 3.11 a marker line of `^` / `~` under it; a frame whose source is not available has no source line."""

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


def test_frames_cut_at_both_ends_are_caused_at_the_innermost_source_line(tmp_path: Path) -> None:
    # GIVEN frames of a scheduler's start, cut before the `Traceback` line and after the innermost frame's marker
    report = judge_text(tmp_path, SGLANG_HICACHE_FRAMES)
    # THEN a crash, its cause the innermost frame's source line (not its `^` marker, not the outermost frame)
    assert report["verdict"] == "crashed"
    assert root_text(report) == "    self.token_to_kv_pool_host = MHATokenToKVPoolHost("
    assert report["root_cause"]["line"] == 8


def test_a_frame_cut_inside_its_file_line_leaves_the_source_line_before_it(tmp_path: Path) -> None:
    # GIVEN the same frames and a last `File` line cut mid-path (the paste ends there)
    report = judge_text(tmp_path, SGLANG_HICACHE_FRAMES + '  File "/sgl-wor\n')
    # THEN the innermost source line the paste holds is the cause
    assert root_text(report) == "    self.token_to_kv_pool_host = MHATokenToKVPoolHost("


def test_a_frame_without_source_keeps_the_line_of_the_frame_before(tmp_path: Path) -> None:
    # GIVEN frames whose innermost one has no source line (a compiled module: CPython prints the `File` line alone)
    text = (
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 90, in __init__\n'
        "    self.model_executor = executor_class(vllm_config)\n"
        '  File "<frozen importlib._bootstrap>", line 1360, in _find_and_load\n'
    )
    report = judge_text(tmp_path, text)
    # THEN the source line of the frame before it is the cause
    assert root_text(report) == "    self.model_executor = executor_class(vllm_config)"


def test_frames_with_a_traceback_line_keep_the_header_as_the_cause(tmp_path: Path) -> None:
    # GIVEN the same frames under their `Traceback` line, cut before the exception line
    report = judge_text(tmp_path, "Traceback (most recent call last):\n" + SGLANG_HICACHE_FRAMES)
    # THEN the header stays the cause (labels quote it: a header with the paste's prefix says where it was printed)
    assert root_text(report) == "Traceback (most recent call last):"
