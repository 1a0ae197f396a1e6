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


def test_whitespace_lines_between_records_leave_the_innermost_frame_the_cause(tmp_path: Path) -> None:
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
    # THEN the innermost frame is the cause (its `File` line), never a whitespace line between the records
    assert report["verdict"] == "crashed"
    innermost = '(APIServer pid=1)   File "/usr/lib/python3.12/subprocess.py", line 2115, in _communicate'
    assert root_text(report) == innermost


# --- torch's TCPStore client: `recvValue failed on …` logged as a warning before the exception is thrown on --------

_RECV_WARNING = (
    "[W822 03:54:{s:02d}.636977195 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=15, "
    "addr=[job-node-0-1.job.svc.cluster.local]:60560, remote=[job-node-0-0.job.svc.cluster.local]:29500): "
    "failed to recv, got 0 bytes\n"
)


def test_store_recv_warning_is_a_wait_not_a_crash(tmp_path: Path) -> None:
    # GIVEN a node's log of TCPStore's [W] warning, logged again at each try of the store
    report = judge_text(tmp_path, "".join(_RECV_WARNING.format(s=s) for s in (10, 20, 30)))
    # THEN the node waits on the rendezvous store: no failure is read from a warning
    assert report["verdict"] == "stalled"
    assert report["phase"] == "dist_init"


def test_store_recv_exception_is_still_a_failure(tmp_path: Path) -> None:
    # GIVEN the exception the caller did not catch, after the warning
    report = judge_text(
        tmp_path,
        _RECV_WARNING.format(s=10)
        + "Traceback (most recent call last):\n"
        + '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 189, in '
        "_create_c10d_store\n"
        + "    return TCPStore(\n"
        + "torch.distributed.DistNetworkError: recvValue failed on SocketImpl(fd=15, addr=[node-0-1]:60560, "
        "remote=[node-0-0]:29500): failed to recv, got 0 bytes\n",
    )
    # THEN crashed: the exception ended the process
    assert report["verdict"] == "crashed"


# --- a traceback that ends in CPython's TimeoutError: a wait passed its deadline ------------------------------------

_SHM_TIMEOUT = (
    "(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361] EngineCore encountered a fatal error.\n"
    "(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361] Traceback (most recent call last):\n"
    '(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361]   File "/usr/local/lib/python3.12/dist-packages/vllm/'
    'distributed/device_communicators/shm_broadcast.py", line 647, in acquire_read\n'
    "(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361]     raise TimeoutError\n"
    "(EngineCore pid=222) ERROR 08-15 11:20:19 [core.py:1361] {exception}\n"
)


def test_bare_timeout_error_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN vLLM's engine loop ending in shm_broadcast's bare `raise TimeoutError`
    report = judge_text(tmp_path, _SHM_TIMEOUT.format(exception="TimeoutError"))
    # THEN timeout: the read of the workers' answers passed its deadline
    assert report["verdict"] == "timeout"


def test_another_bare_exception_is_no_timeout(tmp_path: Path) -> None:
    # GIVEN the same traceback ending in another class
    report = judge_text(tmp_path, _SHM_TIMEOUT.format(exception="EOFError"))
    # THEN crashed, not timeout
    assert report["verdict"] == "crashed"
