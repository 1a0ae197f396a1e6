"""Kinds of input the fresh-m batch's phases were misread on, each written from the format the system prints in its
released source (the pack's rule or anchor cites it): a failure whose own text or frames say the step it ran in."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

SITE = "/usr/local/lib/python3.10/dist-packages"


def _frame(path: str, line: int, function: str, source: str, prefix: str = "") -> str:
    return f'{prefix}  File "{SITE}/{path}", line {line}, in {function}\n{prefix}    {source}\n'


def test_a_call_torch_cannot_capture_fails_in_cuda_graph_whatever_frames_follow(tmp_path: Path) -> None:
    # GIVEN ATen's assertNotCapturing text (wrapped by dynamo), then the scheduler's outer traceback through its
    # constructor only (sglang's run_scheduler_process: a launch frame)
    report = judge_text(
        tmp_path,
        "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during "
        "CUDA graph capture. If you need this call to be captured, please file an issue. Current "
        "cudaStreamCaptureStatus: cudaStreamCaptureStatusActive\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        + _frame(
            "sglang/srt/managers/scheduler.py", 2255, "run_scheduler_process", "scheduler = Scheduler(server_args)"
        )
        + _frame("sglang/srt/managers/scheduler.py", 273, "__init__", "self.tp_worker = TpWorkerClass(")
        + "RuntimeError: worker init failed\n",
    )
    # WHEN judged THEN it crashed in the capture, and the capture's own error is the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "cuda_graph")
    assert "during CUDA graph capture" in root_text(report)


def test_the_diffusion_scheduler_raising_from_its_event_loop_crashed_serving(tmp_path: Path) -> None:
    # GIVEN sglang 0.5.8 multimodal_gen: run_scheduler_process calls scheduler.event_loop() once the Scheduler is built
    # and ready was sent; the loop raises after N consecutive receive errors; the HTTP front end still answers /health
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame(
            "sglang/multimodal_gen/runtime/managers/gpu_worker.py",
            328,
            "run_scheduler_process",
            "scheduler.event_loop()",
        )
        + _frame("sglang/multimodal_gen/runtime/managers/scheduler.py", 315, "event_loop", "raise RuntimeError(")
        + "RuntimeError: Scheduler terminated after 3 consecutive errors. Last error: Resource unavailable\n"
        '[2026-01-28 08:52:46] INFO:     10.0.0.8:50570 - "GET /health HTTP/1.1" 200 OK\n'
        '[2026-01-28 08:52:56] INFO:     10.0.0.8:48288 - "GET /health HTTP/1.1" 200 OK\n',
    )
    # WHEN judged THEN the scheduler crashed while serving (the 200s are the front end, not the engine)
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
    assert root_text(report).startswith("RuntimeError: Scheduler terminated after 3 consecutive errors")


def test_a_v0_offline_generate_traceback_through_the_engine_step_is_serving(tmp_path: Path) -> None:
    # GIVEN the middle of rank 0's traceback (torchrun's `[rank0]:` on each line): LLM.generate -> _run_engine ->
    # LLMEngine.step -> the executor's execute_model, cut before its exception line
    lines = (
        _frame("vllm/entrypoints/llm.py", 469, "generate", "outputs = self._run_engine(use_tqdm=use_tqdm)", "[rank0]:")
        + _frame("vllm/entrypoints/llm.py", 1397, "_run_engine", "step_outputs = self.llm_engine.step()", "[rank0]:")
        + _frame("vllm/engine/llm_engine.py", 1391, "step", "outputs = self.model_executor.execute_model(", "[rank0]:")
        + _frame(
            "vllm/executor/executor_base.py",
            139,
            "execute_model",
            'output = self.collective_rpc("execute_model",',
            "[rank0]:",
        )
    )
    report = judge_text(tmp_path, lines)
    # WHEN judged THEN rank 0 failed running requests
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_a_v0_mq_engine_loop_lora_load_failure_is_serving(tmp_path: Path) -> None:
    # GIVEN V0's MQLLMEngine fatal handler (`engine.py:157]` on each line): a LoRA adapter loaded for a request
    # (worker_manager._load_adapter) failed inside run_engine_loop -> engine_step
    prefix = "ERROR 10-05 17:57:13 engine.py:157] "
    text = "".join(
        prefix + line + "\n"
        for line in (
            f'  File "{SITE}/vllm/lora/worker_manager.py", line 107, in _load_adapter',
            '    raise RuntimeError(f"Loading lora {lora_path} failed") from e',
            "RuntimeError: Loading lora /data/adapters/run-7 failed",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            f'  File "{SITE}/vllm/engine/multiprocessing/engine.py", line 155, in start',
            "    self.run_engine_loop()",
            f'  File "{SITE}/vllm/engine/multiprocessing/engine.py", line 218, in run_engine_loop',
            "    request_outputs = self.engine_step()",
        )
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN the engine crashed serving, said by the LoRA load's error
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
    assert root_text(report).endswith("RuntimeError: Loading lora /data/adapters/run-7 failed")


def test_a_static_lora_failing_after_supported_tasks_crashed_in_http_start(tmp_path: Path) -> None:
    # GIVEN V1 (0.12): the engine core up, the API server's init_app_state logs `Supported tasks`, then its static LoRA
    # (`add_lora`, a utility call the engine core logs as failed) raises
    report = judge_text(
        tmp_path,
        "(EngineCore_DP0 pid=41) INFO 12-15 18:57:09 [gpu_model_runner.py:4244] Graph capturing finished in 26 secs, "
        "took 1.34 GiB\n"
        "(EngineCore_DP0 pid=41) INFO 12-15 18:57:09 [core.py:250] init engine (profile, create kv cache, "
        "warmup model) took 69.12 seconds\n"
        "(APIServer pid=7) INFO 12-15 18:57:10 [api_server.py:1520] Supported tasks: ['generate']\n"
        "(EngineCore_DP0 pid=41) ERROR 12-15 18:57:10 [core.py:919] Invocation of add_lora method failed\n"
        "(EngineCore_DP0 pid=41) ERROR 12-15 18:57:10 [core.py:919] Traceback (most recent call last):\n"
        f'(EngineCore_DP0 pid=41) ERROR 12-15 18:57:10 [core.py:919]   File "{SITE}/vllm/lora/worker_manager.py", '
        "line 102, in _load_adapter\n",
    )
    # WHEN judged THEN it crashed in the API server's set-up, past the engine's graphs
    assert (report["verdict"], report["phase"]) == ("crashed", "http_start")


def test_supported_tasks_of_the_offline_llm_opens_no_http_server(tmp_path: Path) -> None:
    # GIVEN the offline LLM's own `Supported tasks` (llm.py, the user's process: no process tag) after the engine's init
    report = judge_text(
        tmp_path,
        "INFO 12-15 18:57:09 [core.py:250] init engine (profile, create kv cache, warmup model) took 69.12 seconds\n"
        "INFO 12-15 18:57:10 [llm.py:343] Supported tasks: ['generate']\n",
    )
    # WHEN judged THEN no step of an HTTP server was begun
    assert report["phase"] != "http_start"
    assert all(phase["phase"] != "http_start" for phase in report["phases"])


def test_a_kv_receiving_thread_store_timeout_is_a_timeout_while_serving(tmp_path: Path) -> None:
    # GIVEN V0 disaggregated prefill: the store client's waitForInput timeout, the pipe's receive error and the thread's
    # traceback through PyNcclPipe.recv_tensor -> _recv_impl (run only for a request's KV)
    report = judge_text(
        tmp_path,
        "[rank0]:[W1202 17:11:14.631061365 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=125, "
        "addr=[::ffff:127.0.0.1]:50228, remote=[::ffff:127.0.0.1]:14580) timed out after 300000ms\n"
        "ERROR 12-02 17:11:14 pynccl_pipe.py:261] Encountering exception in KV receiving thread\n"
        "ERROR 12-02 17:11:14 pynccl_pipe.py:262] wait timeout after 300000ms, keys: /send_to/0/4\n"
        "Traceback (most recent call last):\n"
        + _frame("vllm/distributed/kv_transfer/kv_pipe/pynccl_pipe.py", 259, "recv_tensor", "tensor = future.result()")
        + _frame(
            "vllm/distributed/kv_transfer/kv_pipe/pynccl_pipe.py", 189, "_recv_impl", "metadata = self._recv_metadata()"
        ),
    )
    # WHEN judged THEN a timeout while serving, not a rendezvous that never completed
    assert (report["verdict"], report["phase"]) == ("timeout", "serving")


def test_an_old_vllm_worker_init_model_is_its_distributed_init(tmp_path: Path) -> None:
    # GIVEN a faulthandler dump (innermost first) of vLLM 0.3's Worker.init_model, segfaulting as it sets its device
    report = judge_text(
        tmp_path,
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Stack (most recent call first):\n"
        f'  File "{SITE}/torch/cuda/__init__.py", line 404 in set_device\n'
        f'  File "{SITE}/vllm/worker/worker.py", line 85 in init_model\n'
        f'  File "{SITE}/vllm/engine/llm_engine.py", line 257 in _init_workers_ray\n'
        f'  File "{SITE}/vllm/engine/llm_engine.py", line 109 in __init__\n'
        "\n",
    )
    # WHEN judged THEN it aborted in dist_init
    assert (report["verdict"], report["phase"]) == ("aborted", "dist_init")


def test_vllm_0_2_get_model_under_init_model_is_the_weight_load(tmp_path: Path) -> None:
    # GIVEN vLLM 0.2.1's init_model, which goes on from the process group to get_model, failing as it builds the model
    report = judge_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        + _frame("vllm/worker/worker.py", 70, "init_model", "self.model = get_model(self.model_config)")
        + _frame("vllm/model_executor/model_loader.py", 64, "get_model", "model = model_class(model_config.hf_config)")
        + "TypeError: __init__() missing 1 required positional argument: 'linear_method'\n",
    )
    # WHEN judged THEN the inner frame refines the step: weight_load
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")


def test_lmdeploy_pytorch_building_the_patched_model_is_the_weight_load(tmp_path: Path) -> None:
    # GIVEN LMDeploy 0.6's TP worker failing in _tp_build_model at its build_patched_model call, cut there
    report = judge_text(
        tmp_path,
        "2024-11-21 17:46:13,978 - lmdeploy - ERROR - model_agent.py:493 - Rank[3] failed.\n"
        "Traceback (most recent call last):\n"
        + _frame("lmdeploy/pytorch/engine/model_agent.py", 490, "_start_tp_process", "func(rank, *args, **kwargs)")
        + _frame(
            "lmdeploy/pytorch/engine/model_agent.py",
            433,
            "_tp_model_loop",
            "patched_model, cache_engine, _ = _tp_build_model(rank,",
        )
        + _frame(
            "lmdeploy/pytorch/engine/model_agent.py",
            361,
            "_tp_build_model",
            "patched_model = build_patched_model(model_config, device=device_map)",
        ),
    )
    # WHEN judged THEN it crashed loading the model
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")


def test_an_nccl_tests_failure_chain_through_a_collective_file_is_the_benchmark_running(tmp_path: Path) -> None:
    # GIVEN nccl-tests (2019) with NCCL 2.4: an IB completion error on the proxy thread, then the test's NCCLCHECK and
    # TESTCHECK chain up to all_reduce.cu (its RunTest: the timed collectives)
    report = judge_text(
        tmp_path,
        "gpu5:35917:35994 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
        "len 0, vendor err 129\n"
        "gpu5:35917:35994 [0] NCCL INFO include/net.h:34 -> 2\n"
        "gpu5: Test NCCL failure common.cu:343 'unhandled system error'\n"
        " .. gpu5: Test failure common.cu:393\n"
        " .. gpu5: Test failure all_reduce.cu:103\n",
    )
    # WHEN judged THEN a crash while the benchmark ran its collectives
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_an_nccl_tests_chain_through_common_cu_alone_says_no_step(tmp_path: Path) -> None:
    # GIVEN a TESTCHECK chain of common.cu frames only (the communicators' set-up prints the same)
    report = judge_text(
        tmp_path,
        "gpu5: Test NCCL failure common.cu:775 'unhandled system error'\n .. gpu5: Test failure common.cu:846\n",
    )
    # WHEN judged THEN serving is not claimed
    assert report["phase"] != "serving"


def test_vllm_v1_drafter_load_is_a_draft_step_of_the_weight_load(tmp_path: Path) -> None:
    # GIVEN V1's load_model: the target's weights, then `Loading drafter model...` (here without its prefix, as a paste
    # lost it), then the engine core's failure, before any KV cache line
    report = judge_text(
        tmp_path,
        "Loading drafter model...\n"
        "(EngineCore_DP0 pid=3649) ERROR 09-17 06:49:42 [core.py:718] EngineCore failed to start.\n",
    )
    # WHEN judged THEN it crashed loading weights, the step flagged as the draft's
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")
    assert [(phase["phase"], phase["draft"]) for phase in report["phases"]] == [("weight_load", True)]
