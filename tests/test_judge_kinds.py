"""Phase judgement of kinds met on the fresh-f/g batches, each from the format its release prints: vllm-ascend's capture
bar, a Ray Serve replica's request frames, torch's JIT extension build, the lazy compile step as the furthest reached,
and SGLang's warmup-shaped request lines after the ready line; a lazy compile that a later step follows (vLLM V1's
profiling run compiles before the KV cache is sized) is left behind by that step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from logphase.packs import load_packs
from tests.conftest import run_json
from tests.equivalence.reports import fast, plain

RAY = "/usr/local/lib/python3.12/dist-packages/ray/serve/_private"


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


# --- vllm-ascend: `Capturing ACL graphs ({}, {})` is the capture bar (0.11.0rc1 model_runner_v1.py) --------------


def test_a_worker_that_fails_under_vllm_ascends_capture_bar_failed_in_cuda_graph(tmp_path: Path) -> None:
    # GIVEN vLLM's KV-cache sizing lines, vllm-ascend's ACL graph capture bar at its start, then a worker's exception
    lines = [
        "(EngineCore_0 pid=100) INFO 08-25 04:33:08 [kv_cache_utils.py:849] GPU KV cache size: 100,000 tokens",
        "(EngineCore_0 pid=100) INFO 08-25 04:33:08 [kv_cache_utils.py:853] Maximum concurrency for 4,096 tokens per "
        "request: 24.41x",
        "Capturing ACL graphs (decode, FULL):   0%|          | 0/8 [00:00<?, ?it/s]",
        "(VllmWorker TP1 pid=102) ERROR 08-25 04:33:09 [multiproc_executor.py:596] WorkerProc hit an exception.",
        "(VllmWorker TP1 pid=102) ERROR 08-25 04:33:09 [multiproc_executor.py:596] Traceback (most recent call last):",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash in the capture step the bar opened
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "cuda_graph", "cuda_graph")


def test_an_ascend_capture_bar_that_advanced_to_the_end_of_the_log_is_still_capturing(tmp_path: Path) -> None:
    # GIVEN the ACL bar of the mixed prefill-decode pass advancing, and the log ends there
    lines = [
        "(EngineCore_0 pid=100) INFO 11-06 03:33:00 [kv_cache_utils.py:849] GPU KV cache size: 100,000 tokens",
        "Capturing ACL graphs (mixed prefill-decode, PIECEWISE):  40%|████      | 6/15 [00:03<00:04,  1.90it/s]",
        "Capturing ACL graphs (mixed prefill-decode, PIECEWISE):  47%|████▋     | 7/15 [00:04<00:04,  1.90it/s]",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run is in cuda_graph
    assert (report["phase"], report["furthest_phase"]) == ("cuda_graph", "cuda_graph")


# --- Ray Serve: a replica runs these frames only for a request (ray 2.49 serve/_private/replica.py) ---------------


def test_a_traceback_through_a_serve_replicas_request_frames_failed_while_serving(tmp_path: Path) -> None:
    # GIVEN a replica's `Request failed.` and its traceback through handle_request_streaming, _wrap_request and
    # _handle_errors_and_metrics, ending in the deployment's exception
    lines = [
        "ERROR 2026-05-10 22:02:00,377 my_app_LLMServer abcd1234 5b1e9f25 -- Request failed.",
        "Traceback (most recent call last):",
        f'  File "{RAY}/replica.py", line 540, in _handle_errors_and_metrics',
        "    yield _status_code_callback",
        f'  File "{RAY}/replica.py", line 650, in handle_request_streaming',
        "    with self._wrap_request(request_metadata) as status_code_callback:",
        f'  File "{RAY}/replica.py", line 1860, in call_user_generator',
        "    raise e",
        "RuntimeError: engine dead",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash during serving
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "serving", "serving")


def test_a_replica_that_fails_in_its_constructor_is_not_serving(tmp_path: Path) -> None:
    # GIVEN a traceback through the replica's initialisation, none of its request frames
    lines = [
        "Traceback (most recent call last):",
        f'  File "{RAY}/replica.py", line 1030, in initialize_and_get_metadata',
        "    await self._replica_impl.initialize(deployment_config)",
        "RuntimeError: CUDA out of memory",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash, never said to be serving
    assert report["verdict"] == "crashed"
    assert report["furthest_phase"] != "serving"


# --- torch.utils.cpp_extension: a C++/CUDA op built on first use is the compile step -----------------------------


def test_a_log_that_ends_after_torchs_extensions_root_line_stalled_in_compile(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's ZeRO-3 model init end, then each rank's `Using ... as PyTorch extensions root...`
    lines = [
        "[2024-01-02 07:30:41,488] [INFO] [partition_parameters.py:348:__exit__] finished initializing model - "
        "num_params = 517, num_elems = 2.78B",
        "Using /root/.cache/torch_extensions/py39_cu117 as PyTorch extensions root...",
        "Using /root/.cache/torch_extensions/py39_cu117 as PyTorch extensions root...",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled in compile, which is also the furthest step reached, and its line is where it stopped
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("stalled", "compile", "compile")
    assert report["root_cause"]["text"].endswith("as PyTorch extensions root...")


def test_building_and_loading_an_extension_are_steps_of_the_compile(tmp_path: Path) -> None:
    # GIVEN the root line, then `Building extension module fused_adam...` and `Loading extension module fused_adam...`
    lines = [
        "Using /home/u/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
        "Building extension module fused_adam...",
        "Loading extension module fused_adam...",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run is in compile and the last step is where it was when the log ended
    assert (report["phase"], report["furthest_phase"]) == ("compile", "compile")
    assert report["root_cause"]["text"] == "Loading extension module fused_adam..."


# --- the lazy compile step: the furthest phase is never behind the phase the run is in ----------------------------


def test_vllm_compiling_after_its_weights_reached_compile(tmp_path: Path) -> None:
    # GIVEN vLLM V1's weight-load end, then torch.compile's Dynamo transform as the latest news
    lines = [
        "INFO 05-23 09:31:22 [loader.py:458] Loading weights took 38.52 seconds",
        "INFO 05-23 09:31:24 [gpu_model_runner.py:1347] Model loading took 18.1450 GiB and 40.766484 seconds",
        "INFO 05-23 09:31:43 [backends.py:430] Dynamo bytecode transform time: 19.00 s",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN it is in compile, and compile is the furthest it reached
    assert (report["phase"], report["furthest_phase"]) == ("compile", "compile")


def test_a_compile_before_the_kv_cache_ends_leaves_the_furthest_at_the_later_step(tmp_path: Path) -> None:
    # GIVEN torch.compile lines, then the KV cache sized and the capture bar (the compile is not the latest news)
    lines = [
        "INFO 05-23 09:31:43 [backends.py:430] Dynamo bytecode transform time: 19.00 s",
        "INFO 05-23 09:31:50 [kv_cache_utils.py:634] GPU KV cache size: 100,000 tokens",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  45%|████▍     | 30/67 [00:03<00:03, 10.2it/s]",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the capture is the phase and the furthest
    assert (report["phase"], report["furthest_phase"]) == ("cuda_graph", "cuda_graph")


def test_a_compile_then_the_kv_cache_sized_in_one_process_reached_kv_cache(tmp_path: Path) -> None:
    # GIVEN vLLM V1's order in one process: the profiling run compiles (Dynamo, the general shape), then the KV
    # cache is sized from it (gpu_worker.determine_available_memory), and the log ends there
    lines = [
        "INFO 07-08 22:40:03 [backends.py:161] Compiling a graph for general shape takes 21.30 s",
        "INFO 07-08 22:40:03 [monitor.py:33] torch.compile takes 27.84 s in total",
        "INFO 07-08 22:40:04 [gpu_worker.py:232] Available KV cache memory: 37.99 GiB",
        "INFO 07-08 22:40:06 [kv_cache_utils.py:716] GPU KV cache size: 1,244,832 tokens",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the run went on past the compile to the KV cache: that is where it is and the furthest it got
    assert (report["phase"], report["furthest_phase"]) == ("kv_cache", "kv_cache")


def test_workers_that_compiled_then_the_engine_sizing_the_kv_cache_reached_kv_cache(tmp_path: Path) -> None:
    # GIVEN four vLLM V1 workers' compile totals (each in its own prefix), then the engine's KV cache size, which it
    # prints only once every worker's profiling run (where they compiled) has reported
    lines = [
        "DEBUG 04-18 18:08:15 [core_client.py:421] Waiting for 1 core engine proc(s) to start: {0}",
        *(
            f"(VllmWorker rank={rank} pid={299 + rank}) INFO 04-18 18:08:2{rank} [monitor.py:33] torch.compile takes "
            f"1{5 + rank}.67 s in total"
            for rank in range(4)
        ),
        "INFO 04-18 18:08:51 [kv_cache_utils.py:634] GPU KV cache size: 233,936 tokens",
        "INFO 04-18 18:08:51 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: 7.14x",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN no worker is left behind in the compile: the run reached the KV cache
    assert (report["phase"], report["furthest_phase"]) == ("kv_cache", "kv_cache")


# --- SGLang: the warmup request's kind of line after the ready line is a real request's -------------------------

SGLANG_WARMUP = [
    "[2025-05-15 11:59:20] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[2025-05-15 11:59:21 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, ",
    '[2025-05-15 11:59:23] INFO:     127.0.0.1:8782 - "POST /generate HTTP/1.1" 200 OK',
    "[2025-05-15 11:59:23] The server is fired up and ready to roll!",
]


def test_a_prefill_batch_after_the_ready_line_is_serving(tmp_path: Path) -> None:
    # GIVEN SGLang's warmup (its prefill batch and POST /generate), the ready line, then another prefill batch
    lines = [
        *SGLANG_WARMUP,
        "[2025-05-15 12:00:01 TP0] Prefill batch. #new-seq: 1, #new-token: 16384, #cached-token: 0, token usage: 0.10, "
        "#running-req: 0, #queue-req: 0, ",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN ready, and the server got as far as serving
    assert (report["verdict"], report["furthest_phase"]) == ("ready", "serving")


def test_a_post_generate_after_the_ready_line_is_serving(tmp_path: Path) -> None:
    # GIVEN the same warmup and ready line, then a client's POST /generate
    lines = [*SGLANG_WARMUP, '[2025-05-15 12:00:01] INFO:     10.0.0.7:40112 - "POST /generate HTTP/1.1" 200 OK']
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN ready, serving
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("ready", "serving", "serving")


def test_the_warmup_alone_stays_short_of_serving(tmp_path: Path) -> None:
    # GIVEN the warmup's lines and the ready line, nothing after it
    # WHEN analysed
    report = _analyze(tmp_path, SGLANG_WARMUP)
    # THEN ready, and the furthest is the ready line: the warmup request is not traffic
    assert (report["verdict"], report["furthest_phase"]) == ("ready", "ready")


def test_a_prefill_batch_before_the_ready_line_is_the_warmups(tmp_path: Path) -> None:
    # GIVEN the HTTP server up and the warmup's prefill batch, and the log ends before the ready line
    # WHEN analysed
    report = _analyze(tmp_path, SGLANG_WARMUP[:2])
    # THEN the furthest is the warmup, not serving; the main process's own phase is its HTTP start (§4.6)
    assert (report["phase"], report["furthest_phase"]) == ("http_start", "warmup")


def test_the_fast_path_reads_the_first_request_line_after_ready_as_the_plain_path_does(tmp_path: Path) -> None:
    # GIVEN the warmup and ready line, then 2000 TP0 prefill batches and client POSTs (a steady run of prefill lines
    # that began with the warmup's, on both sides of the ready line)
    lines = list(SGLANG_WARMUP)
    for i in range(2000):
        stamp = f"2025-05-15 {12 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        if i % 3:
            lines.append(
                f"[{stamp} TP0] Prefill batch. #new-seq: 1, #new-token: {100 + i}, #cached-token: 0, "
                "token usage: 0.01, #running-req: 1, #queue-req: 0, "
            )
        else:
            lines.append(f'[{stamp}] INFO:     10.0.0.7:{4000 + i} - "POST /generate HTTP/1.1" 200 OK')
    log = tmp_path / "serving.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs()
    # WHEN reported on the plain path and on the fast path
    plain_report, fast_report = plain([log], packs), fast([log], packs)
    # THEN the same report, which has the server serving
    assert fast_report == plain_report
    assert json.loads(plain_report)["furthest_phase"] == "serving"
