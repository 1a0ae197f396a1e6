"""An exception line that names its class alone: CPython's traceback.py (`_format_final_exc_line`) prints `Cls` where
str(exc) is empty, `Cls: msg` otherwise, so a bare `assert` or `raise EOFError` ends its traceback with the class
alone, and a message that begins with a newline (torch dynamo's `AssertionError:` then `from user code:`) with `Cls:`.
What failed is the source line CPython quoted under the innermost frame: that statement is the cause. Where the
message goes on in lines read as its own (torchrun's ChildFailedError and its failure table), they say it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

FRAME = '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/flashattention_backend.py", line 832, in f\n'
ASSERT = "    assert not get_global_server_args().disable_chunked_prefix_cache\n"


def test_a_bare_assertion_is_caused_at_its_statement(tmp_path: Path) -> None:
    # GIVEN a traceback whose exception line is the class alone, under the innermost frame's `assert`
    text = "Traceback (most recent call last):\n" + FRAME + ASSERT + "AssertionError\n"
    report = judge_text(tmp_path, text)
    # THEN a crash whose cause is the assert statement's line, the reason naming the class and the statement
    assert report["verdict"] == "crashed"
    assert root_text(report) == ASSERT.rstrip("\n")
    assert report["root_cause"]["line"] == 3
    assert "AssertionError" in report["reason"]
    assert "assert not get_global_server_args().disable_chunked_prefix_cache" in report["reason"]


def test_a_class_and_colon_with_its_message_below_is_caused_at_its_statement(tmp_path: Path) -> None:
    # GIVEN 3.11 carets under the statement, then `AssertionError:` and dynamo's `from user code:` below
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/torch/_dynamo/variables/lists.py", line 106, in getitem\n'
        "    assert isinstance(index, (int, torch.SymInt))\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "AssertionError:\n"
        "\n"
        "from user code:\n"
    )
    report = judge_text(tmp_path, text)
    # THEN the statement (not its carets, not the bare class) is the cause
    assert root_text(report) == "    assert isinstance(index, (int, torch.SymInt))"


def test_any_class_printed_alone_is_caused_at_its_statement(tmp_path: Path) -> None:
    # GIVEN an EOFError printed alone under the call that raised it
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 383, in _recv\n'
        "    raise EOFError\n"
        "EOFError\n"
    )
    report = judge_text(tmp_path, text)
    # THEN the statement is the cause
    assert root_text(report) == "    raise EOFError"


def test_an_exception_with_a_message_keeps_its_own_line(tmp_path: Path) -> None:
    # GIVEN the same frame and an exception line with a message
    text = "Traceback (most recent call last):\n" + FRAME + ASSERT + "AssertionError: chunked prefix cache is on\n"
    report = judge_text(tmp_path, text)
    # THEN the exception line is the cause
    assert root_text(report) == "AssertionError: chunked prefix cache is on"


def test_a_frame_without_source_leaves_the_bare_class_the_cause(tmp_path: Path) -> None:
    # GIVEN an innermost frame with no source line (a frozen module) under a frame that quoted one
    text = (
        "Traceback (most recent call last):\n"
        + FRAME
        + ASSERT
        + '  File "<frozen importlib._bootstrap>", line 1360, in _find_and_load\n'
        + "ModuleNotFoundError\n"
    )
    report = judge_text(tmp_path, text)
    # THEN the outer frame's statement did not raise it: the exception line stays the cause
    assert root_text(report) == "ModuleNotFoundError"
