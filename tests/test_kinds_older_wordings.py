"""Wordings and layouts of older releases that no rule read (fresh-aa, issue 25 kind C): PyTorch Lightning 1.x's
`All DDP processes registered`, wandb's run header, DeepSpeed's PipelineEngine set-up, argparse's refusal, glibc's
assertion message, vLLM's loggers under a program's own logging format, FastChat's and LLaVA's worker logger,
SGLang 0.1's rpyc model servers and TensorRT-LLM's runners' `Load engine takes`. Each written from the format its
source prints, judged end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logphase.logs.reader import clean_line
from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report


def _cause_line(report: dict[str, Any]) -> int:
    cause = report["root_cause"]
    assert cause is not None
    line: int = cause["line"]
    return line


# --- PyTorch Lightning 1.x: rank 0's word that init_process_group returned ------------------------------------------

_DASHES = "-" * 100


@pytest.mark.parametrize(
    "registered",
    [
        "All DDP processes registered. Starting ddp with 2 processes",  # 1.2.10, 1.4.9
        "All distributed processes registered. Starting with 2 processes",  # 1.5.10
    ],
)
def test_lightning_registered_line_ends_dist_init(tmp_path: Path, registered: str) -> None:
    # GIVEN a two-process Lightning job: seeds, each rank's init line, then rank 0's block after the group formed
    lines = [
        "Global seed set to 42",
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2",
        "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/2",
        _DASHES,
        "distributed_backend=nccl",
        registered,
        _DASHES,
    ]
    # WHEN the log, ended there, is analysed
    report = _analyze(tmp_path, lines)
    # THEN the job is stalled in dist_init, its last step the group's forming
    assert (report["phase"], report["verdict"]) == ("dist_init", "stalled")
    assert _cause_line(report) == 6


# --- wandb's run header ---------------------------------------------------------------------------------------------


def test_wandb_run_header_is_a_set_up_step(tmp_path: Path) -> None:
    # GIVEN a training script's start: wandb's header (termlog's `wandb: ` lines) and Lightning's device notes
    lines = [
        "wandb: Currently logged in as: alice (team). Use `wandb login --relogin` to force relogin",
        "wandb: Tracking run with wandb version 0.13.10",
        "wandb: Run data is saved locally in /home/alice/runs/wandb/run-20230427_161843-1xhtm42d",
        "wandb: Run `wandb offline` to turn off syncing.",
        "wandb: Syncing run summarizer-7",
        "wandb: ⭐️ View project at https://wandb.ai/team/summarizer",
        "wandb: 🚀 View run at https://wandb.ai/team/summarizer/runs/1xhtm42d",
        "",
        "GPU available: True (cuda), used: True",
        "TPU available: False, using: 0 TPU cores",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the start is in launch, stalled after the run was made
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert _cause_line(report) == 5


def test_wandb_run_header_after_dist_init_keeps_the_furthest_step(tmp_path: Path) -> None:
    # GIVEN a job whose process group formed, then wandb.init on rank 0 (its header)
    lines = [
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2",
        _DASHES,
        "distributed_backend=nccl",
        "All DDP processes registered. Starting ddp with 2 processes",
        _DASHES,
        "wandb: Tracking run with wandb version 0.15.0",
        "wandb: Syncing run bright-sun-3",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the furthest step the log proves stays dist_init
    assert report["furthest_phase"] == "dist_init"


# --- DeepSpeed PipelineEngine under pdsh ----------------------------------------------------------------------------


def test_deepspeed_pipeline_stages_under_pdsh_place_dist_init(tmp_path: Path) -> None:
    # GIVEN a pipeline-parallel job's engine set-up as pdsh relays it from two nodes (`host: ` before each line)
    stage = (
        "STAGE_PARAMS=2646199296 (2646.199M) TOTAL_PARAMS=20553056256 (20553.056M) "
        "UNIQUE_PARAMS=20553056256 (20553.056M)"
    )
    lines = [
        "node101: [2023-07-05 15:08:29,918] [INFO] [engine.py:83:__init__] CONFIG: micro_batches=6 micro_batch_size=1",
        f"node101: [2023-07-05 15:08:30,157] [INFO] [engine.py:138:__init__] RANK=0 STAGE=0 LAYERS=13 [0, 13) {stage}",
        f"node101: [2023-07-05 15:08:30,157] [INFO] [engine.py:138:__init__] RANK=4 STAGE=1 LAYERS=12 [13, 25) {stage}",
        f"node102: [2023-07-05 15:08:30,158] [INFO] [engine.py:138:__init__] RANK=8 STAGE=2 LAYERS=12 [25, 37) {stage}",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the job stalled while setting its process groups up, after the last stage's line
    assert (report["phase"], report["verdict"]) == ("dist_init", "stalled")
    assert _cause_line(report) == 4


# --- argparse's refusal of a command line ---------------------------------------------------------------------------


def test_argparse_error_is_the_cause_before_the_launchers_report(tmp_path: Path) -> None:
    # GIVEN a worker's usage and argparse's error, then torch elastic's report of the exit (status 2)
    lines = [
        "usage: train.py [-h] [--data DIR] [--epochs N] [--local_rank LOCAL_RANK]",
        "train.py: error: unrecognized arguments: --local-rank=1",
        "[2024-06-13 17:39:24,518] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 2) "
        "local_rank: 0 (pid: 2465952) of binary: /usr/bin/python3",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run crashed, and argparse's message is why
    assert report["verdict"] == "crashed"
    assert _cause_line(report) == 2


# --- glibc's assertion message --------------------------------------------------------------------------------------


def test_failed_native_assertion_aborts(tmp_path: Path) -> None:
    # GIVEN an extension's assert() failing under python, then the DeepSpeed launcher killing its worker
    lines = [
        "python: /opt/conda/lib/python3.8/site-packages/deepspeed/ops/csrc/aio/py_lib/deepspeed_py_aio_handle.cpp:159: "
        "void deepspeed_aio_handle_t::_stop_threads(): Assertion `0 == _num_pending_ops' failed.",
        "Killing subprocess 484",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the process aborted (abort() raises SIGABRT), the assertion the cause
    assert report["verdict"] == "aborted"
    assert _cause_line(report) == 1


def test_cuda_device_assert_stays_cudas_own(tmp_path: Path) -> None:
    # GIVEN CUDA's device-side assert, which reads like glibc's but names a block and a thread
    lines = [
        "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion "
        '`-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.',
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN it is not read as glibc's assertion
    assert report["root_cause"] is None or report["root_cause"]["rule"] != "python.native.assertion_failed"


# --- vLLM's loggers under a program's own logging format ------------------------------------------------------------


def test_vllm_lines_in_a_python_logging_format_are_read(tmp_path: Path) -> None:
    # GIVEN vLLM V0's KV-cache lines and a stats line of a running request, as `%(asctime)s - %(name)s -
    # %(levelname)s - %(message)s` with datefmt `%Y-%m-%d %H:%M:%S` prints them
    lines = [
        "2024-12-20 15:18:19 - vllm.executor.distributed_gpu_executor - INFO - # GPU blocks: 50231, # CPU blocks: 8192",
        "2024-12-20 15:18:19 - vllm.executor.distributed_gpu_executor - INFO - Maximum concurrency for 32768 tokens "
        "per request: 24.53x",
        "2024-12-20 15:30:10 - vllm.engine.metrics - INFO - Avg prompt throughput: 120.0 tokens/s, Avg generation "
        "throughput: 45.7 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 3.1%, "
        "CPU KV cache usage: 0.0%.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN they are vLLM's: the server serves
    assert report["system"] == "vllm"
    assert report["phase"] == "serving"


def test_another_loggers_line_in_that_format_is_not_vllms(tmp_path: Path) -> None:
    # GIVEN the same format, the message a vLLM rule reads, but a program's own logger
    lines = ["2024-12-20 15:18:19 - __main__ - INFO - # GPU blocks: 50231, # CPU blocks: 8192"]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN nothing says vLLM
    assert report["system"] != "vllm"


# --- FastChat's and LLaVA's worker logger ---------------------------------------------------------------------------


def test_fastchat_worker_traceback_cut_names_its_innermost_frame(tmp_path: Path) -> None:
    # GIVEN a FastChat worker's stderr, each line through its `%(asctime)s | %(levelname)s | %(name)s | ` logger,
    # under docker compose, the paste cut inside the traceback
    pre = "xllm-worker-1  | 2024-08-27 12:54:55 | ERROR | stderr | "
    lines = [
        f"{pre}Traceback (most recent call last):",
        f'{pre}  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        f"{pre}    return _run_code(code, main_globals, None,",
        f'{pre}  File "/usr/local/lib/python3.10/dist-packages/fastchat/serve/sglang_worker.py", line 290, in <module>',
        f"{pre}    runtime = sgl.Runtime(",
        f'{pre}  File "/usr/local/lib/python3.10/dist-packages/sglang/api.py", line 40, in Runtime',
        f"{pre}    return Runtime(*args, **kwargs)",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN it crashed, and the cut traceback's innermost frame is the cause
    assert report["verdict"] == "crashed"
    assert _cause_line(report) == 6


# --- SGLang 0.1's rpyc model servers --------------------------------------------------------------------------------


def test_rpyc_model_servers_then_silence_is_a_launch_stall(tmp_path: Path) -> None:
    # GIVEN two TP ranks' rpyc servers listening and taking the router's connections, then nothing
    lines = [
        "server started on [0.0.0.0]:30016",
        "server started on [0.0.0.0]:30015",
        "accepted ('127.0.0.1', 41644) with fd 33",
        "welcome ('127.0.0.1', 41644)",
        "accepted ('127.0.0.1', 34388) with fd 34",
        "welcome ('127.0.0.1', 34388)",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the start stalled in launch, after the last connection was taken
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert _cause_line(report) == 6


# --- TensorRT-LLM's runners: `Load engine takes` --------------------------------------------------------------------


def test_load_engine_after_the_cpp_executors_kv_cache_ends_it(tmp_path: Path) -> None:
    # GIVEN a C++ runner's KV-cache lines, then run.py's `Load engine takes`
    lines = [
        "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 128",
        "[TensorRT-LLM][INFO] Number of tokens per block: 64.",
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 35.07 GiB for max tokens in paged KV cache (1149312).",
        "[10/09/2024-11:35:25] [TRT-LLM] [I] Load engine takes: 8.604084253311157 sec",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run is in kv_cache, its last step the engine's load
    assert (report["phase"], report["verdict"]) == ("kv_cache", "stalled")
    assert _cause_line(report) == 4


def test_load_engine_after_the_engine_alone_claims_no_kv_cache(tmp_path: Path) -> None:
    # GIVEN the Python runner: TensorRT's engine deserialised, then `Load engine takes` (no KV cache yet)
    lines = [
        "[03/23/2025-17:30:17] [TRT] [I] Loaded engine size: 15380 MiB",
        "[03/23/2025-17:30:26] [TRT-LLM] [I] Load engine takes: 9.029225826263428 sec",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run reached no KV cache
    assert report["furthest_phase"] != "kv_cache"


# --- pytest's failure lines, and GitHub Actions' line links ---------------------------------------------------------


def test_a_traceback_in_pytests_failure_lines_is_read(tmp_path: Path) -> None:
    # GIVEN a test's AssertionError quoting a child's traceback, each line behind pytest's `E` and the statement's
    # indentation, the message's lines two more (pytest's explanation), the paste cut inside a frame
    lines = [
        "E       AssertionError: ",
        "E         Traceback (most recent call last):",
        'E           File "/opt/py3/bin/lmdeploy", line 8, in <module>',
        "E             sys.exit(run())",
        'E           File "/opt/py3/lib/python3.10/site-packages/lmdeploy/cli/cli.py", line 166, in convert',
        "E             main(**kwargs)",
        'E           File "/opt/py3/lib/python3.10/site-packages/lmdeploy/converter.py", line 354, in main',
        "E             tm_model.export()",
        'E           File "/opt/py3/lib/python3.1',
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN it crashed, the cut traceback's innermost whole frame the cause
    assert report["verdict"] == "crashed"
    assert _cause_line(report) == 7


@pytest.mark.parametrize(
    ("pasted", "printed"),
    [
        (
            '  File "/x/llama.py", line [117](https://github.com/InternLM/lmdeploy/actions/runs/11474279983/job/'
            "31936819532#step:9:118), in readers",
            '  File "/x/llama.py", line 117, in readers',
        ),
        (
            '  File "/x/http11.py", line [113](https://github.com/astral-sh/uv/actions/runs/11386806549/job/'
            "31680084192?pr=8269#step:7:114), in handle_request",
            '  File "/x/http11.py", line 113, in handle_request',
        ),
    ],
)
def test_a_line_number_linked_by_github_actions_reads_as_the_number(pasted: str, printed: str) -> None:
    # GIVEN a frame whose line number GitHub Actions' log view linked to a line of the job's step
    # WHEN the reader reads it
    (read,) = clean_line(pasted.encode(), 1, 0)
    # THEN the number is as Python printed it
    assert read.text == printed


def test_a_writers_link_to_an_actions_job_stays(tmp_path: Path) -> None:
    # GIVEN a link whose text is no number, to the same kind of address
    pasted = "see [the job](https://github.com/o/r/actions/runs/1/job/2#step:3:4) for details"
    # WHEN the reader reads it
    (read,) = clean_line(pasted.encode(), 1, 0)
    # THEN it is the writer's and stays
    assert read.text == pasted
