"""Lines of known systems that went unread (issue 25 item 3): waiting lines, per-piece loads, notices and the Ray
autoscaler's report, each written from the format the released source prints, judged end to end."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

# --- vLLM V0's front-end waiting for its engine (engine/multiprocessing/client.py) -----------------------------


def _v0_waits(minutes: tuple[int, ...]) -> str:
    """The V0 output loop's DEBUG line, every 10 s over these minutes (0.6's `client.py:170] ` prefix)."""
    return "".join(
        f"DEBUG 11-02 08:0{minute}:{second}0 client.py:170] Waiting for output from MQLLMEngine.\n"
        for minute in minutes
        for second in range(6)
    )


def test_a_v0_front_end_waiting_for_its_engine_until_ctrl_c_is_stalled_at_launch_on_its_last_wait(
    tmp_path: Path,
) -> None:
    # GIVEN a paste of a V0 API server's waits for an engine that never answers, then ^C and the loop's shutdown
    report = judge_text(
        tmp_path,
        _v0_waits((1, 2)) + "^C\nDEBUG 11-02 08:03:02 client.py:237] Shutting down MQLLMEngineClient output handler.\n",
    )
    # THEN a person stopped a start that waited at launch; where it stopped is the last wait it printed
    assert (report["system"], report["verdict"], report["phase"]) == ("vllm", "stalled", "launch")
    assert root_text(report) == "DEBUG 11-02 08:02:50 client.py:170] Waiting for output from MQLLMEngine."


def test_waits_after_the_engine_process_started_leave_that_start_the_last_progress(tmp_path: Path) -> None:
    # GIVEN the engine process's start line, then the front-end's waits, then ^C
    report = judge_text(
        tmp_path,
        "INFO 11-02 08:00:58 api_server.py:199] Started engine process with PID 5120\n" + _v0_waits((1,)) + "^C\n",
    )
    # THEN stalled at launch, and where it stopped is its last progress (a wait is no step), as for a stall
    assert (report["verdict"], report["phase"]) == ("stalled", "launch")
    assert root_text(report).endswith("Started engine process with PID 5120")


def test_a_v0_server_that_idles_after_start_up_stays_ready_through_its_waiting_lines(tmp_path: Path) -> None:
    # GIVEN a V0 server that started, served, and idles: its output loop prints its wait every 10 s
    report = judge_text(
        tmp_path,
        "INFO 03-14 17:19:02 [api_server.py:1024] Started engine process with PID 77\n"
        "INFO 03-14 17:19:40 [model_runner.py:1110] Loading model weights took 14.9888 GB\n"
        "INFO:     Started server process [61]\n"
        "INFO:     Waiting for application startup.\n"
        "INFO:     Application startup complete.\n"
        "DEBUG 03-14 17:20:21 [client.py:193] Waiting for output from MQLLMEngine.\n"
        "DEBUG 03-14 17:20:31 [client.py:193] Waiting for output from MQLLMEngine.\n",
    )
    # THEN it is ready: a launch mark of a server past launch places nothing
    assert report["verdict"] == "ready"
    assert report["root_cause"] is None


# --- vLLM's compile cache loading its graphs one by one (compilation/backends.py, DEBUG) ----------------------


def test_a_log_of_compiled_pieces_loaded_from_the_cache_is_in_compile(tmp_path: Path) -> None:
    # GIVEN 0.8's DEBUG loads of each piece `for shape None`, a user's print between them, cut in the last handle
    report = judge_text(
        tmp_path,
        "DEBUG 04-02 10:11:00 [backends.py:87] Directly load the 0-th graph for shape None from inductor via "
        "handle ('fa1', '/root/.cache/vllm/torch_compile_cache/0b/rank_0_0/inductor_cache/a1/cfa1.py')\n"
        "piece done\n"
        "DEBUG 04-02 10:11:00 [backends.py:87] Directly load the 1-th graph for shape None from inductor via "
        "handle ('fb2', '/root/.cache/vllm/torch_compile_cache/0b/rank_0_0/inductor_cache/b2/cfb2.py')\n"
        "DEBUG 04-02 10:11:01 [backends.py:87] Directly load the 2-th graph for shape None from inductor via "
        "handle ('fc3', '/root/.cache/vllm/torch_",
    )
    # THEN the run is compiling (open: a stall and slow work look alike in an excerpt)
    assert report["phase"] == "compile"
    assert report["verdict"] in ("stalled", "progressing")


def test_per_graph_loads_of_a_tp_worker_then_the_whole_cache_load_keep_the_worker_in_compile(tmp_path: Path) -> None:
    # GIVEN a 0.10 worker's DEBUG loads `for dynamic shape`, then the INFO line of the whole cache load
    report = judge_text(
        tmp_path,
        "(VllmWorker TP0 pid=40) DEBUG 08-20 10:00:00 [backends.py:125] Directly load the 0-th graph for dynamic "
        "shape from inductor via handle ('q1', '/tmp/c/q1.py')\n"
        "(VllmWorker TP0 pid=40) DEBUG 08-20 10:00:01 [backends.py:125] Directly load the 1-th graph for dynamic "
        "shape from inductor via handle ('q2', '/tmp/c/q2.py')\n"
        "(VllmWorker TP0 pid=40) INFO 08-20 10:00:02 [backends.py:162] Directly load the compiled graph(s) for "
        "dynamic shape from the cache, took 2.011 s\n",
    )
    # THEN TP0 is in compile, and the system is vLLM
    assert (report["system"], report["phase"]) == ("vllm", "compile")


# --- SGLang's fp8 checkpoint notice (srt/layers/quantization/fp8.py, built inside load_model) -----------------


def test_sglang_ranks_that_stop_after_the_fp8_notice_stalled_loading_weights(tmp_path: Path) -> None:
    # GIVEN four ranks print the notice that they read an fp8 checkpoint, and nothing follows
    report = judge_text(
        tmp_path,
        "".join(
            f"[2025-02-03 09:14:55 TP{rank}] Detected fp8 checkpoint. Please note that the format is experimental "
            "and subject to change.\n"
            for rank in (2, 0, 3, 1)
        ),
    )
    # THEN they stalled in weight_load (the notice comes after `Load weight begin.`), the last notice the cause
    assert (report["system"], report["verdict"], report["phase"]) == ("sglang", "stalled", "weight_load")
    assert root_text(report).startswith("[2025-02-03 09:14:55 TP1] Detected fp8 checkpoint.")


def test_the_fp8_notice_after_load_weight_begin_keeps_the_rank_in_weight_load(tmp_path: Path) -> None:
    # GIVEN a DP/TP/EP rank that began loading, printed the notice, and a peer that ended its load
    report = judge_text(
        tmp_path,
        "[2025-06-10 18:01:00 DP0 TP0 EP0] Load weight begin. avail mem=77.10 GB\n"
        "[2025-06-10 18:01:00 DP0 TP1 EP1] Load weight begin. avail mem=77.10 GB\n"
        "[2025-06-10 18:01:12 DP0 TP1 EP1] Detected fp8 checkpoint. Please note that the format is experimental and "
        "subject to change.\n",
    )
    # THEN the server is loading weights
    assert (report["phase"], report["verdict"]) == ("weight_load", "stalled")


def test_vllms_fp8_notice_is_not_sglangs(tmp_path: Path) -> None:
    # GIVEN vLLM's own print of the same words (its config, at launch)
    report = judge_text(
        tmp_path,
        "INFO 05-01 10:08:10 [api_server.py:1024] Started engine process with PID 77\n"
        "WARNING 05-01 10:08:11 [fp8.py:70] Detected fp8 checkpoint. Please note that the format is experimental "
        "and subject to change.\n",
    )
    # THEN the log stays vLLM's, at launch
    assert (report["system"], report["phase"]) == ("vllm", "launch")


# --- Ray's autoscaler: a request no node type can hold (autoscaler/_private/autoscaler.py) ---------------------


def test_a_driver_whose_request_no_node_type_can_hold_is_stalled_at_launch_on_the_first_report(
    tmp_path: Path,
) -> None:
    # GIVEN a driver's own prints, then the autoscaler's report every 30 s that no node type fits 4 GPUs
    error = (
        "Error: No available node types can fulfill resource request {'GPU': 4.0}. "
        "Add suitable node types to this cluster to resolve this issue."
    )
    report = judge_text(
        tmp_path,
        "(TaskRunner pid=801) building the dataset\n"
        "(autoscaler +5s) Tip: use `ray status` to view detailed cluster status. To disable these messages, set "
        "RAY_SCHEDULER_EVENTS=0.\n"
        f"(autoscaler +5s) {error}\n(autoscaler +41s) {error}\n(autoscaler +1m17s) {error}\n",
    )
    # THEN the run waits for what never comes: stalled at launch, the first report the cause
    assert (report["system"], report["verdict"], report["phase"]) == ("ray", "stalled", "launch")
    assert root_text(report).startswith("(autoscaler +5s) Error: No available node types")


def test_an_infeasible_request_the_cluster_then_served_is_no_hang(tmp_path: Path) -> None:
    # GIVEN the autoscaler's report, then the Serve application deployed (the request was dropped or resized)
    report = judge_text(
        tmp_path,
        "2024-12-02 10:00:04,512\tINFO worker.py:1821 -- Connected to Ray cluster. View the dashboard at "
        "http://10.0.0.11:8265 \n"
        "(autoscaler +12s) Error: No available node types can fulfill resource request defaultdict(<class "
        "'float'>, {'CPU': 1.0, 'GPU': 8.0}). Add suitable node types to this cluster to resolve this issue.\n"
        "2024-12-02 10:03:11,870\tINFO client.py:312 -- Application 'default' is ready at http://127.0.0.1:8000/.\n",
    )
    # THEN it is ready: progress after a hang report answers it
    assert report["verdict"] == "ready"


# --- a training loop's own step lines: MMEngine (runner/log_processor.py), DeepSpeed (runtime/engine.py) ------


def _mmengine_iter(minute: int, step: int, total: int = 80000) -> str:
    return (
        f"09/11 14:{minute:02d}:10 - mmengine - INFO - Iter(train) [{step:>5}/{total}]  lr: 6.0000e-05  "
        f"eta: 11:02:13  time: 0.5011  data_time: 0.0101  memory: 9120  loss: 0.8812\n"
    )


def test_mmengine_iterations_that_go_on_to_the_end_are_a_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN an iteration-based MMEngine run's console lines, 50 iterations a minute apart
    report = judge_text(tmp_path, "".join(_mmengine_iter(minute, 50 * minute) for minute in range(1, 5)))
    # THEN a job (torch) in its steps, open: post-mortem an excerpt that ends in steps is stalled or progressing
    assert (report["system"], report["phase"]) == ("torch", "serving")
    assert report["verdict"] in ("stalled", "progressing")
    assert root_text(report) == _mmengine_iter(4, 200).rstrip("\n")


def test_mmengine_epoch_lines_after_evaluation_lines_place_the_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN an epoch-based run's file log: a validation pass, then the next epoch's training iterations
    report = judge_text(
        tmp_path,
        "2024/05/02 08:00:00 - mmengine - INFO - Epoch(val) [99][40/40]    coco/bbox_mAP: 0.3710\n"
        "2024/05/02 08:00:30 - mmengine - INFO - Epoch(train) [100][ 5/40]  lr: 2.0000e-04  eta: 0:01:10  "
        "time: 0.2010  loss: 0.1201\n"
        "2024/05/02 08:01:00 - mmengine - INFO - Epoch(train) [100][10/40]  lr: 2.0000e-04  eta: 0:00:55  "
        "time: 0.1990  loss: 0.1187\n",
    )
    # THEN the job is in its steps, the last iteration where it was
    assert (report["phase"], report["verdict"]) == ("serving", "stalled")
    assert "Epoch(train) [100][10/40]" in root_text(report)


def _mnist_steps(form: str, epoch: int) -> str:
    """pytorch/examples mnist/main.py's training progress (`--log-interval 10`, batch 64: 640 samples apart)."""
    return "".join(
        form.format(epoch, 640 * n, 60000, round(100.0 * 640 * n / 60000), 2.3 - 0.1 * n) + "\n" for n in range(4)
    )


