"""A failure's phase told from the failure's own evidence: ProcessGroupNCCL's heartbeat monitor's store warning (a
process group was built), TurboMind's NCCL check (an NCCL call was made),
SGLang's overlap forward thread and a PD decode server's bootstrap lookup (a request was being served) — and, where
nothing places it, a reason that says so. Formats from torch's ProcessGroupNCCL.cpp, lmdeploy's nccl_utils.h,
sglang 0.4.5/0.4.6/0.5.5 and aiohttp's default access log, as the packs cite them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

LIB = "/opt/conda/lib/python3.11/site-packages/torch/lib"
SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"

CUDA_ERROR_HEAD = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
    "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):",
    f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7fe043152446 in {LIB}/libc10.so)",
    "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 "
    f"(0x7fe0430fc6e4 in {LIB}/libc10.so)",
    "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 "
    f"(0x7fe04323fa18 in {LIB}/libc10_cuda.so)",
]


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


def _native(symbols: list[str], first: int = 3) -> list[str]:
    return [
        f"frame #{first + i}: {symbol} + 0x{0x56 + 16 * i:x} (0x7fe04447e{i:03x} in {LIB}/libtorch_cuda.so)"
        for i, symbol in enumerate(symbols)
    ]


# --- a failure nothing places, and ProcessGroupNCCL's heartbeat monitor ------------------------------------------


def test_a_cuda_error_through_a_symbol_every_step_calls_is_placed_nowhere_and_says_so(tmp_path: Path) -> None:
    # GIVEN the tail of a CUDA error, its c10 backtrace through c10d's getNCCLComm (every collective calls it)
    lines = CUDA_ERROR_HEAD + _native(
        ["c10d::ProcessGroupNCCL::getNCCLComm(std::string const&, c10::Device&, c10d::OpType, int, bool)"]
    )
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash placed nowhere: launch, and the reason says that is all a failure proves
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "launch")
    assert report["reason"].endswith(
        "; no phase line or frame of a step places it: launch says only that a process ran"
    )


def test_the_heartbeat_monitors_store_warning_proves_the_process_group(tmp_path: Path) -> None:
    # GIVEN torch 2.7's heartbeat monitor losing the store (its backtrace cut above, on ROCm's library), then the
    # launcher's traceback of a scheduler that never answered
    lines = [
        "frame #3: c10d::ProcessGroupNCCL::HeartbeatMonitor::runLoop() + 0x4a5 (0x7cdedf552935 in "
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so)",
        "",
        "[rank1]:[W825 10:26:44.056376840 ProcessGroupNCCL.cpp:1828] [PG ID 0 PG GUID 0 Rank 1] Failed to check the "
        '"should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Connection '
        "reset by peer",
        "Traceback (most recent call last):",
        f'  File "{SRT}/entrypoints/engine.py", line 1787, in _wait_for_scheduler_ready',
        "    data = scheduler_pipe_readers[i].recv()",
        "EOFError",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the crash reached dist_init: only a built process group's monitor polls the store
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")


@pytest.mark.parametrize("error", ["Connection reset by peer", "failed to recv, got 0 bytes", "Broken pipe"])
def test_the_store_warning_is_no_failure_of_its_own(tmp_path: Path, error: str) -> None:
    # GIVEN a run's NCCL init line, then (metamorphic) the same log with the heartbeat monitor's store warning
    base = ["node1:4242:4242 [0] NCCL INFO comm 0x55d8c1b0 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE"]
    warning = (
        "[rank0]:[W522 11:47:45.952720714 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID 0 Rank 0] Failed to check "
        f'the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: {error}'
    )
    # WHEN both are analysed
    before, after = _analyze(tmp_path, base), _analyze(tmp_path, [*base, warning])
    # THEN the warning changes neither the verdict nor how far the run got: a shutdown's step, not a cause
    assert (after["verdict"], after["furthest_phase"]) == (before["verdict"], before["furthest_phase"])
    assert after["verdict"] != "crashed"


# --- TurboMind's NCCL check ------------------------------------------------------------------------------------


@pytest.mark.parametrize("error", ["unhandled system error (run with NCCL_DEBUG=INFO for details)", "internal error"])
def test_turbominds_nccl_check_proves_an_nccl_call_was_made(tmp_path: Path, error: str) -> None:
    # GIVEN TurboMind's NCCLCHECK line as the reporter pasted it, trailing spaces kept
    lines = [f"Failed, NCCL error /opt/lmdeploy/src/turbomind/utils/nccl_utils.cc:213 '{error}'        "]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash whose communicators' set-up was reached, as torch's `NCCL error` line proves, and the reason
    # says that is a floor, not the step it failed in
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")
    assert "no phase line or frame of a step places it: its lines prove dist_init reached" in report["reason"]


# --- SGLang's overlap forward thread ---------------------------------------------------------------------------


def _overlap_traceback(inner: list[tuple[str, int, str, str]]) -> list[str]:
    lines = ["[2025-04-11 15:03:19 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):"]
    for path, number, function, code in inner:
        lines += [f'  File "{path}", line {number}, in {function}', f"    {code}"]
    return [*lines, "RuntimeError: CUDA error: an illegal memory access was encountered"]


FORWARD_THREAD = [
    (f"{SRT}/managers/tp_worker_overlap_thread.py", 112, "forward_thread_func", "self.forward_thread_func_()"),
    (
        "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py",
        116,
        "decorate_context",
        "return func(*args, **kwargs)",
    ),
    (
        f"{SRT}/managers/tp_worker_overlap_thread.py",
        143,
        "forward_thread_func_",
        "logits_output, next_token_ids = self.worker.forward_batch_generation(",
    ),
    (
        f"{SRT}/managers/tp_worker.py",
        172,
        "forward_batch_generation",
        "logits_output = self.model_runner.forward(forward_batch)",
    ),
]


def test_a_traceback_of_the_overlap_forward_thread_is_serving(tmp_path: Path) -> None:
    # GIVEN sglang 0.4.5's overlap worker thread failing inside a batch it was handed
    report = _analyze(tmp_path, _overlap_traceback(FORWARD_THREAD))
    # THEN it crashed while serving: the thread runs only the batches the scheduler's request loop hands it
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "serving", "serving")


def test_the_overlap_workers_constructor_is_no_request(tmp_path: Path) -> None:
    # GIVEN (metamorphic) the same file's constructor, loading the model, in place of the forward thread
    inner = [
        (
            f"{SRT}/managers/tp_worker_overlap_thread.py",
            63,
            "__init__",
            "self.worker = TpModelWorker(server_args, gpu_id, tp_rank, dp_rank, nccl_port)",
        ),
    ]
    report = _analyze(tmp_path, _overlap_traceback(inner))
    # THEN nothing says it served
    assert report["verdict"] == "crashed"
    assert report["furthest_phase"] != "serving"


# --- a PD decode server's bootstrap lookup -----------------------------------------------------------------------

UCX_SEGFAULT = [
    "[gpu-node-1:12796:1:13303] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
    "address 0x7fbd60001400)",
    "==== backtrace (tid:  13303) ====",
]


@pytest.mark.parametrize("query", ["engine_rank=0", "engine_rank=3&target_dp_group=0&target_pp_rank=0"])
def test_a_bootstrap_lookup_for_a_request_is_serving(tmp_path: Path, query: str) -> None:
    # GIVEN the bootstrap server's access line of a decode receiver's lookup (0.4.6 / 0.5.5 queries), then a crash
    lines = [
        f'[2025-05-28 09:43:43] 127.0.0.1 [28/May/2025:09:43:43 +0000] "GET /route?{query} HTTP/1.1" 200 262 "-" '
        '"python-requests/2.32.3"',
        *UCX_SEGFAULT,
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN it failed while the PD pair served a request
    assert report["furthest_phase"] == "serving"


def test_the_parallel_info_probe_and_the_registration_are_not_requests(tmp_path: Path) -> None:
    # GIVEN (metamorphic) the lookups a start-up makes: 0.5.x's rank -1 probe and a prefill rank's registration
    lines = [
        '[2025-11-02 10:00:07] 10.0.0.12 [02/Nov/2025:10:00:07 +0000] "PUT /route HTTP/1.1" 200 10 "-" '
        '"python-requests/2.32.5"',
        '[2025-11-02 10:00:07] 10.0.0.12 [02/Nov/2025:10:00:07 +0000] "GET /route?engine_rank=-1&target_dp_group=-1'
        '&target_pp_rank=-1 HTTP/1.1" 200 80 "-" "python-requests/2.32.5"',
        *UCX_SEGFAULT,
    ]
    report = _analyze(tmp_path, lines)
    # THEN nothing says it served
    assert report["furthest_phase"] != "serving"


# --- vLLM V0's step: the executor's and the worker's execute_model ---------------------------------------------

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
V0_PREFIX = "(VllmWorkerProcess pid=350) ERROR 01-29 20:00:47 multiproc_worker_utils.py:240] "


def _v0_worker_traceback(method: str, inner: list[tuple[str, int, str, str]]) -> list[str]:
    lines = [
        f"Exception in worker VllmWorkerProcess while processing method {method}.",
        "Traceback (most recent call last):",
        f'  File "{VLLM}/executor/multiproc_worker_utils.py", line 234, in _run_worker_process',
        "    output = executor(*args, **kwargs)",
    ]
    for path, number, function, code in inner:
        lines += [f'  File "{path}", line {number}, in {function}', f"    {code}"]
    lines.append("RuntimeError: CUDA error: an illegal memory access was encountered")
    return [V0_PREFIX + line for line in lines]


def test_a_v0_worker_failing_in_its_execution_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN a V0 remote worker's traceback through the loop a distributed executor starts for a step (0.6.6)
    inner = [
        (
            f"{VLLM}/worker/worker_base.py",
            85,
            "start_worker_execution_loop",
            "output = self.execute_model(execute_model_req=None)",
        ),
        (f"{VLLM}/worker/worker_base.py", 343, "execute_model", "output = self.model_runner.execute_model("),
    ]
    report = _analyze(tmp_path, _v0_worker_traceback("start_worker_execution_loop", inner))
    # THEN it crashed serving: only the engine's step reaches that loop
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "serving")


def test_a_v0_worker_failing_in_its_profile_run_is_no_request(tmp_path: Path) -> None:
    # GIVEN (metamorphic) the same worker failing in the KV profile, which runs the model runner's execute_model
    inner = [
        (f"{VLLM}/worker/worker.py", 202, "determine_num_available_blocks", "self.model_runner.profile_run()"),
        (
            f"{VLLM}/worker/model_runner.py",
            1331,
            "profile_run",
            "self.execute_model(model_input, kv_caches, intermediate_tensors)",
        ),
    ]
    report = _analyze(tmp_path, _v0_worker_traceback("determine_num_available_blocks", inner))
    # THEN it is the KV cache's step, not serving
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "kv_cache")


# --- SGLang's scheduler step, its event loop's frame cut away ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "function", "code"),
    [
        (
            "managers/scheduler.py",
            "run_batch",
            "logits_output, next_token_ids = self.tp_worker.forward_batch_generation(",
        ),
        ("managers/scheduler.py", "get_next_batch_to_run", "new_batch = self.get_new_batch_prefill()"),
        (
            "managers/scheduler_output_processor_mixin.py",
            "process_batch_result_decode",
            "next_token_ids = next_token_ids.tolist()",
        ),
    ],
)
def test_a_scheduler_traceback_through_its_step_is_serving(tmp_path: Path, path: str, function: str, code: str) -> None:
    # GIVEN a scheduler's exception whose paste starts at a step the event loop calls (the loop's own frame cut)
    lines = [
        "[2025-12-22 19:08:58 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{SRT}/{path}", line 1385, in {function}',
        f"    {code}",
        "RuntimeError: CUDA error: device-side assert triggered",
    ]
    report = _analyze(tmp_path, lines)
    # THEN it crashed serving: start-up never calls the loop's steps
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "serving")


def test_the_schedulers_constructor_is_no_step(tmp_path: Path) -> None:
    # GIVEN (metamorphic) the same exception raised in the scheduler's constructor, which builds the model worker
    lines = [
        "[2025-12-22 19:08:58 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{SRT}/managers/scheduler.py", line 245, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        "RuntimeError: CUDA error: device-side assert triggered",
    ]
    report = _analyze(tmp_path, lines)
    # THEN nothing says it served
    assert report["verdict"] == "crashed"
    assert report["furthest_phase"] != "serving"
