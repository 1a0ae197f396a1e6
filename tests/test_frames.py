"""The one frame key: log lines (tracebacks, faulthandler, py-spy) and parsed stack frames give the
same `function (file)` for the same frame, so one signature matches both."""

from __future__ import annotations

import pytest

from logphase.frames import frame_key, frame_key_of, short_path
from logphase.stacks.dumps import parse_frame_text


@pytest.mark.parametrize(
    ("line", "key"),
    [
        # a traceback line of an installed package: the path below dist-packages, as py-spy prints it
        (
            'File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 2, in load_model',
            "load_model (sglang/srt/model_executor/model_runner.py)",
        ),
        # faulthandler (no comma) in the standard library
        ('  File "/usr/lib/python3.10/threading.py", line 320 in wait', "wait (threading.py)"),
        # py-spy ≥0.4 qualifies methods; the key drops the class so older and newer dumps match alike
        ("    Popen._wait (subprocess.py:1959)", "_wait (subprocess.py)"),
        ("    <module> (rank.py:12)", "<module> (rank.py)"),
        # a `--locals` line, indented further, is not a frame
        ("        self (Popen): <Popen at 0x7f>", None),
        ("Load weight begin. avail mem=21.63 GB", None),
    ],
)
def test_a_frame_line_gives_its_key(line: str, key: str | None) -> None:
    assert frame_key(line) == key


def test_a_parsed_frame_and_its_line_have_the_same_key() -> None:
    # GIVEN a py-spy frame as a dump prints it
    text = "all_reduce (torch/distributed/distributed_c10d.py:2501)"
    frame = parse_frame_text(text)
    assert frame is not None
    # WHEN keyed from the Frame (stacks) and from the line (logs) THEN the keys agree
    assert frame_key_of(frame.function, frame.file, native=frame.native) == frame_key("    " + text)
    assert frame_key("    " + text) == "all_reduce (torch/distributed/distributed_c10d.py)"


def test_a_native_frame_keeps_its_qualified_name() -> None:
    # GIVEN a C++ frame of a --native dump WHEN keyed THEN `c10d::…` is not cut at a dot
    assert frame_key_of("c10d::ProcessGroupNCCL.wait", "libtorch_cuda.so", native=True) == (
        "c10d::ProcessGroupNCCL.wait (libtorch_cuda.so)"
    )


def test_short_path_keeps_a_path_outside_python_as_is() -> None:
    assert short_path("/work/app/train.py") == "/work/app/train.py"
    assert short_path("/opt/venv/lib/python3.12/site-packages/vllm/worker.py") == "vllm/worker.py"
