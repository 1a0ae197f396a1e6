"""Kinds of lines logs printed that went unread (issue 25's `verdict: unknown`): each written from the format the
system prints (the source the pack cites), judged end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from logphase.logs.matcher import explain
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text

# --- Ray -----------------------------------------------------------------------------------------


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "server.log")


def test_a_ray_native_line_at_critical_level_has_its_prefix_read() -> None:
    # GIVEN a raylet line of spdlog's critical level (`C`, what RAY_LOG(FATAL) prints)
    line = "[2021-11-02 08:00:01,120 C 311 311] node_manager.cc:170: This node has beem marked as dead."
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN Ray's native prefix is stripped and the node-death rule reads the message
    assert found.prefix.prefixes == ("ray.prefix.native",)
    assert found.message == "This node has beem marked as dead."
    assert [rule.id for rule, _ in found.matches] == ["ray.timeout.node_marked_dead"]


def test_a_ray_1x_raylet_marked_dead_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN a Ray 1.x raylet whose heartbeats lag, then dies: the GCS marked the node dead
    report = _judge(
        tmp_path,
        "[2021-11-02 07:59:10,001 W 311 340] node_manager.cc:157: Last heartbeat was sent 5120 ms ago.\n"
        "[2021-11-02 08:00:01,120 C 311 311] node_manager.cc:170: This node has beem marked as dead.\n"
        "*** StackTrace Information ***\n"
        "    ray::RayLog::~RayLog()\n",
    )
    # THEN the run timed out, and the death is the cause
    assert report["verdict"] == "timeout"
    assert root_text(report).endswith("This node has beem marked as dead.")


def test_a_ray_client_that_lost_the_gcs_for_the_reconnect_timeout_timed_out_in_dist_init(tmp_path: Path) -> None:
    # GIVEN a driver whose GCS went away: Ray's GcsRpcClient gives up after 60 s and the program terminates
    report = _judge(
        tmp_path,
        "2024-03-01 10:00:00,100\tINFO worker.py:1636 -- "
        "Connecting to existing Ray cluster at address: 10.0.0.5:6379...\n"
        "2024-03-01 10:00:00,900\tINFO worker.py:1821 -- Connected to Ray cluster.\n"
        "[2024-03-01 10:05:12,300 E 901 950] gcs_rpc_client.h:554: Failed to connect to GCS within 60 seconds. "
        "GCS may have been killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly. "
        "The program will terminate.\n",
    )
    # THEN a timeout in dist_init, the line of the GCS lost the cause
    assert (report["verdict"], report["phase"]) == ("timeout", "dist_init")
    assert "Failed to connect to GCS within 60 seconds" in root_text(report)


def test_a_terminal_copy_padding_lines_to_the_column_keeps_whole_lines_apart(tmp_path: Path) -> None:
    # GIVEN a screen copy 120 columns wide: whole lines padded with spaces, long ones cut at the column
    width = 120
    long = (
        "(raylet) [2025-01-02 03:04:05,006 E 77 77] (raylet) node_manager.cc:3040: 1 Workers (tasks / actors) "
        "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 2c82, IP: 10.0.0.12)"
        " over the last time period."
    )
    advice = (
        "(raylet) Refer to the documentation on how to address the out of memory issue. Consider provisioning more "
        "memory on this node or reducing task parallelism by requesting more CPUs per task."
    )

    def screen(line: str) -> list[str]:
        cut = [line[i : i + width] for i in range(0, len(line), width)]
        return [*cut[:-1], cut[-1].ljust(width)]

    rows = [*screen("(raylet) see earlier errors."), *screen(long), *screen("(raylet)"), *screen(advice)]
    assert all(len(row) == width for row in rows) and len(rows) == 6
    report = _judge(tmp_path, "\n".join(rows) + "\n")
    # THEN the padded first line stays a line of its own and the cut record, joined, is read: Ray's OOM kill
    assert report["verdict"] == "crashed"
    assert root_text(report).startswith("(raylet) [2025-01-02 03:04:05,006 E 77 77]")
    root = report["root_cause"]
    assert isinstance(root, dict) and root["line"] == 2


# --- TensorRT / TensorRT-LLM -----------------------------------------------------------------------


def test_tensorrts_out_of_memory_during_an_engine_build_is_the_cause_of_the_crash(tmp_path: Path) -> None:
    # GIVEN trtllm-build: TensorRT's logger (`[TRT] [E]`) reports its error recorder's OutOfMemory, then
    # TensorRT-LLM's builder says the build failed
    report = _judge(
        tmp_path,
        "[05/02/2024-10:00:00] [TRT] [I] Detected 49 inputs and 41 output network tensors.\n"
        "[05/02/2024-10:00:20] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: "
        "OutOfMemory (no further information)\n"
        "[05/02/2024-10:00:20] [TRT] [W] Requested amount of GPU memory (24793579520 bytes) could not be allocated.\n"
        "[05/02/2024-10:00:20] [TRT-LLM] [E] Engine building failed, please check the error log.\n",
    )
    # THEN crashed in compile (the engine build), TensorRT's first error the cause, not the builder's summary
    assert (report["verdict"], report["phase"]) == ("crashed", "compile")
    assert root_text(report).endswith("Error Code 2: OutOfMemory (no further information)")


def test_the_cpp_runtime_relogging_tensorrts_error_while_loading_crashed_in_weight_load(tmp_path: Path) -> None:
    # GIVEN TensorRT-LLM's C++ runtime reading an engine's config, then TensorRT's allocation error re-logged
    report = _judge(
        tmp_path,
        "[TensorRT-LLM][INFO] Engine version 0.14.0 found in the config file, "
        "assuming engine(s) built by new builder API.\n"
        "[TensorRT-LLM][INFO] Loaded engine size: 68370 MiB\n"
        "[TensorRT-LLM][ERROR] [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)\n",
    )
    # THEN crashed while loading, the runtime's error the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")
    assert "Error Code 1: Cuda Runtime (out of memory)" in root_text(report)


def test_an_engine_config_read_starts_weight_load(tmp_path: Path) -> None:
    # GIVEN only the C++ runtime's engine-config line
    report = _judge(
        tmp_path,
        "[TensorRT-LLM][INFO] No engine version found in the config file, "
        "assuming engine(s) built by old builder API.\n",
    )
    # THEN the run is in weight_load
    assert report["phase"] == "weight_load"


def test_the_model_configuration_lines_before_the_engine_is_deserialized_are_weight_load(tmp_path: Path) -> None:
    # GIVEN TrtGptModel's constructor printing its configuration (trtGptModel.h), on two MPI ranks, the log
    # ending there (post-mortem) before either deserializes the engine
    lines = [
        f"[TensorRT-LLM][INFO][{rank}] TRTGptModel {key}: {value}\n"
        for rank in (0, 1)
        for key, value in (
            ("maxNumSequences", "8"),
            ("mMaxAttentionWindowSize", "(4096) * 32"),
            ("enableTrtOverlap", "0"),
        )
    ]
    report = _judge(tmp_path, "".join(lines))
    # THEN the run stopped loading the engine (a step of weight_load), its last configuration line the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert root_text(report) == lines[-1].rstrip("\n")


def test_model_configuration_lines_after_the_engine_config_stay_in_weight_load(tmp_path: Path) -> None:
    # GIVEN the runtime reading the engine's config (weight_load begins), then the configuration lines
    report = _judge(
        tmp_path,
        "[TensorRT-LLM][INFO] Engine version 0.11.0 found in the config file, "
        "assuming engine(s) built by new builder API.\n"
        "[TensorRT-LLM][INFO] TRTGptModel maxBatchSize: 32\n"
        "[TensorRT-LLM][INFO] TRTGptModel normalizeLogProbs: 0\n",
    )
    # THEN still weight_load, the last configuration line the last step read
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert root_text(report) == "[TensorRT-LLM][INFO] TRTGptModel normalizeLogProbs: 0"


# --- vLLM ------------------------------------------------------------------------------------------


def test_a_vllm_launch_waiting_for_a_placement_group_is_stalled_in_launch(tmp_path: Path) -> None:
    # GIVEN vLLM's Ray executor waiting for its placement group (10 s, then doubling) and nothing after
    spec = "specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` to see if you have enough resources."
    wait = "[ray_utils.py:221] Waiting for creating a placement group of specs for"
    report = _judge(
        tmp_path,
        "INFO 02-20 10:00:00 [api_server.py:1000] vLLM API server version 0.7.3\n"
        f"INFO 02-20 10:00:20 {wait} 10 seconds. {spec}\n"
        f"INFO 02-20 10:00:40 {wait} 30 seconds. {spec}\n",
    )
    # THEN stalled in launch, the first wait report the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "launch")
    assert "placement group of specs for 10 seconds" in root_text(report)


def test_a_placement_group_wait_followed_by_loading_is_not_the_cause(tmp_path: Path) -> None:
    # GIVEN the same wait, then the group is placed and the workers load weights
    report = _judge(
        tmp_path,
        "INFO 02-20 10:00:20 [ray_utils.py:221] Waiting for creating a placement group of specs for 10 seconds. "
        "specs=[{'GPU': 1.0}]. Check `ray status` to see if you have enough resources.\n"
        "INFO 02-20 10:01:00 [model_runner.py:1094] Starting to load model meta-llama/Llama-3.1-70B...\n",
    )
    # THEN the run reached weight_load and the wait is not its root cause
    assert report["phase"] == "weight_load"
    root = report["root_cause"]
    assert root is None or (isinstance(root, dict) and root["rule"] != "vllm.launch.placement_group_wait")


# --- Triton (tensorrtllm backend), Open MPI ------------------------------------------------------


def test_triton_loading_a_model_is_weight_load_old_and_quoted_messages_alike(tmp_path: Path) -> None:
    # GIVEN Triton's model repository loading the tensorrt_llm model (older plain, newer quoted messages)
    plain = _judge(
        tmp_path,
        "I0501 08:00:01.100000 77 pinned_memory_manager.cc:241] Pinned memory pool is created\n"
        "I0501 08:00:01.300000 77 model_lifecycle.cc:461] loading: tensorrt_llm:1\n",
    )
    quoted = _judge(
        tmp_path,
        'I0501 08:00:01.300000 77 model_lifecycle.cc:472] "loading: preprocessing:1"\n'
        "I0501 08:00:02.300000 77 model_lifecycle.cc:839] \"successfully loaded 'preprocessing'\"\n",
    )
    # THEN both are in weight_load, and the plain one's loading line is where it stopped
    assert plain["phase"] == quoted["phase"] == "weight_load"
    assert root_text(plain).endswith("loading: tensorrt_llm:1")


def test_open_mpi_failing_to_initialise_is_the_cause_of_the_crash(tmp_path: Path) -> None:
    # GIVEN Open MPI's help text for a runtime that did not come up, between its dashed rules
    report = _judge(
        tmp_path,
        'I0501 08:00:01.300000 77 model_lifecycle.cc:472] "loading: tensorrt_llm:1"\n'
        'I0501 08:00:01.400000 77 backend_model_instance.cc:772] "Starting backend thread for '
        'postprocessing_0_0 at nice 0 on device 0..."\n'
        "--------------------------------------------------------------------------\n"
        "It looks like orte_init failed for some reason; your parallel process is\n"
        "likely to abort.  There are many reasons that a parallel process can\n"
        "fail during orte_init; some of which are due to configuration or\n",
    )
    # THEN crashed, the help text's first line the cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == "It looks like orte_init failed for some reason; your parallel process is"


# --- LMDeploy TurboMind ----------------------------------------------------------------------------


def test_turbomind_step_lines_are_serving(tmp_path: Path) -> None:
    # GIVEN TurboMind's engine loop logging every tenth decoding step on rank 0
    report = _judge(
        tmp_path,
        "[TM][INFO] ------------------------- step = 10 -------------------------\n"
        "[TM][INFO] ------------------------- step = 20 -------------------------\n",
    )
    # THEN the engine is serving
    assert report["phase"] == "serving"
    assert report["system"] == "lmdeploy"


# --- DeepSpeed, Hydra ------------------------------------------------------------------------------


def test_deepspeeds_logger_prefix_is_read() -> None:
    # GIVEN a line of DeepSpeed's logger (`[asctime] [LEVEL] [file:line:func] msg`)
    line = "[2024-06-01 09:00:00,001] [INFO] [launch.py:151:main] nnodes=2, num_local_procs=8, node_rank=1"
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN the prefix is stripped and the launcher rule reads the message
    assert found.prefix.prefixes == ("torch.prefix.deepspeed",)
    assert [rule.id for rule, _ in found.matches] == ["torch.launch.deepspeed"]


def test_the_deepspeed_launcher_killing_its_children_after_one_failed_is_a_crash(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's launcher: a child exited 1, the others are killed, the launcher exits with the code
    report = _judge(
        tmp_path,
        "[2024-06-01 09:00:00,001] [INFO] [launch.py:163:main] dist_world_size=2\n"
        "[2024-06-01 09:00:00,002] [INFO] [launch.py:253:main] process 11 spawned with command: ['python', 'a.py']\n"
        "[2024-06-01 09:30:00,100] [INFO] [launch.py:316:sigkill_handler] Killing subprocess 11\n"
        "[2024-06-01 09:30:00,200] [INFO] [launch.py:316:sigkill_handler] Killing subprocess 12\n"
        "[2024-06-01 09:30:00,300] [ERROR] [launch.py:322:sigkill_handler] ['python', '-u', 'a.py', '--local_rank=1'] "
        "exits with return code = 1\n",
    )
    # THEN crashed after launch, the launcher's exit line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")
    assert root_text(report).endswith("exits with return code = 1")


def test_the_deepspeed_launchers_exit_line_cut_inside_its_command_is_still_the_crash(tmp_path: Path) -> None:
    # GIVEN the launcher killing its children, then sigkill_handler's ERROR (written only for a child that exited
    # non-zero: `{cmd} exits with return code = {code}`) cut inside the command list
    cut = "[2024-06-01 09:30:00,300] [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'a.py', '--local_ra"
    report = _judge(
        tmp_path,
        "[2024-06-01 09:30:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 11\n"
        "[2024-06-01 09:30:00,200] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 12\n" + cut + "\n",
    )
    # THEN crashed after launch, the cut exit line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")
    assert root_text(report) == cut


def test_the_deepspeed_launchers_kill_lines_alone_are_a_crash_where_it_stopped(tmp_path: Path) -> None:
    # GIVEN a shard bar at 0 %, then sigkill_handler's `Killing subprocess {pid}` lines (launch.py 0.9.0) and no
    # return-code line (the paste ends there)
    report = _judge(
        tmp_path,
        "Loading checkpoint shards:   0%|          | 0/7 [00:00<?, ?it/s]\n"
        "[2023-09-10 11:45:59,207] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 6293\n"
        "[2023-09-10 11:45:59,501] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 6294\n",
    )
    # THEN crashed while loading weights (the launcher tears the run down), its first kill line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load")
    assert root_text(report).endswith("Killing subprocess 6293")


def test_the_deepspeed_launchers_kill_lines_give_way_to_its_return_code_line(tmp_path: Path) -> None:
    # GIVEN kill lines, then sigkill_handler's ERROR with the failed child's code
    report = _judge(
        tmp_path,
        "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
        "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py'] "
        "exits with return code = -9\n",
    )
    # THEN crashed, the return-code line (which says how the child ended) the cause, not the kill before it
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("exits with return code = -9")


def test_a_deepspeed_info_line_holding_a_command_list_is_no_failure() -> None:
    # GIVEN the launcher's INFO line that prints a child's command (a list, as the exit line's opens)
    line = "[2024-06-01 09:00:00,002] [INFO] [launch.py:253:main] ['python', '-u', 'a.py', '--local_rank=1']"
    # WHEN explained THEN no failure rule reads it (only sigkill_handler's ERROR is the exit line)
    found = explain(line, load_packs(check_examples=False))
    assert [rule.id for rule, _ in found.matches if rule.id.startswith("torch.deepspeed.child_failed")] == []


def test_a_deepspeed_zero3_job_building_its_model_is_in_weight_load(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's accelerator probe, its NCCL backend, then zero.Init finishing a model
    report = _judge(
        tmp_path,
        "[2024-06-01 09:00:00,001] [INFO] [real_accelerator.py:191:get_accelerator] "
        "Setting ds_accelerator to cuda (auto detect)\n"
        "[2024-06-01 09:00:03,000] [INFO] [comm.py:668:init_distributed] "
        "Initializing TorchBackend in DeepSpeed with backend nccl\n"
        "[2024-06-01 09:00:09,000] [INFO] [partition_parameters.py:344:__exit__] "
        "finished initializing model - num_params = 291, num_elems = 0.49B\n",
    )
    # THEN a torch job in weight_load
    assert (report["system"], report["phase"]) == ("torch", "weight_load")


def test_hydras_job_failure_opens_the_block_whose_exception_is_the_cause(tmp_path: Path) -> None:
    # GIVEN a Hydra app's log line, then Hydra's failure line and the job's exception
    report = _judge(
        tmp_path,
        "[2024-06-01 09:00:00,001][__main__][INFO] - starting\n"
        "Error executing job with overrides: ['trainer.devices=8']\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in main\n'
        "    raise ValueError('bad config')\n"
        "ValueError: bad config\n",
    )
    # THEN crashed, and the job's own exception is the cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == "ValueError: bad config"


def test_hydras_job_failure_alone_is_the_cause(tmp_path: Path) -> None:
    # GIVEN the failure line logged by the app through Hydra's format, and nothing after
    report = _judge(
        tmp_path,
        "[2024-06-01 09:00:00,001][__main__][INFO] - Epoch 3\n"
        "[2024-06-01 09:05:00,001][__main__][ERROR] - Error executing job with overrides: ['trainer.devices=8']\n",
    )
    # THEN crashed, that line the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("Error executing job with overrides: ['trainer.devices=8']")


# --- SGLang hierarchical cache ---------------------------------------------------------------------


def test_deepseek_v4_host_pools_alone_are_the_kv_cache_step(tmp_path: Path) -> None:
    # GIVEN SGLang building DeepSeek-V4's host pools (memory_pool_host.py) on two ranks, the log ending there
    last = (
        "[2026-06-02 10:00:01 TP1] Allocating 0.03 GB host memory for V4 paged pool 'deepseek_v4_c128' "
        "(layers=31, pages=614, item_bytes=1728, layout=layer_first)."
    )
    report = _judge(
        tmp_path,
        "[2026-06-02 10:00:00 TP0] Allocating 0.12 GB host memory for V4 state pool 'deepseek_v4_c4_state' "
        "(layers=30, pages=60, state_page_bytes=65536, layout=layer_first).\n"
        "[2026-06-02 10:00:00 TP1] Allocating 0.12 GB host memory for V4 state pool 'deepseek_v4_c4_state' "
        "(layers=30, pages=60, state_page_bytes=65536, layout=layer_first).\n" + last + "\n",
    )
    # THEN the KV cache's step, stopped there, its last line the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "kv_cache")
    assert root_text(report) == last


def test_deepseek_v4_host_pools_after_the_capture_do_not_move_the_rank_back(tmp_path: Path) -> None:
    # GIVEN a rank that captured its CUDA graphs, then builds the host pools with its tree cache (as the scheduler
    # does after the model worker's init)
    report = _judge(
        tmp_path,
        "[2026-06-02 09:59:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
        "[2026-06-02 10:00:00 TP0] Capture cuda graph end. Time elapsed: 60.00 s. "
        "mem usage=1.00 GB. avail mem=19.00 GB.\n"
        "[2026-06-02 10:00:01 TP0] Allocating 0.03 GB host memory for V4 paged pool 'deepseek_v4_c128' "
        "(layers=31, pages=614, item_bytes=1728).\n",
    )
    # THEN the rank is still past its capture, not back in kv_cache
    assert report["phase"] == "cuda_graph"


# --- torch.distributed (1.9-1.13) -----------------------------------------------------------------


def test_process_group_ncclS_options_of_torch_1_x_in_glogs_format_are_dist_init(tmp_path: Path) -> None:
    # GIVEN torch 1.12's ProcessGroupNCCL constructor logging its options through glog (the options on lines of
    # their own), two ranks, then nothing (post-mortem)
    options = "NCCL_ASYNC_ERROR_HANDLING: 1\nNCCL_DESYNC_DEBUG: 0\nNCCL_BLOCKING_WAIT: 0\nTIMEOUT(ms): 1800000\n"
    report = _judge(
        tmp_path,
        "I0311 08:00:01.100001 4101 ProcessGroupNCCL.cpp:666] [Rank 0] ProcessGroupNCCL initialized with following "
        "options:\n" + options + "I0311 08:00:01.100301 4102 ProcessGroupNCCL.cpp:666] [Rank 1] ProcessGroupNCCL "
        "initialized with following options:\n" + options,
    )
    # THEN the process group was being set up when the log stopped
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init")


def test_process_group_ncclS_options_in_c10s_short_format_are_dist_init(tmp_path: Path) -> None:
    # GIVEN the same constructor line as c10's own logger prints it (`[I ProcessGroupNCCL.cpp:665] `)
    report = _judge(
        tmp_path,
        "[I socket.cpp:787] [c10d] The client socket has connected to [localhost]:29500 on [localhost]:45082.\n"
        "[I ProcessGroupNCCL.cpp:665] [Rank 0] ProcessGroupNCCL initialized with following options:\n"
        "NCCL_ASYNC_ERROR_HANDLING: 1\nNCCL_BLOCKING_WAIT: 0\nTIMEOUT(ms): 1800000\nUSE_HIGH_PRIORITY_STREAM: 0\n",
    )
    # THEN dist_init
    assert report["phase"] == "dist_init"


# --- vLLM platform probe, torch elastic's empty role, SGLang's shared-expert clone bar --------------


def test_vllms_platform_probe_behind_ray_dedup_is_launch(tmp_path: Path) -> None:
    # GIVEN a vLLM process on Ray probing platforms (DEBUG), lines deduplicated by Ray's log monitor
    report = _judge(
        tmp_path,
        "(pid=81) DEBUG 05-02 07:00:01 [__init__.py:35] Checking if TPU platform is available. "
        "[repeated 3x across cluster]\n"
        "(pid=81) DEBUG 05-02 07:00:01 [__init__.py:72] Confirmed CUDA platform is available.\n"
        "(pid=81) DEBUG 05-02 07:00:01 [__init__.py:100] Checking if ROCm platform is available.\n",
    )
    # THEN the process is launching
    assert report["phase"] == "launch"


def test_a_torch_elastic_agent_with_an_empty_role_finishing_is_read() -> None:
    # GIVEN the agent's `[{role}] ` with the empty role a launcher without roles gives
    line = (
        "INFO:torch.distributed.elastic.agent.server.api:[] worker group successfully finished. "
        "Waiting 300 seconds for other agents to finish."
    )
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN the worker group's success is read
    assert [rule.id for rule, _ in found.matches] == ["torch.elastic.worker_group_succeeded"]


def test_sglangs_shared_expert_clone_bar_is_weight_load(tmp_path: Path) -> None:
    # GIVEN SGLang's DeepSeek load_weights cloning the shared expert into the MoE layers under tqdm
    report = _judge(
        tmp_path,
        "[2025-05-02 07:00:00 TP0] Load weight begin. avail mem=70.10 GB\n"
        "Cloning 8 replicas of the shared expert into MoE:  10%|█         | 6/58 [00:04<00:40,  1.30it/s]\n",
    )
    # THEN weight_load, the bar's progress read
    assert report["phase"] == "weight_load"
    found = explain(
        "Cloning 8 replicas of the shared expert into MoE:  10%|█         | 6/58 [00:04<00:40,  1.30it/s]",
        load_packs(check_examples=False),
    )
    assert [(rule.id, groups["done"], groups["total"]) for rule, groups in found.matches] == [
        ("sglang.weight_load.shared_expert_clone_bar", "6", "58")
    ]


def test_rays_dedup_suffix_is_not_part_of_the_message() -> None:
    # GIVEN a line Ray's log monitor folded from several actors: ` [repeated 4x across cluster]` at its end
    line = (
        "(RayWorkerWrapper pid=2345, ip=10.0.0.12) INFO 12-20 10:25:30 model_runner.py:1094] "
        "Starting to load model meta-llama/Llama-3.1-70B... [repeated 4x across cluster]"
    )
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN the message ends where the actor's own text ended
    assert found.message == "Starting to load model meta-llama/Llama-3.1-70B..."


def test_a_pd_decode_server_failing_kv_transfers_is_still_serving(tmp_path: Path) -> None:
    # GIVEN an SGLang PD decode server giving up some requests' KV transfers (the requests are aborted, 500)
    report = _judge(
        tmp_path,
        "[2025-06-01 10:00:00 DP0 TP0 EP0] Some requests fail to receive KV Cache transfer done signal after "
        "bootstrapping. If a greater mean TTFT is acceptable, you can 'export "
        "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the timeout condition. \n"
        "[2025-06-01 10:00:00 DP0 TP0 EP0] Decode transfer failed for request rank=0 decode_req.req.rid='ab12' "
        "decode_req.req.bootstrap_room=42 with exception KVTransferError(bootstrap_room=42): timed out\n",
    )
    # THEN the server is serving, not crashed
    assert (report["verdict"], report["phase"]) == ("ready", "serving")


def test_a_worker_group_success_cut_after_the_wait_is_still_read() -> None:
    # GIVEN the agent's success line as an excerpt cut it, inside `Waiting N seconds for other agents`
    line = (
        "INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. "
        "Waiting 300 seconds f"
    )
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN the success is read all the same
    assert [rule.id for rule, _ in found.matches] == ["torch.elastic.worker_group_succeeded"]


_MOONCAKE_TIMEOUT = (
    "I0331 02:49:30.617945 803444 transfer_engine_py.cpp:454] Sync batch data transfer timeout after 33061142969ns"
)
_MOONCAKE_FAILED = (
    "(Worker pid=782969) (Worker_DP0_TP1_EP1 pid=782969) ERROR 03-31 02:49:30 [mooncake_connector.py:547] "
    "Mooncake transfer failed for request chatcmpl-ba310df4"
)


def test_mooncakes_batch_timeout_and_the_connectors_failed_request_are_serving_marks() -> None:
    # GIVEN Mooncake's `Sync batch data transfer timeout after {ns}ns` (batchTransferSync returns -1) and vLLM-ascend's
    # connector's `Mooncake transfer failed for request {id}` (the request fails, the receiving thread goes on)
    packs = load_packs(check_examples=False)
    # WHEN explained THEN each is read by its rule, a serving mark that says no process failed
    for line, rule_id in (
        (_MOONCAKE_TIMEOUT, "vllm.serving.mooncake_batch_timeout"),
        (_MOONCAKE_FAILED, "vllm.serving.mooncake_transfer_failed"),
    ):
        found = explain(line, packs)
        assert [(rule.id, rule.kind.value, rule.role.value) for rule, _ in found.matches] == [
            (rule_id, "mark", "diagnostic")
        ]


def test_a_ready_server_whose_kv_pull_timed_out_is_still_ready(tmp_path: Path) -> None:
    # GIVEN vLLM's API server ready and serving, then a request's Mooncake KV pull timing out and failing
    report = _judge(
        tmp_path,
        "(APIServer pid=782545) INFO:     Application startup complete.\n"
        '(APIServer pid=782545) INFO:     10.35.102.36:52864 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        f"{_MOONCAKE_TIMEOUT}\n{_MOONCAKE_FAILED}\n",
    )
    # THEN ready: one request failed, no process did
    assert report["verdict"] == "ready"