def test_the_mnist_examples_training_loop_places_the_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN the script's device line, then its progress lines (a print, `\tLoss: {:.6f}`), into a second epoch
    form = "Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}"
    report = judge_text(tmp_path, "Using Device: cuda\n\n" + _mnist_steps(form, 1) + _mnist_steps(form, 2))
    # THEN the job is in its steps, the last progress line where it was
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "serving", "stalled")
    assert root_text(report) == "Train Epoch: 2 [1920/60000 (3%)]\tLoss: 2.000000"


def test_katibs_mnist_trial_logging_its_steps_is_in_its_steps(tmp_path: Path) -> None:
    # GIVEN Katib's copy: `loss={:.4f}` through logging's `%(asctime)s %(levelname)-8s %(message)s`, ISO datefmt
    form = "2025-08-14T23:41:2{3}Z INFO     Train Epoch: {0} [{1}/{2} ({3:.0f}%)]\tloss={4:.4f}"
    report = judge_text(tmp_path, _mnist_steps(form, 1))
    # THEN the job is in its steps
    assert (report["phase"], report["verdict"]) == ("serving", "stalled")
    assert root_text(report).endswith("Train Epoch: 1 [1920/60000 (3%)]\tloss=2.0000")


def test_the_mnist_examples_test_pass_alone_is_no_step(tmp_path: Path) -> None:
    # GIVEN only the script's evaluation summary after an epoch
    report = judge_text(tmp_path, "\nTest set: Average loss: 0.0471, Accuracy: 9842/10000 (98%)\n\n")
    # THEN nothing is placed
    assert (report["phase"], report["verdict"]) == (None, "unknown")


