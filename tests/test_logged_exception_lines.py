"""An exception line a logger wrote at its error level, no traceback header above it in the log: the failure it
states, on both paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase import scan as scanning
from logphase.packs import PackSet
from tests.conftest import FIXTURES, judge_text
from tests.equivalence import reports

# vLLM V1's engine core logs its traceback through NewLineFormatter, every line behind the record's prefix; an
# excerpt that kept only its last two lines (the frame's `raise` and the exception line)
VLLM_TAIL = (
    "(EngineCore_DP0 pid=4100) ERROR 11-19 12:54:26 [core.py:710]     raise RuntimeError(\n"
    "(EngineCore_DP0 pid=4100) ERROR 11-19 12:54:26 [core.py:710] RuntimeError: Worker failed with error "
    "'CUDA out of memory', please check the stack trace above for the root cause\n"
)
# LMDeploy 0.6.2 pytorch/check_env/__init__.py `_handle_exception`: `logger.error(f'{type(e).__name__}: {e}')`, then
# the module's test failed with its advice on the next lines, then `exit(1)`; its logger's format
# `%(asctime)s - %(name)s - %(levelname)s - %(filename)s:%(lineno)d - %(message)s`
LMDEPLOY_CHECK = (
    "2024-11-06 22:40:35,607 - lmdeploy - ERROR - __init__.py:17 - ModuleNotFoundError: No module named 'triton'\n"
    "2024-11-06 22:40:35,607 - lmdeploy - ERROR - __init__.py:18 - <triton> test failed!\n"
    "Please ensure it has been installed correctly.\n"
)


def test_a_vllm_exception_line_cut_from_its_traceback_is_the_failure(tmp_path: Path) -> None:
    # GIVEN the last two lines of a traceback vLLM's engine core logged at ERROR
    report = judge_text(tmp_path, VLLM_TAIL)
    # WHEN analysed THEN the run crashed, and the exception line is the cause
    assert report["verdict"] == "crashed", report["reason"]
    assert report["root_cause"]["line"] == 2
    assert report["root_cause"]["text"] == VLLM_TAIL.splitlines()[1]


def test_lmdeploys_logged_exception_before_it_exits_is_the_failure(tmp_path: Path) -> None:
    # GIVEN LMDeploy's environment check logging the import's exception and the test it failed
    report = judge_text(tmp_path, LMDEPLOY_CHECK)
    # WHEN analysed THEN the run crashed, and the exception line is the cause
    assert report["verdict"] == "crashed", report["reason"]
    assert report["root_cause"]["line"] == 1
    assert report["root_cause"]["text"] == LMDEPLOY_CHECK.splitlines()[0]


@pytest.mark.parametrize(
    "line",
    [
        # the same shape at a level that is no error: a warning's category is an exception class too
        "WARNING 11-19 12:54:26 [config.py:300] UserWarning: the tokenizer is slow",
        "2024-11-06 22:40:35,607 - lmdeploy - INFO - __init__.py:17 - ValueError: a message about one",
        # at ERROR, words and a colon that name no exception class
        "ERROR 11-19 12:54:26 [serving.py:120] Note: request 3 was aborted by the client",
    ],
)
def test_a_line_of_that_shape_at_another_level_or_of_no_class_is_no_failure(tmp_path: Path, line: str) -> None:
    # GIVEN a vLLM server's launch line, then a line that is not an exception logged at an error level
    report = judge_text(tmp_path, f"INFO 11-19 12:54:20 [api_server.py:1] vLLM API server version 0.11.0\n{line}\n")
    # WHEN analysed THEN nothing crashed
    assert report["verdict"] != "crashed", report["reason"]


def test_a_logged_exception_line_deep_in_a_long_log_reads_the_same_on_both_paths(
    packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scanner: str
) -> None:
    # GIVEN a vLLM serving log read past its first line by the fast path, then lines its engine core logged at ERROR,
    # the last an exception line, and the engine's stats lines after them
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    serving = (FIXTURES / "logs" / "vllm" / "v1-085-tp4-ready-serving.log").read_text()
    stats = [line for line in serving.splitlines(keepends=True) if "Engine 000: Avg prompt" in line]
    engine = "(EngineCore_DP0 pid=4100) ERROR 05-10 16:00:57 [core.py:710] "
    before = "".join(f"{engine}request {n} was aborted\n" for n in range(300))  # a steady line of the template
    tail = f"{engine}KeyError: 'model.layers.0.mlp.experts'\n"
    log = tmp_path / "server.log"
    log.write_text(serving + before + tail + "".join(stats * 100))
    # WHEN analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the exception line is the crash's cause
    assert fast == plain
    assert "KeyError: 'model.layers.0.mlp.experts'" in plain
    assert '"verdict": "crashed"' in plain
