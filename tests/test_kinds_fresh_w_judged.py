"""Kinds of input the fresh-w batch's judgements were misread on, each written from the format the system prints in its
released source (the pack's rule cites it): Dynamo's TensorRT-LLM worker failing to start its engine, a log viewer's
whitespace line between a traceback's records."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

# --- Dynamo's TensorRT-LLM worker: `Failed to start engine: {e}`, then the re-raised exception's traceback ----------

# base_engine._init_engine logs the engine thread's exception, serve_dynamo.worker logs it again and re-raises: the
# uncaught traceback follows, and a paste may be cut inside its frames
_DYNAMO_ENGINE_FAILED = (
    "2025-05-28T06:36:44.690Z  INFO base_engine._init_engine: [TensorRTLLMWorker:1] Initializing engine\n"
    "2025-05-28T06:36:44.700Z ERROR base_engine._init_engine: [TensorRTLLMWorker:1] Failed to start engine: "
    "[Errno 28] No space left on device\n"
    "2025-05-28T06:36:44.702Z ERROR serve_dynamo.worker: [TensorRTLLMWorker:1] Error in Dynamo component setup: "
    "[Errno 28] No space left on device\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/dynamo/sdk/cli/serve_dynamo.py", line 245, in worker\n'
    "    await server_context.init()\n"
    '  File "/workspace/examples/tensorrt_llm/common/base_engine.py", line 190, in _init_engine\n'
)


def test_dynamo_trtllm_engine_start_failure_is_the_cause(tmp_path: Path) -> None:
    # GIVEN Dynamo's worker logging that its TensorRT-LLM engine failed to start, then the traceback cut in its frames
    report = judge_text(tmp_path, _DYNAMO_ENGINE_FAILED)
    # THEN crashed, and the first line that says what failed is the cause (not the header, not the re-logged line)
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("Failed to start engine: [Errno 28] No space left on device")


def test_component_setup_line_alone_is_not_the_engine_failure(tmp_path: Path) -> None:
    # GIVEN only serve_dynamo's re-logged line and an INFO line of the engine
    lines = _DYNAMO_ENGINE_FAILED.splitlines()
    report = judge_text(tmp_path, f"{lines[0]}\n{lines[2]}\n")
    # THEN no failure is read from them: the rule reads the engine's own line only
    assert report["verdict"] != "crashed"


# --- a viewer's line of whitespace between a traceback's records is no frame's source line -----------------------


def test_whitespace_line_under_a_frame_is_not_its_source_line(tmp_path: Path) -> None:
    # GIVEN a console export that puts a line holding a tab between records: a traceback's frames cut at both ends
    frames = (
        '(APIServer pid=1)   File "/usr/lib/python3.12/subprocess.py", line 1209, in communicate\n'
        "\t\n"
        "(APIServer pid=1)     stdout, stderr = self._communicate(input, endtime, timeout)\n"
        "\t\n"
        '(APIServer pid=1)   File "/usr/lib/python3.12/subprocess.py", line 2115, in _communicate\n'
        "\t\n"
        "(APIServer pid=1)     ready = selector.select(timeout)\n"
        "\t\n"
    )
    report = judge_text(tmp_path, frames)
    # THEN the innermost frame's line quoted is its source line, never the whitespace line after its `File` line
    assert report["verdict"] == "crashed"
    assert root_text(report).strip() == "(APIServer pid=1)     ready = selector.select(timeout)".strip()