def _deepspeed_step(second: int, step: int) -> str:
    return (
        f"[2025-01-07 11:02:{second:02d},804] [INFO] [logging.py:128:log_dist] [Rank 0] step={step}, skipped=0, "
        "lr=[5.2e-06], mom=[(0.9, 0.95)]\n"
    )


def test_deepspeed_step_reports_after_its_init_place_the_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN the engine's step=0 report as it configures the optimizer, then a report every 10 steps
    report = judge_text(tmp_path, "".join(_deepspeed_step(second, 10 * second) for second in range(0, 4)))
    # THEN the job is in its steps, its last report where it was
    assert (report["system"], report["phase"]) == ("torch", "serving")
    assert root_text(report) == _deepspeed_step(3, 30).rstrip("\n")


def test_deepspeeds_launcher_listing_its_nccl_variables_is_in_launch_on_the_last_one(tmp_path: Path) -> None:
    # GIVEN the runner's hostfile warning and command, then the launcher's first lines: each NCCL variable it was
    # given, as launch.py main logs `{node_rank} {name}={value}` before it reads the world info
    report = judge_text(
        tmp_path,
        "[2023-07-13 14:51:33,751] [WARNING] [runner.py:191:fetch_hostfile] Unable to find hostfile, will proceed"
        " with training with local resources only.\n"
        "[2023-07-13 14:51:33,954] [INFO] [runner.py:541:main] cmd = /usr/bin/python -u -m deepspeed.launcher.launch"
        " --world_info=eyJsb2NhbGhvc3QiOiBbMF19 --master_addr=127.0.0.1 --master_port=29500 main.py\n"
        "[2023-07-13 14:51:35,266] [INFO] [launch.py:138:main] 0 NCCL_DEBUG=INFO\n"
        "[2023-07-13 14:51:35,266] [INFO] [launch.py:138:main] 0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1\n",
    )
    # THEN the job is in launch, the last variable's line where it was
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "launch", "stalled")
    assert root_text(report).endswith("[launch.py:138:main] 0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1")


