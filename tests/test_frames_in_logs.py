"""Where a traceback in a log places its rank: the step its frames show, the call its innermost source line
makes when the paste is cut there, and a serving loop's frame while the server is still starting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

SRT = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


def _scheduler_traceback(stamp: str, calls: list[tuple[str, int, str, str]], tag: str = " TP0") -> list[str]:
    lines = [f"[{stamp}{tag}] Scheduler hit an exception: Traceback (most recent call last):"]
    for path, line, function, code in calls:
        lines += [f'  File "{SRT}/{path}", line {line}, in {function}', f"    {code}"]
    return lines


def test_a_traceback_cut_under_a_frame_is_placed_by_the_call_its_source_line_makes(tmp_path: Path) -> None:
    # GIVEN a scheduler traceback cut after ModelRunner.__init__'s line that calls init_torch_distributed
    lines = _scheduler_traceback(
        "2025-04-21 02:05:39",
        [
            ("managers/scheduler.py", 2059, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
            ("model_executor/model_runner.py", 183, "__init__", "min_per_gpu_memory = self.init_torch_distributed()"),
        ],
    )
    # WHEN analysed THEN crashed, in dist_init: the call names the step the next frame would have shown
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "dist_init")


def test_a_call_that_names_no_step_leaves_the_frames_phase(tmp_path: Path) -> None:
    # GIVEN the same traceback cut under a line that calls a helper no anchor knows
    lines = _scheduler_traceback(
        "2025-04-21 02:05:39",
        [
            ("managers/scheduler.py", 2059, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
            ("model_executor/model_runner.py", 183, "__init__", "self.check_quantized_moe_compatibility()"),
        ],
    )
    # WHEN analysed THEN crashed at launch (run_scheduler_process), nothing more
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")


EVENT_LOOP = [("managers/scheduler.py", 2336, "run_scheduler_process", "scheduler.event_loop_overlap()")]
HTTP_START = [
    "[2025-06-27 19:02:10] INFO:     Started server process [2122]",
    "[2025-06-27 19:02:10] INFO:     Waiting for application startup.",
    "[2025-06-27 19:02:10] INFO:     Application startup complete.",
]


# The same lines as collected by `docker logs -t` and by `kubectl logs --prefix` (their envelopes are removed first)
WRAPPERS: dict[str, Callable[[int, str], str]] = {
    "plain": lambda n, line: line,
    "docker logs -t": lambda n, line: f"2025-06-27T19:02:{10 + n:02d}.123456789Z {line}",
    "kubectl logs --prefix": lambda n, line: f"[pod/sglang-7d9f-abcde/server] {line}",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_a_crash_in_the_event_loop_while_the_server_starts_is_the_warmups(tmp_path: Path, wrapper: str) -> None:
    # GIVEN uvicorn starting (no ready line yet), then the scheduler of a TP=1 server (untagged since SGLang
    # 0.4.6) failing inside its event loop, as pasted or as a collector kept them
    lines = HTTP_START + _scheduler_traceback("2025-06-27 19:02:11", EVENT_LOOP, tag="")
    wrapped = [WRAPPERS[wrapper](n, line) for n, line in enumerate(lines)]
    # WHEN analysed THEN crashed during warmup: the loop was running the warmup request
    report = _analyze(tmp_path, wrapped)
    assert (report["verdict"], report["phase"]) == ("crashed", "warmup")


def test_a_crash_in_the_event_loop_of_a_log_that_starts_mid_run_is_the_servings(tmp_path: Path) -> None:
    # GIVEN only the scheduler failing inside its event loop (an excerpt of a running server)
    lines = _scheduler_traceback("2025-06-27 19:02:11", EVENT_LOOP, tag="")
    # WHEN analysed THEN crashed during serving
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


SERVING_LOOP = ("managers/scheduler.py", 2415, "event_loop_normal", "self.process_input_requests(recv_reqs)")


@pytest.mark.parametrize(
    ("calls", "error"),
    [
        (
            [
                ("managers/scheduler.py", 2415, "event_loop_normal", "result = self.run_batch(batch)"),
                ("managers/scheduler.py", 1602, "run_batch", "self.draft_worker.forward_batch_speculative_generation("),
                ("speculative/eagle_worker.py", 310, "forward_batch_speculative_generation", "self.verify(batch)"),
            ],
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ),
        (
            [
                SERVING_LOOP,
                ("managers/scheduler.py", 1210, "init_weights_update_group", "success, message = self.tp_worker."),
                ("model_executor/model_runner.py", 744, "init_weights_update_group", "self._model_update_group = "),
                ("../../torch/distributed/c10d_logger.py", 81, "init_process_group", "return func(*args, **kwargs)"),
            ],
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317",
        ),
    ],
    ids=["eagle-verify-while-serving", "weight-update-group-while-serving"],
)
def test_an_inner_frame_of_an_earlier_step_never_takes_a_serving_loop_back_to_start_up(
    tmp_path: Path, calls: list[tuple[str, int, str, str]], error: str
) -> None:
    # GIVEN a mid-run scheduler traceback whose outer frame is the serving loop and whose inner frames are in
    # code that also runs at start-up (the EAGLE worker's module; a process group's init for a weight update)
    lines = [*_scheduler_traceback("2025-06-02 10:00:01", calls), error]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash while serving: the inner frame refines no start-up step here
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "serving", "serving")


def test_a_faulthandler_dump_is_placed_by_its_latest_step_whatever_frame_comes_first(tmp_path: Path) -> None:
    # GIVEN faulthandler's dump (most recent call first) of the weight-update group's init under the serving loop
    lines = [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f3a2c9ff640 (most recent call first):",
        f'  File "{TORCH}/distributed/c10d_logger.py", line 81 in wrapper',
        f'  File "{TORCH}/distributed/c10d_logger.py", line 95 in init_process_group',
        f'  File "{SRT}/model_executor/model_runner.py", line 744 in init_weights_update_group',
        f'  File "{SRT}/managers/scheduler.py", line 1210 in init_weights_update_group',
        f'  File "{SRT}/managers/scheduler.py", line 2415 in event_loop_normal',
        f'  File "{SRT}/managers/scheduler.py", line 2950 in run_scheduler_process',
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN aborted while serving: the serving loop is the latest step on the stack, not the innermost frame's
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "serving")


def test_a_capture_under_the_draft_workers_init_is_the_drafts(tmp_path: Path) -> None:
    # GIVEN a start-up traceback through the draft worker's init down into the CUDA-graph runner's capture
    lines = [
        *_scheduler_traceback(
            "2025-06-02 10:00:01",
            [
                (
                    "managers/scheduler.py",
                    2950,
                    "run_scheduler_process",
                    "scheduler = Scheduler(server_args, port_args)",
                ),
                ("managers/scheduler.py", 321, "__init__", "self.draft_worker = EAGLEWorker("),
                ("speculative/eagle_worker.py", 131, "__init__", "self.init_cuda_graphs()"),
                (
                    "speculative/eagle_worker.py",
                    240,
                    "init_cuda_graphs",
                    "self.cuda_graph_runner = EAGLEDraftCudaGraphRunner(self)",
                ),
                ("model_executor/cuda_graph_runner.py", 412, "capture_one_batch_size", "run_once()"),
            ],
        ),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash in the capture, and the capture row is the draft model's
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "cuda_graph")
    assert [(row["phase"], row["draft"]) for row in report["phases"]] == [("cuda_graph", True)]


def test_an_event_loop_a_server_runs_in_from_launch_proves_no_serving(tmp_path: Path) -> None:
    # GIVEN vLLM's API server failing at start-up: its whole life runs under `uvloop.run(run_server(args))`
    vllm = "/usr/local/lib/python3.12/dist-packages/vllm"
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{vllm}/entrypoints/cli/serve.py", line 27, in cmd',
        "    uvloop.run(run_server(args))",
        '  File "/usr/local/lib/python3.12/dist-packages/uvloop/__init__.py", line 109, in run',
        "    return __asyncio.run(",
        '  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run',
        "    return self._loop.run_until_complete(task)",
        f'  File "{vllm}/entrypoints/openai/api_server.py", line 1078, in run_server',
        "    async with build_async_engine_client(args) as engine_client:",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash at launch, not while serving: an asyncio or uvloop frame says nothing of the phase
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "launch")


# TensorRT-LLM's TllmException text (cpp/tensorrt_llm/common/tllmException.cpp): `[TensorRT-LLM][ERROR] <message>
# (<file>:<line>)`, then its trace, a frame a line, `%-3d %*p %s + %zd` (innermost first, frame 0 skipped).
def _tllm_trace(symbols: list[str]) -> list[str]:
    return [f"{n:<3d} {0x7F3A10000000 + 0x1000 * n:#18x} {symbol} + {16 * n}" for n, symbol in enumerate(symbols, 1)]


KV_POOLS = [
    "void tensorrt_llm::common::check<cudaError>(cudaError, char const*, char const*, int)",
    "tensorrt_llm::runtime::BufferManager::gpuSync(nvinfer1::Dims64, nvinfer1::DataType)",
    "tensorrt_llm::batch_manager::kv_cache_manager::BlockManager::allocatePools(bool)",
    "tensorrt_llm::batch_manager::kv_cache_manager::KVCacheManager::allocatePools(bool)",
]
CUDA_OOM = (
    "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory"
    " (/src/cpp/tensorrt_llm/runtime/tllmBuffers.h:92)"
)


def test_a_cpp_exceptions_trace_through_the_kv_cache_pools_places_the_crash_in_kv_cache(tmp_path: Path) -> None:
    # GIVEN a TllmException for a cudaMalloc whose trace runs through KVCacheManager::allocatePools
    lines = [CUDA_OOM, *_tllm_trace(KV_POOLS)]
    # WHEN analysed THEN crashed, in kv_cache: the pools are allocated once, where the manager is made
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "kv_cache")


def test_a_plugins_deserialization_in_the_trace_places_the_crash_in_weight_load(tmp_path: Path) -> None:
    # GIVEN the exception as pybind11 raised it in Python, its trace through a plugin creator's deserializePlugin
    lines = [
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mType == nvinfer1::DataType::kHALF"
        " (/src/cpp/tensorrt_llm/plugins/common/plugin.h:120)",
        *_tllm_trace(
            [
                "tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&)",
                "tensorrt_llm::plugins::LookupPlugin::LookupPlugin(void const*, unsigned long)",
                "tensorrt_llm::plugins::LookupPluginCreator::deserializePlugin("
                "char const*, void const*, unsigned long)",
            ]
        ),
    ]
    # WHEN analysed THEN crashed, in weight_load: TensorRT deserializes plugins only while it loads an engine
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")


def test_native_frames_no_anchor_names_place_nothing(tmp_path: Path) -> None:
    # GIVEN the same error whose trace stops in the buffer manager, and one through a KV-cache call every request makes
    for symbols in (
        KV_POOLS[:2],
        [
            *KV_POOLS[:2],
            "tensorrt_llm::batch_manager::kv_cache_manager::KVCacheManager::addSequence(unsigned long, int, int)",
        ],
    ):
        # WHEN analysed THEN crashed with no step: neither frame runs in one phase only
        report = _analyze(tmp_path, [CUDA_OOM, *_tllm_trace(symbols)])
        assert (report["verdict"], report["phase"]) == ("crashed", "launch")


def test_a_native_frame_in_no_failures_text_places_nothing(tmp_path: Path) -> None:
    # GIVEN the KV-pool frames after a line of the server's that is no failure (a frame printed out of any trace)
    lines = [
        "[TensorRT-LLM][INFO] Engine version 0.20.0 found in the config file,"
        " assuming engine(s) built by new builder API.",
        *_tllm_trace(KV_POOLS),
    ]
    # WHEN analysed THEN still in weight_load, where that line put it: a native frame is read inside a failure's
    # text only
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")


VLLM_PS = "/usr/local/lib/python3.11/site-packages/vllm/distributed/parallel_state.py"
VLLM_RUNNER = "/usr/local/lib/python3.11/site-packages/vllm/v1/worker/gpu_model_runner.py"


def _group_gather_frames(outer: list[str]) -> list[str]:
    """A Python 3.11 traceback's frames through vLLM's TP group all_gather into torch's c10d logger, cut on both
    sides (no `Traceback` line, no exception line), under `outer` frames."""
    return [
        *outer,
        "    return get_tp_group().all_gather(input_, dim)",
        f'  File "{VLLM_PS}", line 444, in all_gather',
        "    torch.distributed.all_gather_into_tensor(output_tensor,",
        f'  File "{TORCH}/distributed/c10d_logger.py", line 85, in wrapper',
        "    msg_dict = _get_msg_dict(func.__name__, *args, **kwargs)",
        f'  File "{TORCH}/_tensor.py", line 523, in __repr__',
        "    return torch._tensor_str._str(self, tensor_contents=tensor_contents)",
    ]


def test_a_group_collectives_frame_proves_the_process_group_was_up(tmp_path: Path) -> None:
    # GIVEN frames of a paste cut on both sides, through a GroupCoordinator's all_gather (a method of a group that
    # exists only once the model-parallel groups were built), no phase line
    lines = _group_gather_frames([])
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash that reached dist_init at least (wherever the stack was): the floor, not a place
    assert report["verdict"] == "crashed"
    assert report["furthest_phase"] == "dist_init"


def test_a_group_collective_under_a_capture_frame_stays_in_the_capture(tmp_path: Path) -> None:
    # GIVEN the same frames under vLLM's model runner capturing graphs (an anchored step after dist_init)
    outer = [
        f'  File "{VLLM_RUNNER}", line 2721, in capture_model',
        "    self._capture_cudagraphs(compilation_cases)",
    ]
    lines = _group_gather_frames(outer)
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the capture places the stack; the collective's floor does not take it back
    assert report["furthest_phase"] == "cuda_graph"
