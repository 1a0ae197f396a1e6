"""TensorRT-LLM / Triton, TGI and LMDeploy line kinds, written from their sources' formats: phase, verdict, cause."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_triton_that_could_not_create_its_server_crashed_loading_its_models(tmp_path: Path) -> None:
    # GIVEN tritonserver's FAIL_IF_ERR text (`error: creating server: {code} - {message}`) for core's
    # "failed to load all models", under a docker compose service's prefix
    text = (
        "triton-1  | W0301 09:00:00.100000 1 metrics.cc:631] Unable to get power limit for GPU 0.\n"
        "triton-1  | error: creating server: Internal - failed to load all models\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the server crashed loading its models, and that line is the cause
    assert (report["phase"], report["verdict"]) == ("weight_load", "crashed")
    assert report["root_cause"]["text"] == "error: creating server: Internal - failed to load all models"


def test_an_ensemble_whose_model_did_not_load_names_the_backends_error(tmp_path: Path) -> None:
    # GIVEN Triton core's ensemble status (`ensemble 'e' depends on 'm' which has no loaded version. Model 'm'
    # loading failed with error: ...`) carrying the tensorrtllm backend's assertion
    error = (
        "E0105 08:00:01.000100 42 model_repository_manager.cc:563] Invalid argument: ensemble 'pipeline' depends "
        "on 'llm' which has no loaded version. Model 'llm' loading failed with error: version 1 is at UNAVAILABLE "
        "state: Internal: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine (x.cpp:1)"
    )
    text = "I0105 08:00:00.000100 42 model_lifecycle.cc:461] loading: llm:1\n" + error + "\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN loading the model crashed, and the cause is the line that quotes the backend's error
    assert (report["phase"], report["verdict"]) == ("weight_load", "crashed")
    assert "Failed to deserialize cuda engine" in report["root_cause"]["text"]


def test_a_tllm_exception_that_reached_python_is_the_crash(tmp_path: Path) -> None:
    # GIVEN a TensorRT-LLM C++ exception turned into a Python RuntimeError, with its `[TensorRT-LLM][ERROR]` text
    text = (
        "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in cublasLtMatmul(handle): "
        "CUBLAS_STATUS_NOT_SUPPORTED (/src/cpp/tensorrt_llm/thop/gemm.cpp:10)\n"
        "1       0x7f0000000001 tensorrt_llm::common::throwRuntimeError(char const*, int) + 95\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the run crashed, and the exception line is the cause
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["text"].startswith("RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ")


def test_a_trtllm_build_killed_after_its_engine_build_started_died_compiling(tmp_path: Path) -> None:
    # GIVEN build.py's `[MemUsage] Rank N Engine build starts - Allocated Memory: ...` and bash's Killed notice
    text = (
        "[01/02/2024-10:00:00] [TRT-LLM] [I] [MemUsage] Rank 0 Engine build starts - Allocated Memory: "
        "Host 3.5000 (GiB) Device 0.9000 (GiB)\n"
        "build.sh: line 3:  4242 Killed                  python build.py --model_dir ./m\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it crashed in compile (the engine build)
    assert (report["phase"], report["verdict"]) == ("compile", "crashed")


def test_turbomind_sequence_manager_lines_are_the_kv_cache(tmp_path: Path) -> None:
    # GIVEN TurboMind's weights line, then each TP rank's `[SegMgr] prefix caching is disabled`, and nothing else
    text = (
        "2025-01-01 10:00:00,000 - lmdeploy - WARNING - turbomind.py:280 - get 1200 model params\n"
        "[TM][WARNING] [SegMgr] prefix caching is disabled\n"
        "[TM][WARNING] [SegMgr] prefix caching is disabled\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the log ends in kv_cache
    assert (report["system"], report["phase"]) == ("lmdeploy", "kv_cache")


def test_turbomind_nccl_check_failure_is_the_crash(tmp_path: Path) -> None:
    # GIVEN TurboMind's NCCLCHECK text `Failed, NCCL error {file}:{line} '{nccl error string}'`
    text = "Failed, NCCL error /src/turbomind/utils/nccl_utils.cc:99 'unhandled cuda error'\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it crashed, and that line is the cause
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["text"].startswith("Failed, NCCL error ")


def test_lmdeploy_tracebacks_name_their_phase_by_frame(tmp_path: Path) -> None:
    # GIVEN a traceback through TurboMind's `_create_weight`, and one through the PyTorch engine's
    # `_broadcast_inputs` of a TP worker, each under lmdeploy's own logger line
    head = "2025-01-01 10:00:00,000 - lmdeploy - ERROR - model_agent.py:1 - Rank[1] failed.\n"
    weights = (
        head + "Traceback (most recent call last):\n"
        '  File "/x/lmdeploy/turbomind/turbomind.py", line 226, in _from_hf\n'
        "    self._create_weight(model_comm)\n"
        '  File "/x/lmdeploy/turbomind/turbomind.py", line 152, in _create_weight\n'
        "    future.result()\n"
        "RuntimeError: out of memory\n"
    )
    steps = (
        head + "Traceback (most recent call last):\n"
        '  File "/x/lmdeploy/pytorch/engine/model_agent.py", line 974, in _tp_model_loop\n'
        "    inputs = _broadcast_inputs(rank, None, stream)\n"
        '  File "/x/lmdeploy/pytorch/engine/model_agent.py", line 893, in _broadcast_inputs\n'
        "    dist.broadcast_object_list(inputs)\n"
        "RuntimeError: connection reset\n"
    )
    # WHEN judged
    weights_report = judge_text(tmp_path, weights, "weights.log")
    steps_report = judge_text(tmp_path, steps, "steps.log")
    # THEN the first crashed loading weights, the second serving
    assert (weights_report["phase"], weights_report["verdict"]) == ("weight_load", "crashed")
    assert (steps_report["phase"], steps_report["verdict"]) == ("serving", "crashed")


def test_tgi_router_warmup_panic_is_a_warmup_crash(tmp_path: Path) -> None:
    # GIVEN the 2023 router's `.expect("Unable to warmup model")` panic, then the launcher's notice
    text = (
        "thread 'main' panicked at 'Unable to warmup model: Generation(\"CUDA out of memory\")', "
        "router/src/main.rs:216:18\n"
        "2023-07-01T10:00:00.000000Z ERROR text_generation_launcher: Webserver Crashed\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it crashed in warmup, the panic being the cause
    assert (report["phase"], report["verdict"]) == ("warmup", "crashed")
    assert "Unable to warmup model" in report["root_cause"]["text"]


def test_tgi_launcher_json_with_nested_fields_is_read(tmp_path: Path) -> None:
    # GIVEN the launcher's `--json-output` records (tracing-subscriber JSON, fields nested under "fields")
    text = (
        '{"timestamp":"2024-03-01T10:00:00.000000Z","level":"INFO","fields":{"message":"Starting download process."},'
        '"target":"text_generation_launcher","span":{"name":"download"},"spans":[{"name":"download"}]}\n'
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it is TGI, downloading (weight_load in TGI's vocabulary)
    assert (report["system"], report["phase"]) == ("tgi", "weight_load")


def test_a_kernel_general_protection_fault_kills_the_process(tmp_path: Path) -> None:
    # GIVEN the kernel's `traps: comm[pid] general protection fault ip:.. sp:.. error:..` (dmesg -T stamp)
    text = (
        "[Mon Jan  5 10:00:00 2026] traps: python3[4242] general protection fault ip:7f0000000898 "
        "sp:7ffc00000710 error:0 in libc.so.6[7f0000000000+195000]\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the process died of the signal (SIGSEGV): aborted, that line the cause
    assert report["verdict"] == "aborted"
    assert "general protection fault" in report["root_cause"]["text"]


# Triton 24.x glog lines (message as a quoted string) of a tensorrtllm model repository: core's `loading: m:1`,
# then the backends' initialise hooks (python_be.cc, libtensorrtllm.cc), then the backend's config notices
TRITON_INITIALISING = (
    'I0130 02:01:55.100000 527 model_lifecycle.cc:472] "loading: tensorrt_llm:1"\n'
    'I0130 02:01:55.151095 527 python_be.cc:2249] "TRITONBACKEND_ModelInstanceInitialize: tensorrt_llm_bls_0_0 '
    '(CPU device 0)"\n'
    'I0130 02:01:55.151129 527 libtensorrtllm.cc:114] "TRITONBACKEND_ModelInitialize: tensorrt_llm (version 1)"\n'
    "[TensorRT-LLM][WARNING] max_beam_width is not specified, will use default value of 1\n"
)


def test_a_triton_backend_initialising_its_model_is_loading_weights(tmp_path: Path) -> None:
    # GIVEN a backend's `TRITONBACKEND_ModelInitialize: {name} (version {v})` and
    # `TRITONBACKEND_ModelInstanceInitialize: {name} ({KIND} device {id})` after `loading: tensorrt_llm:1`, and
    # nothing after them
    # WHEN judged post-mortem
    report = judge_text(tmp_path, TRITON_INITIALISING)
    # THEN the run stopped loading its model, where the model's initialise hook was the last step
    assert (report["phase"], report["verdict"]) == ("weight_load", "stalled")
    assert root_text(report) == (
        'I0130 02:01:55.151129 527 libtensorrtllm.cc:114] "TRITONBACKEND_ModelInitialize: tensorrt_llm (version 1)"'
    )


def test_the_initialise_hook_alone_places_the_model_load(tmp_path: Path) -> None:
    # GIVEN only python_be.cc's older unquoted instance line, with no `loading:` line before it
    text = (
        "I1026 12:48:04.575728 1806 python_be.cc:2108] "
        "TRITONBACKEND_ModelInstanceInitialize: reward_model_0 (CPU device 0)\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the model was loading
    assert (report["phase"], report["verdict"]) == ("weight_load", "stalled")


def test_an_instance_finalize_is_no_model_load(tmp_path: Path) -> None:
    # GIVEN a backend's `TRITONBACKEND_ModelInstanceFinalize: delete instance state` alone
    text = "I0827 01:50:19.658303 459 onnxruntime.cc:2836] TRITONBACKEND_ModelInstanceFinalize: delete instance state\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN no phase is claimed from it
    assert report["phase"] is None


# ray 2.40.0 scripts.py `ray start --head`: the node's IP, `Ray runtime started.` between dash rules (SUCC), then
# the `Next steps` help
RAY_START = (
    "2024-12-12 05:27:52,822\tINFO scripts.py:822 -- Local node IP: 10.0.143.175\n"
    "2024-12-12 05:27:54,657\tSUCC scripts.py:859 -- --------------------\n"
    "2024-12-12 05:27:54,657\tSUCC scripts.py:860 -- Ray runtime started.\n"
    "2024-12-12 05:27:54,657\tSUCC scripts.py:861 -- --------------------\n"
    "2024-12-12 05:27:54,657\tINFO scripts.py:863 -- Next steps\n"
    "2024-12-12 05:27:54,657\tINFO scripts.py:881 -- ray.init()\n"
)


def test_a_ray_node_that_started_and_nothing_after_it_stopped_at_launch(tmp_path: Path) -> None:
    # GIVEN `ray start`'s output up to its help and nothing after it
    # WHEN judged post-mortem
    report = judge_text(tmp_path, RAY_START)
    # THEN the cluster came up and nothing ran on it: stopped at launch, after `Ray runtime started.`
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert root_text(report) == "2024-12-12 05:27:54,657\tSUCC scripts.py:860 -- Ray runtime started."


def test_a_ray_node_start_then_a_connect_is_still_launch(tmp_path: Path) -> None:
    # GIVEN `ray start`'s output, then worker.py's `Connected to Ray cluster.` of a program that connected to it
    text = RAY_START + "2024-12-12 05:28:10,100\tINFO worker.py:1821 -- Connected to Ray cluster.\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the driver joined the cluster, before any worker and any process group of its own: launch, its last line
    # the connect
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert root_text(report) == "2024-12-12 05:28:10,100\tINFO worker.py:1821 -- Connected to Ray cluster."


def test_open_mpi_5s_runtime_error_is_the_cause_over_the_benchmarks_shutdown_and_a_cut_traceback(
    tmp_path: Path,
) -> None:
    # GIVEN trtllm-bench starting its executor, PRTE's `PRTE ERROR: %s in file %s at line %d` (behind the output
    # stream's `[host:pid] `) as the executor's workers are spawned, then the benchmark shutting down and a traceback
    # cut in its first frame
    prte = "[node-a:20931] PRTE ERROR: Not found in file base/odls_base_default_fns.c at line 1010"
    text = (
        "[TensorRT-LLM] TensorRT-LLM version: 0.16.0\n"
        "[01/09/2025-08:00:01] [TRT-LLM] [I] Preparing to run throughput benchmark...\n"
        "[01/09/2025-08:00:02] [TRT-LLM] [I] Initializing Executor.\n"
        f"{prte}\n"
        "[01/09/2025-08:00:03] [TRT-LLM] [I] Executor shutdown.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/trtllm-bench", line 8, in <module>\n'
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN a crash whose cause is the runtime's error: it says what failed, the traceback under it does not
    assert report["verdict"] == "crashed"
    assert root_text(report) == prte


def test_open_mpi_4s_errmgr_line_is_the_cause_of_a_launch_that_failed(tmp_path: Path) -> None:
    # GIVEN mpirun (Open MPI 4) starting a torch job: ORTE's `%s ORTE_ERROR_LOG: %s in file %s at line %d` after the
    # process's name, then a rank's traceback cut in its first frame
    orte = (
        "[gpu-07:40211] [[52815,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in file "
        "grpcomm_direct.c at line 355"
    )
    text = f'{orte}\nTraceback (most recent call last):\n  File "/workspace/train.py", line 12, in <module>\n'
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN a crash, its cause the runtime's error line
    assert report["verdict"] == "crashed"
    assert root_text(report) == orte