def test_a_deepspeed_step_zero_alone_is_no_step(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's launcher line, then only the init report step=0
    report = judge_text(
        tmp_path,
        "[2024-03-14 14:35:42,274] [INFO] [real_accelerator.py:191:get_accelerator] Setting ds_accelerator to cuda "
        "(auto detect)\n" + _deepspeed_step(50, 0),
    )
    # THEN the job never reached its steps
    assert report["phase"] != "serving"


# --- Ascend NPUs: the CANN runtime's core fault, torch_npu's HCCL watchdog ---------------------------------------


def test_an_npu_core_fault_before_the_hccl_watchdog_is_the_cause_of_the_crash(tmp_path: Path) -> None:
    # GIVEN torch_npu's error block with the device's aicore fault, then the HCCL watchdog's exit and terminate
    report = judge_text(
        tmp_path,
        "[ERROR] 2026-03-01-10:00:00 (PID:510, Device:3, RankID:-1) ERR00100 PTA call acl api failed\n"
        "[Error]: Model execution failed.\n"
        "        Rectify the fault based on the error information in the ascend log.\n"
        "        TraceBack (most recent call last):\n"
        "        The error from device(chipId:1, dieId:0), serial number is 12, there is an exception of fftsplus "
        "aicore error, core id is 7, error code = 0x800000, dump info: pc start: 0x12c0c1300000\n"
        "[rank3]:[E301 10:00:00.000000001 compiler_depend.ts:1693] [Rank 3] HCCL watchdog thread terminated with "
        "exception:\n"
        "[ERROR] 2026-03-01-10:00:00 (PID:510, Device:3, RankID:-1) ERR02005 DIST internal error\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n",
    )
    # THEN it crashed, and the device's fault (first in time, the watchdog's exit follows from it) is the cause
    assert report["verdict"] == "crashed"
    assert "there is an exception of fftsplus aicore error, core id is 7" in root_text(report)


def test_a_vllm_ascend_worker_reporting_an_aicore_error_crashed_on_it(tmp_path: Path) -> None:
    # GIVEN a 310P worker's error lines under vLLM's worker prefix: the CANN fault, then its extend info
    report = judge_text(
        tmp_path,
        "(Worker_TP1 pid=301) INFO 03-01 09:59:00 [gpu_model_runner.py:2602] Starting to load model /m/qwen.\n"
        "(Worker_TP1 pid=301) ERROR 03-01 10:00:00 [multiproc_executor.py:962] EZ9999[PID: 301] "
        "2026-03-01-10:00:00.100.200 (EZ9999):  The error from device(1), serial number is 5, there is an error of "
        "aicore, core id is 2, error code = 0x20000, dump info: pc start: 0x80012c1c0000000\n"
        "(Worker_TP1 pid=301) ERROR 03-01 10:00:00 [multiproc_executor.py:962]        The extend info from "
        "device(1), serial number is 5, there is aicore error, core id is 2, aicore int: 0x10\n",
    )
    # THEN TP1 crashed on the fault line, not on its extend info
    assert report["verdict"] == "crashed"
    root = report["root_cause"]
    assert isinstance(root, dict)
    assert "there is an error of aicore, core id is 2" in str(root["text"])


def test_an_hccl_watchdog_exit_whose_exception_text_is_on_the_next_line_is_a_crash(tmp_path: Path) -> None:
    # GIVEN torch_npu's watchdog exit with its trailing space gone, the exception on the next line
    report = judge_text(
        tmp_path,
        "[rank2]:[E101 09:00:00.000000001 ProcessGroupHCCL.cpp:1869] [Rank 2] HCCL watchdog thread terminated with "
        "exception:\n"
        "[ERROR] 2026-01-01-09:00:00 (PID:258, Device:2, RankID:-1) ERR02005 DIST internal error\n",
    )
    # THEN rank 2 crashed with its process group up (the watchdog runs only in one)
    assert report["verdict"] == "crashed"
    assert report["furthest_phase"] == "dist_init"
    assert root_text(report).endswith("HCCL watchdog thread terminated with exception:")


# --- Ray Serve's JSON logs (serve/_private/logging_utils.py ServeJSONFormatter) ----------------------------------


def _serve_json(second: int, level: str, where: str, message: str) -> str:
    return (
        f'{{"levelname": "{level}", "asctime": "2024-04-02 09:0{second // 60}:{second % 60:02d},002", '
        f'"component_name": "controller", "component_id": "7310", "message": "{where} - {message}"}}\n'
    )


def test_serve_json_warnings_that_replicas_wait_to_be_scheduled_leave_the_start_stalled_at_launch(
    tmp_path: Path,
) -> None:
    # GIVEN the controller's JSON records: starting, adding a replica, then the 2.10 slow-start warning twice
    waiting = "Deployment 'Chat' in application 'default' 1 replicas that have taken more than 30s to be scheduled."
    report = judge_text(
        tmp_path,
        _serve_json(1, "INFO", "controller.py:210", "Controller starting (version='2.10.0').")
        + _serve_json(2, "INFO", "deployment_state.py:1911", "Adding 1 replica to Deployment(name='Chat', app='x').")
        + _serve_json(35, "WARNING", "deployment_state.py:2185", waiting)
        + _serve_json(65, "WARNING", "deployment_state.py:2185", waiting),
    )
    # THEN Ray's start is stuck at launch, where its last step (the replica asked for) left it
    assert (report["system"], report["verdict"], report["phase"]) == ("ray", "stalled", "launch")
    assert "Adding 1 replica to Deployment(name='Chat', app='x')" in root_text(report)


def test_a_serve_json_replica_waiting_to_initialize_is_read_under_a_request_free_replica_record(
    tmp_path: Path,
) -> None:
    # GIVEN a JSON record that carries the actor and worker ids before the component (2.10 in a Ray actor)
    line = (
        '{"levelname": "WARNING", "asctime": "2024-04-02 09:02:00,500", "actor_id": "9f1e", "worker_id": "77ab", '
        '"component_name": "controller", "component_id": "7310", "message": "deployment_state.py:2206 - Deployment '
        "'Chat' in application 'default' 2 replicas that have taken more than 30s to initialize. This may be caused "
        'by a slow __init__ or reconfigure method."}\n'
    )
    report = judge_text(tmp_path, line)
    # THEN it is Ray's slow start, stalled at launch
    assert (report["system"], report["verdict"], report["phase"]) == ("ray", "stalled", "launch")


# --- LMDeploy 0.5's TurboMind start (`ts - lmdeploy - LEVEL - msg`, turbomind/turbomind.py) ---------------------


def test_lmdeploy_05_turbomind_that_stops_after_counting_its_params_is_loading_weights(tmp_path: Path) -> None:
    # GIVEN 0.5's log format (no file:line): the model source, the INI config dump, the params counted
    report = judge_text(
        tmp_path,
        "2024-09-02 11:00:01,010 - lmdeploy - INFO - model_source: hf_model\n"
        "2024-09-02 11:00:01,020 - lmdeploy - INFO - model_config:\n\n[llama]\nmodel_name = base\n"
        "tensor_para_size = 4\nhead_num = 32\n\n"
        "[TM][INFO] [LlamaTritonModel] max_context_token_num = 8192.\n"
        "2024-09-02 11:00:03,551 - lmdeploy - WARNING - get 291 model params\n",
    )
    # THEN LMDeploy stopped while its weights were copied in
    assert (report["system"], report["phase"], report["verdict"]) == ("lmdeploy", "weight_load", "stalled")
    assert root_text(report).endswith("get 291 model params")


def test_lmdeploy_05_lines_without_file_and_line_are_read_as_lmdeploys(tmp_path: Path) -> None:
    # GIVEN only 0.5's config echo lines, in its format without `file.py:N - `
    report = judge_text(
        tmp_path,
        "2024-09-02 11:00:01,010 - lmdeploy - INFO - model_source: hf_model\n"
        "2024-09-02 11:00:01,020 - lmdeploy - INFO - model_config:\n",
    )
    # THEN it is LMDeploy at launch
    assert (report["system"], report["phase"]) == ("lmdeploy", "launch")


# --- TensorRT-LLM's multi-node launcher (tensorrt_llm/llmapi/trtllm-llmapi-launch) -----------------------------


def test_a_multi_node_trtllm_launch_that_stops_after_its_mgmn_nodes_is_stalled_at_launch(tmp_path: Path) -> None:
    # GIVEN four MPI ranks' launcher lines, the last cut before its world size, and nothing after
    report = judge_text(
        tmp_path,
        "mpi_rank: 0\ntllm_mpi_size: 4\n"
        "rank0 run trtllm-serve /models/llama-70b --tp_size 8 --pp_size 4 in background\n"
        "rank0 run mgmn leader node with mpi_world_size: 4 ...\nrank0 host: node-a\n"
        "rank2 run mgmn worker node with mpi_world_size: 4 ...\n"
        "rank1 run mgmn worker node with mpi_world_size: 4 ...\n"
        "rank3 run mgmn worker node with mpi_world_",
    )
    # THEN TensorRT-LLM is stuck at launch, on the last complete launcher step
    assert (report["system"], report["verdict"], report["phase"]) == ("trtllm", "stalled", "launch")
    assert root_text(report) == "rank1 run mgmn worker node with mpi_world_size: 4 ..."


def test_the_launcher_lines_before_the_servers_own_keep_the_servers_phase(tmp_path: Path) -> None:
    # GIVEN the launcher's lines, then the server loading its weights
    report = judge_text(
        tmp_path,
        "Rank0 run trtllm-serve /models/qwen --pp_size 2 in background\n"
        "Rank0 run mgmn leader node with mpi_world_size: 2 ...\n"
        "Rank1 run mgmn worker node with mpi_world_size: 2 ...\n"
        "[12/20/2025-04:20:21] [TRT-LLM] [I] Use 63.32 GB for model weights.\n",
    )
    # THEN the server is past its launch, in weight_load
    assert (report["system"], report["phase"]) == ("trtllm", "weight_load")


# --- TurboMind's DEBUG traces of a generation step (LlamaV2's function names) -----------------------------------


def test_turbomind_decode_traces_after_its_step_line_keep_the_engine_serving(tmp_path: Path) -> None:
    # GIVEN the engine's step count, then a step's DEBUG traces (logits, sampling)
    report = judge_text(
        tmp_path,
        "[TM][INFO] ------------------------- step = 120 -------------------------\n"
        "[TM][DEBUG] turbomind::core::Tensor turbomind::LlamaV2::postDecodeEmbedding(const turbomind::core::Tensor&, "
        "turbomind::core::Buffer)\n"
        "[TM][DEBUG] void turbomind::LlamaV2::dynamicDecode(turbomind::core::Buffer, turbomind::core::Buffer, int, "
        "int)\n",
    )
    # THEN LMDeploy is serving
    assert (report["system"], report["phase"]) == ("lmdeploy", "serving")


def test_turbomind_forward_traces_alone_place_nothing(tmp_path: Path) -> None:
    # GIVEN only LlamaV2::Forward traces (the warm-up runs it too) and the block manager's line
    report = judge_text(
        tmp_path,
        "[TM][INFO] [BlockManager] block_size = 64 MB\n"
        "[TM][DEBUG] void turbomind::LlamaV2::Forward(turbomind::core::Buffer_<int>, turbomind::core::Tensor, int, "
        "int)\n",
    )
    # THEN no step of generation is claimed
    assert report["phase"] != "serving"


# --- the releases people still paste: vLLM 0.4-0.6.5 (worker/model_runner.py, compilation/backends.py) --------


def _v05(time: str, where: str, message: str) -> str:
    return f"INFO 06-02 10:{time} {where}] {message}\n"


def test_a_vllm_05_capture_that_stops_before_it_finishes_is_stalled_in_cuda_graph(tmp_path: Path) -> None:
    # GIVEN 0.4/0.5's capture start, in two lines, after the KV cache, and nothing after
    report = judge_text(
        tmp_path,
        _v05("00:40", "model_runner.py:220", "Loading model weights took 14.9595 GB")
        + _v05("00:52", "gpu_executor.py:83", "# GPU blocks: 27706, # CPU blocks: 2048")
        + _v05(
            "01:00",
            "model_runner.py:1395",
            "Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not "
            "static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.",
        )
        + _v05(
            "01:00",
            "model_runner.py:1399",
            "CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, consider "
            "decreasing `gpu_memory_utilization` or enforcing eager mode.",
        ),
    )
    # THEN it stopped while capturing
    assert (report["system"], report["phase"], report["verdict"]) == ("vllm", "cuda_graph", "stalled")


def test_a_vllm_04_capture_that_finished_ends_its_step(tmp_path: Path) -> None:
    # GIVEN the capture's start and 0.4's end line, which gives no memory figure
    report = judge_text(
        tmp_path,
        _v05(
            "01:00",
            "model_runner.py:1395",
            "Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static.",
        )
        + _v05("01:09", "model_runner.py:1523", "Graph capturing finished in 9 secs."),
    )
    # THEN the capture step ended
    phases = report["phases"]
    assert isinstance(phases, list)
    assert [(p["phase"], p["ended"]) for p in phases] == [("cuda_graph", True)]


def test_vllm_063_compiling_its_graphs_is_in_compile(tmp_path: Path) -> None:
    # GIVEN 0.6.3's torch.compile start lines, the general shape then one specialised shape
    report = judge_text(
        tmp_path,
        _v05("00:10", "backends.py:192", "Compiling a graph for general shapes")
        + _v05("00:40", "backends.py:236", "Compiling a graph for shapes (8,)"),
    )
    # THEN vLLM is compiling
    assert (report["system"], report["phase"]) == ("vllm", "compile")


def test_vllm_05_api_server_whose_rpc_engine_died_crashed_at_launch(tmp_path: Path) -> None:
    # GIVEN 0.5's API server starting its RPC engine, which dies before it answers
    report = judge_text(
        tmp_path,
        "INFO 08-30 10:00:00 api_server.py:339] vLLM API server version 0.5.5\n"
        "ERROR 08-30 10:00:41 api_server.py:171] RPCServer process died before responding to readiness probe\n",
    )
    # THEN it crashed at launch, on that line (no traceback of the engine's in the paste)
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")
    assert root_text(report).endswith("RPCServer process died before responding to readiness probe")
