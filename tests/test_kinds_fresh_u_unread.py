"""Kinds of lines fresh-u's pastes showed unread (unread-u2): a shell's job report of a non-zero exit (zsh printjob,
bash printable_job_status), the FP8 block-shape ValueError of SGLang's and vLLM's fp8_utils, Triton's Python backend
stub failing its model's initialize, the TensorRT-LLM backend's per-iteration stats, HCCL's connect-timeout report
in CANN's plog format, and sglang-jax's weight loader. Each written from the format its source prints, judged end to
end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def _titan_steps(first: int, count: int) -> list[str]:
    # torchtitan's log_step (`step: {step:2}  loss: {loss:7.4f}  ...`) under torchtitan's own `[titan] ...` prefix
    return [
        f"[titan] 2025-06-16 22:30:{10 + i:02d},322 - root - INFO - step: {first + i}  loss:  6.{1384 + i}  "
        f"memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"
        for i in range(count)
    ]


# --- a job-control shell's report (zsh Src/jobs.c printjob; bash jobs.c printable_job_status) ------------------


@pytest.mark.parametrize(
    "report",
    [
        "[1]    41822 exit 1     torchrun --nproc-per-node 8 -m torchtitan.train",  # zsh, long form (pid)
        "[2]  + exit 2     torchrun --nproc-per-node 8 -m torchtitan.train",  # zsh, short form
        "[1]+  Exit 1                  torchrun --nproc-per-node 8 -m torchtitan.train",  # bash
    ],
)
def test_a_shells_report_of_a_failed_job_ends_the_run_crashed(tmp_path: Path, report: str) -> None:
    # GIVEN a training job's steps, then the shell's report that the launcher exited with a non-zero status
    lines = [*_titan_steps(40, 4), report]
    # WHEN analysed
    _, report_json = _analyze(tmp_path, lines)
    # THEN the run crashed in its steps, and nothing else in the log explaining it, the report is the cause
    assert report_json["verdict"] == "crashed"
    assert report_json["phase"] == "serving"
    assert report_json["root_cause"]["line"] == 5


def test_a_shells_report_of_a_clean_end_is_no_failure(tmp_path: Path) -> None:
    # GIVEN the same steps, then zsh's report of a job that exited 0 (`done`)
    lines = [*_titan_steps(40, 4), "[1]  + done       torchrun --nproc-per-node 8 -m torchtitan.train"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN it is not read as a crash
    assert report["verdict"] != "crashed"


def test_a_failed_jobs_report_yields_to_the_traceback_before_it(tmp_path: Path) -> None:
    # GIVEN steps, a Python traceback ending in a RuntimeError, then bash's report of the launcher's exit 1
    lines = [
        *_titan_steps(40, 2),
        "Traceback (most recent call last):",
        '  File "/opt/torchtitan/train.py", line 410, in train_step',
        "    loss.backward()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "[1]+  Exit 1                  torchrun --nproc-per-node 8 -m torchtitan.train",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the report is a consequence: the error is the cause
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["line"] == 6


# --- SGLang / vLLM fp8_utils validate_fp8_block_shape ---------------------------------------------------------------


def test_fp8_block_shape_error_alone_is_a_weight_load_crash(tmp_path: Path) -> None:
    # GIVEN only the ValueError a TP slice of a block-quantized layer raises while the model is built
    lines = [
        "ValueError: Weight input_size_per_partition = 1344 is not divisible by weight quantization block_k = 128."
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN it is a crash while loading the model, this line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")
    assert report["root_cause"]["line"] == 1


# --- Triton python_backend src/pb_stub.cc --------------------------------------------------------------------------


def test_triton_python_stub_init_failure_is_the_cause(tmp_path: Path) -> None:
    # GIVEN Triton loading a Python-backend model whose initialize() raises (glog lines, quoted messages)
    lines = [
        'I0305 10:00:00.100000 95 model_lifecycle.cc:473] "loading: vllm_model:1"',
        'I0305 10:00:02.200000 95 python_be.cc:2289] "TRITONBACKEND_ModelInstanceInitialize: vllm_model_0_0 '
        '(MODEL device 0)"',
        'I0305 10:00:09.300000 95 pb_stub.cc:366] "Failed to initialize Python stub: ValueError: signal only works in '
        'main thread of the main interpreter\\n\\nAt:\\n  /usr/lib/python3.12/signal.py(58): signal\\n"',
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the model's load crashed, the stub's line the cause
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["line"] == 3


# --- tensorrtllm_backend inflight_batcher_llm/src/model_instance_state.cc WaitForStats -----------------------------


def test_trtllm_backend_iteration_stats_are_serving(tmp_path: Path) -> None:
    # GIVEN the backend's per-iteration stats objects, the counter advancing
    lines = [
        f'I0514 21:01:{10 + i:02d}.000000 160 model_instance_state.cc:1500] {{"Active Request Count":2,'
        f'"Iteration Counter":{500 + i},"Max Request Count":64,"Runtime CPU Memory Usage":404,'
        f'"Timestamp":"05-14-2024 21:01:{10 + i:02d}","Context Requests":0,"Generation Requests":2}}'
        for i in range(3)
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the engine is serving requests
    assert report["phase"] == "serving"
    assert report["verdict"] != "unknown"


# --- HCCL detect_connect_anomalies.cc ProcessDetectionResults, CANN's plog line ------------------------------------


def test_hccl_connect_timeout_report_is_a_dist_init_timeout(tmp_path: Path) -> None:
    # GIVEN HCCL's connect-timeout detection report on one rank, then the transport's failures after it
    lines = [
        "[ERROR] HCCL(4410,python3):2026-02-01-08:00:05.100.001 [detect_connect_anomalies.cc:127] [4500]"
        "-------------------CONNECT TIMEOUT DETECT RESULT-----------------------",
        "[ERROR] HCCL(4410,python3):2026-02-01-08:00:05.100.020 [detect_connect_anomalies.cc:132] [4500]This node "
        "(server 10.0.0.1, device ID 3) detects that srcRank (server 10.0.0.1, device ID 3) fails to connect to "
        "dstRank (server 10.0.0.2, device ID 3). Continue to analyze the fault based on the logs of srcRank and "
        "dstRank.",
        "[ERROR] HCCL(4410,python3):2026-02-01-08:00:05.100.040 [detect_connect_anomalies.cc:143] [4500]"
        "----------------------------------------------------------------------",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN a connection timeout between ranks while their communicator connects, the banner the cause
    assert (report["verdict"], report["phase"]) == ("timeout", "dist_init")
    assert report["root_cause"]["line"] == 1


# --- sglang-jax python/sgl_jax/srt/utils/weight_utils.py -----------------------------------------------------------


def test_sglang_jax_weight_bars_are_weight_load(tmp_path: Path) -> None:
    # GIVEN sglang-jax's lazy loader starting, its regular-weights bar ticking (tqdm, one tick a line)
    lines = [
        "[2026-01-06 07:50:27 TP0] Starting parallel weight loading via JAX Lazy Loader...",
        "Loading Regular Weights:   3%|▉                               | 9/314 [00:00<00:09, 33.09it/s]",
        "Loading Regular Weights:  40%|████████████▊                   | 126/314 [00:01<00:01, 116.64it/s]",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the run is loading weights, open, the last bar tick its last progress
    assert report["phase"] == "weight_load"
    assert report["verdict"] in ("progressing", "stalled")
    assert report["root_cause"]["line"] == 3
