"""The phase of a failure whose log shows no phase line: what the crash's own lines prove was reached — a
process group's destructor, a launcher's clean end, a CUDA graph capture's wait, and the frames of a serving
loop, a weight update or a kernel warm-up in a traceback (each from the released source the packs cite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json

TORCH = "/usr/local/lib/python3.10/dist-packages/torch"
SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
LMDEPLOY = "/opt/py311/lib/python3.11/site-packages/lmdeploy"
VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


def _frames(calls: list[tuple[str, int, str, str]], prefix: str = "") -> list[str]:
    lines = []
    for path, number, function, code in calls:
        lines += [f'{prefix}  File "{path}", line {number}, in {function}', f"{prefix}    {code}"]
    return lines


TORCHRUN_FAILED = [
    "E0601 09:04:26.100000 5310 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
    "local_rank: 1 (pid: 5317) of binary: /usr/bin/python3",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
]


# --- ProcessGroupNCCL's destructor: a process group existed ---------------------------------------------------


def test_a_failed_worker_that_warned_its_process_group_was_not_destroyed_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN torch 2.6's exit warning of rank 1 (printed by ~ProcessGroupNCCL), then torchrun's failure report
    lines = [
        "[rank1]:[W601 09:04:25.554861212 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was "
        "not called before program exit, which can leak resources. For more info, please see "
        "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
        *TORCHRUN_FAILED,
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a crash, and the job got as far as its process group: dist_init
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")


def test_the_older_wording_of_the_destructor_warning_reaches_dist_init_too(tmp_path: Path) -> None:
    # GIVEN torch 2.4's wording on two ranks, one worker's SIGTERM by the agent and its exit-code-1 report
    warning = (
        "[rank{r}]:[W1105 11:20:0{r}.000000000 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT "
        "been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
        "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare "
        "cases this process can exit before this point and block the progress of another member of the process "
        "group. This constraint has always been present,  but this warning has only been added since PyTorch 2.4 "
        "(function operator())"
    )
    lines = [
        warning.format(r=0),
        warning.format(r=2),
        "W1105 11:20:03.000000 777 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 781 "
        "closing signal SIGTERM",
        "E1105 11:20:04.000000 777 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 780) of binary: /opt/conda/bin/python",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, dist_init reached
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")


# --- the NCCL watchdog thread meeting a CUDA fault: a process group existed --------------------------------------


def test_an_illegal_access_the_watchdog_thread_reports_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN rank 5's watchdog thread ending on a CUDA illegal memory access, torch's hint lines, the C++ frames
    lines = [
        "[rank5]:[E1010 08:00:00.100000000 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 5] Process "
        "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent "
        "call first):",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, the illegal access the cause, and dist_init reached
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")
    assert report["root_cause"]["line"] == 1


def test_the_older_nccl_watchdog_wording_in_a_terminate_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN torch 2.1's `NCCL watchdog thread` quoted by std::terminate, then the shell's report of the abort
    lines = [
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  [Rank 2] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access "
        "was encountered",
        "Aborted (core dumped)",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN aborted, dist_init reached
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "dist_init")


# --- torch_npu's HCCL communicator init (Ascend's NCCL) ------------------------------------------------------------


def test_a_failed_hccl_communicator_init_in_a_workers_traceback_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN a worker's traceback from its first all-reduce into torch_npu, ending in the communicator's init error
    lines = [
        "Traceback (most recent call last):",
        *_frames(
            [(f"{TORCH}/distributed/distributed_c10d.py", 2501, "all_reduce", "work = group.allreduce([tensor], opts)")]
        ),
        "RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL function error: "
        "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 7",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, the communicator's init the cause, dist_init reached
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")
    assert report["root_cause"]["line"] == 4


def test_the_older_hccl_init_call_quoted_by_a_rank_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN rank 3's error with the older HcclCommInitRootInfo call, then torchrun's failure report
    lines = [
        "[rank3]: RuntimeError: createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:1200 HCCL function "
        "error: HcclCommInitRootInfo(numRanks, &rootInfo, rank, &(comm->hcclComm_)), error code is 1",
        *TORCHRUN_FAILED,
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, dist_init reached
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")


# --- torchrun's agent: a rendezvous begun, the worker group finished -------------------------------------------


def test_an_agent_that_restarts_its_failed_group_began_a_rendezvous(tmp_path: Path) -> None:
    # GIVEN a worker's failure, the agent restarting the group (stop, rendezvous) and its own traceback
    lines = [
        "E0401 10:00:00.000000 900 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 1 (pid: 905) of binary: /usr/bin/python3",
        "I0401 10:00:00.100000 900 torch/distributed/elastic/agent/server/api.py:889] [trainer] Worker group FAILED. "
        "2/2 attempts left; will restart worker group",
        "I0401 10:00:00.200000 900 torch/distributed/elastic/agent/server/api.py:699] [trainer] Stopping worker group",
        "I0401 10:00:00.300000 900 torch/distributed/elastic/agent/server/api.py:677] [trainer] Rendezvous'ing worker "
        "group",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, and the rendezvous was reached: the agent's step, `launch` (the workers' process groups are
    # dist_init; fixtures/realworld/README.md, rendezvous)
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "launch")


def test_a_python_logging_agent_stuck_after_its_rendezvous_began_is_in_launch(tmp_path: Path) -> None:
    # GIVEN torch 1.x's Python-logging agent starting and beginning its rendezvous, then nothing
    lines = [
        "INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:",
        "  entrypoint       : train.py",
        "  min_nodes        : 2",
        "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous'ing worker group",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled in launch: no worker was started, so no process group began
    assert (report["verdict"], report["phase"]) == ("stalled", "launch")


# --- torchrun's agent: the worker group finished, so its work ran ----------------------------------------------


def test_an_agent_whose_worker_group_finished_ran_the_job_to_its_end(tmp_path: Path) -> None:
    # GIVEN torchrun's agent (glog format, role `default`): rendezvous done, workers started, then every worker
    # exited 0
    lines = [
        "I0301 08:00:00.000000 4242 torch/distributed/elastic/agent/server/api.py:525] [default] Starting worker group",
        "I0301 08:00:00.100000 4242 torch/distributed/elastic/multiprocessing/api.py:263] Setting worker0 reply "
        "file to: /tmp/torchelastic_x/none_y/attempt_0/0/error.json",
        "I0301 09:12:40.000000 4242 torch/distributed/elastic/agent/server/api.py:880] [default] worker group "
        "successfully finished. Waiting 300 seconds for other agents to finish.",
        "I0301 09:12:40.100000 4242 torch/distributed/elastic/agent/server/api.py:932] Local worker group finished "
        "(WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished, and the job's own steps were reached: serving (a job's work)
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "serving")


def test_a_python_logging_agent_whose_group_finished_after_its_rendezvous_reached_serving(tmp_path: Path) -> None:
    # GIVEN torch 1.x's Python-logging agent (empty role) printing its rendezvous result, then the group's end
    lines = [
        "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:",
        "  restart_count=0",
        "  master_addr=node-a",
        "  group_rank=1",
        "  group_world_size=2",
        "",
        "INFO:torch.distributed.elastic.agent.server.api:[] Starting worker group",
        "INFO:torch.distributed.elastic.agent.server.api:[] worker group successfully finished. Waiting 300 "
        "seconds for other agents to finish.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished in serving, not left at the rendezvous
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "serving")


# --- a job whose every rank shut down cleanly reached what its lines prove -------------------------------------------
# ProcessGroupNCCL's destructor (torch 2.6+ `~ProcessGroupNCCL`, `TORCH_WARN_ONCE` while the group was never
# destroyed) runs as the interpreter tears the global context down: at any exit, an uncaught exception's too. It proves
# the group, dist_init (fixtures/realworld/README.md: a line only a live process group prints), not the job's steps.

NOT_DESTROYED = (
    "[rank{r}]:[W616 21:29:3{r}.762196891 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was "
    "not called before program exit, which can leak resources. For more info, please see "
    "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())"
)


def test_a_job_known_only_by_its_exit_warnings_reached_its_process_group(tmp_path: Path) -> None:
    # GIVEN a script's own lines torch does not know, then each of its two ranks' exit warning, no failure
    lines = [
        "step 100/100 loss=1.234",
        "saving checkpoint to /ckpt/final",
        NOT_DESTROYED.format(r=0),
        NOT_DESTROYED.format(r=1),
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished, at the process group the warnings prove: no line read shows a step
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "dist_init")


def test_a_job_that_exits_cleanly_after_its_communicators_came_up_reached_dist_init(tmp_path: Path) -> None:
    # GIVEN NCCL's init of each rank's communicator, then each rank's clean exit
    lines = [
        "node1:4100:4100 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId "
        "0x1a2b3c - Init COMPLETE",
        "node1:4101:4101 [1] NCCL INFO comm 0x55d0d0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 1c000 commId "
        "0x1a2b3c - Init COMPLETE",
        NOT_DESTROYED.format(r=0),
        NOT_DESTROYED.format(r=1),
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished at dist_init: neither the communicators nor the exit warnings prove a step
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "dist_init")


def test_a_job_whose_steps_show_before_its_exit_warnings_reached_serving(tmp_path: Path) -> None:
    # GIVEN a torchtitan step on each rank (torch.train.torchtitan_step), then each rank's exit warning
    lines = [
        "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)",
        "[rank1]:[titan] 2025-06-16 22:30:50,324 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)",
        NOT_DESTROYED.format(r=0),
        NOT_DESTROYED.format(r=1),
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished in serving, as its step lines prove
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "serving")


def test_the_exit_warning_after_an_uncaught_exception_is_no_finish(tmp_path: Path) -> None:
    # GIVEN a rank's traceback, then the destructor's warning the interpreter's exit printed after it
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/app/train.py", line 12, in <module>',
        "[rank0]:     main()",
        "[rank0]: RuntimeError: AoT scheduling is required for full cuda graph.",
        NOT_DESTROYED.format(r=0),
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the exception decides (crashed), and the group is all the lines prove
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")


def test_an_exit_line_printed_only_after_the_steps_proves_them(tmp_path: Path) -> None:
    # GIVEN prime-rl's zeroband trainer's end (its `while True` over the steps broke at total_steps), then torch's
    # exit warning
    lines = [
        "06-16 21:29:11 [TRAIN] [Rank 0] [INFO] [train.py:100] start training on 1 rank(s)",
        "06-16 21:29:32 [TRAIN] [Rank 0] [INFO] [train.py:535] Training finished, exiting ...",
        "06-16 21:29:32 [TRAIN] [Rank 0] [INFO] [train.py:536] Max memory: 12.08 GB",
        NOT_DESTROYED.format(r=0),
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN finished in serving: the end line proves the steps, the warning only the group
    assert (report["verdict"], report["furthest_phase"]) == ("finished", "serving")


# --- torch's CUDA graph capture waiting for NCCL work ----------------------------------------------------------


def test_a_job_that_waited_for_nccl_work_before_its_graph_capture_reached_cuda_graph(tmp_path: Path) -> None:
    # GIVEN both ranks' capture_begin warning, then one rank's std::terminate and torchrun's SIGABRT report
    lines = [
        "[rank0]:[W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work to finish before starting graph "
        "capture. (function operator())",
        "[rank1]:[W CUDAGraph.cpp:145] Warning: Waiting for pending NCCL work to finish before starting graph "
        "capture. (function operator())",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  NCCL Error 5: invalid usage (run with NCCL_DEBUG=WARN for details)",
        "[2024-06-12 03:45:51,447] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
        "local_rank: 1 (pid: 10454) of binary: /usr/bin/python",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN aborted (SIGABRT), and the job had begun capturing a CUDA graph
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "cuda_graph")


def test_the_capture_wait_in_a_glog_stamped_line_before_a_python_error_reaches_cuda_graph(tmp_path: Path) -> None:
    # GIVEN the same warning in torch 2.4's stamped c10 form (no rank tag), then a Python traceback of the capture
    lines = [
        "[W1201 10:00:00.123456789 CUDAGraph.cpp:151] Warning: Waiting for pending NCCL work to finish before "
        "starting graph capture. (function operator())",
        "Traceback (most recent call last):",
        *_frames([("/work/bench.py", 40, "<module>", "graph.capture_end()")]),
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, cuda_graph reached
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "cuda_graph")


def test_a_traceback_cut_inside_torchs_graph_context_is_the_captures(tmp_path: Path) -> None:
    # GIVEN the frames of torch.cuda.graph's exit (its header before the paste) and the error ending the capture
    lines = [
        *_frames(
            [
                (f"{TORCH}/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
                (f"{TORCH}/cuda/graphs.py", 84, "capture_end", "super().capture_end()"),
            ]
        ),
        "RuntimeError: CUDA error: out of memory",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed in cuda_graph
    assert (report["verdict"], report["phase"]) == ("crashed", "cuda_graph")


def test_a_scripts_own_capture_failing_in_capture_end_is_the_captures(tmp_path: Path) -> None:
    # GIVEN a user script's traceback: its own capture function, `with torch.cuda.graph(g):` exiting
    lines = [
        "Traceback (most recent call last):",
        *_frames(
            [
                ("/work/infer.py", 88, "<module>", "runner.capture(batch_sizes)"),
                ("/work/runner.py", 41, "capture", "with torch.cuda.graph(graph, pool=self.pool):"),
                (f"{TORCH}/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
            ]
        ),
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed in cuda_graph
    assert (report["verdict"], report["phase"]) == ("crashed", "cuda_graph")


# --- SGLang 0.2's model server loop and weight-update requests --------------------------------------------------


def test_a_prefill_that_fails_in_sglang_0_2s_model_server_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN 0.2's `Exception in ModelTpServer:` traceback through exposed_step -> forward_step -> a decode batch
    lines = [
        "[11:02:07 TP1] Exception in ModelTpServer:",
        "Traceback (most recent call last):",
        *_frames(
            [
                (f"{SRT}/managers/tp_worker.py", 244, "exposed_step", "self.forward_step()"),
                (f"{TORCH}/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
                (f"{SRT}/managers/tp_worker.py", 273, "forward_step", "self.forward_decode_batch(self.running_batch)"),
                (f"{SRT}/managers/tp_worker.py", 690, "forward_decode_batch", "next_token_ids = batch.sample(x)"),
            ]
        ),
        "RuntimeError: CUDA error: device-side assert triggered",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "serving", "serving")


def test_a_controller_traceback_through_exposed_step_is_serving(tmp_path: Path) -> None:
    # GIVEN the single-GPU controller's loop calling the model server's step, cut inside forward_prefill_batch
    lines = [
        "Traceback (most recent call last):",
        *_frames(
            [
                (
                    f"{SRT}/managers/controller_single.py",
                    102,
                    "loop_for_forward",
                    "out_pyobjs = self.tp_server.exposed_step(recv_reqs)",
                ),
                (f"{SRT}/managers/tp_worker.py", 244, "exposed_step", "self.forward_step()"),
                (f"{SRT}/managers/tp_worker.py", 260, "forward_step", "self.forward_prefill_batch(new_batch)"),
                (
                    f"{SRT}/managers/tp_worker.py",
                    507,
                    "forward_prefill_batch",
                    "output = self.model_runner.forward(batch, ForwardMode.EXTEND)",
                ),
            ]
        ),
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_a_weight_update_groups_process_group_failing_is_serving_not_dist_init(tmp_path: Path) -> None:
    # GIVEN the scheduler's traceback of /init_weights_update_group, whose inner frames make a process group
    lines = [
        "[2025-03-05 03:55:55 TP2] Scheduler hit an exception: Traceback (most recent call last):",
        *_frames(
            [
                (
                    f"{SRT}/managers/scheduler.py",
                    1681,
                    "init_weights_update_group",
                    "success, message = self.tp_worker.init_weights_update_group(recv_req)",
                ),
                (
                    f"{SRT}/managers/tp_worker.py",
                    188,
                    "init_weights_update_group",
                    "success, message = self.model_runner.init_weights_update_group(",
                ),
                (
                    f"{SRT}/model_executor/model_runner.py",
                    455,
                    "init_weights_update_group",
                    "self._model_update_group = init_custom_process_group(",
                ),
                (
                    f"{TORCH}/distributed/distributed_c10d.py",
                    1520,
                    "init_process_group",
                    "store, rank, world_size = next(rendezvous_iterator)",
                ),
            ]
        ),
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29600, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving: a running server took the request
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_sglang_0_2s_update_weights_request_failing_is_serving(tmp_path: Path) -> None:
    # GIVEN 0.2's model server failing in /update_weights (tp_worker.update_weights -> model_runner.update_weights)
    lines = [
        "[09:15:00 TP0] Exception in ModelTpServer:",
        "Traceback (most recent call last):",
        *_frames(
            [
                (
                    f"{SRT}/managers/tp_worker.py",
                    238,
                    "exposed_step",
                    "success, message = self.update_weights(recv_req)",
                ),
                (
                    f"{SRT}/managers/tp_worker.py",
                    865,
                    "update_weights",
                    "success, message = self.model_runner.update_weights(",
                ),
                (f"{SRT}/model_executor/model_runner.py", 250, "update_weights", "model = get_model(**vars)"),
            ]
        ),
        "FileNotFoundError: No such file or directory: '/ckpt/step-200/model.safetensors'",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


# --- SGLang's warmup failing after uvicorn answered a stray GET ------------------------------------------------------

UVICORN_UP = [
    "[2024-11-02 09:00:10] INFO:     Started server process [4100]",
    "[2024-11-02 09:00:10] INFO:     Waiting for application startup.",
    "[2024-11-02 09:00:10] INFO:     Application startup complete.",
    "[2024-11-02 09:00:10] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
]


def test_a_browsers_404_before_the_warmup_fails_is_no_serving(tmp_path: Path) -> None:
    # GIVEN uvicorn up, a browser's GET of the favicon answered 404, then the warmup request's failure
    lines = [
        *UVICORN_UP,
        '[2024-11-02 09:00:15] INFO:     10.1.2.3:50122 - "GET /favicon.ico HTTP/1.1" 404 Not Found',
        "[2024-11-02 09:02:10] Initialization failed. warmup error: Traceback (most recent call last):",
        *_frames(
            [(f"{SRT}/server.py", 470, "_wait_and_warmup", "res = requests.post(url + request_name, json=json_data")]
        ),
        "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='127.0.0.1', port=30000): Read timed out.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN the server failed in its warmup, not while serving: its request timed out (a ReadTimeout)
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("timeout", "warmup", "warmup")


def test_a_get_of_the_root_answered_404_shows_only_the_http_server_up(tmp_path: Path) -> None:
    # GIVEN uvicorn up and a GET / answered 404, then the log ends (the warmup still running)
    lines = [*UVICORN_UP, '[2024-11-02 09:00:20] INFO:     127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found']
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled at http_start: no request of the model was served
    assert (report["verdict"], report["phase"]) == ("stalled", "http_start")


def test_a_warmup_traceback_of_sglang_0_2s_server_module_is_the_warmups(tmp_path: Path) -> None:
    # GIVEN only the frames of 0.2's warmup thread (srt/server.py) and the assertion on the warmup's answer
    lines = [
        "Traceback (most recent call last):",
        *_frames([(f"{SRT}/server.py", 480, "_wait_and_warmup", 'assert res.status_code == 200, f"{res}"')]),
        "AssertionError: <Response [500]>",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed in warmup
    assert (report["verdict"], report["phase"]) == ("crashed", "warmup")


# --- LMDeploy's PyTorch engine loop ----------------------------------------------------------------------------


def test_a_failure_inside_lmdeploys_engine_main_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN the engine's `Task <MainLoop> failed` report and its traceback through the loop's main coroutine
    lines = [
        "2025-04-10 12:00:00,000 - lmdeploy - ERROR - engine.py:781 - Task <MainLoop> failed",
        "Traceback (most recent call last):",
        *_frames(
            [
                (f"{LMDEPLOY}/pytorch/engine/engine.py", 776, "__task_callback", "task.result()"),
                (
                    f"{LMDEPLOY}/pytorch/engine/engine.py",
                    827,
                    "async_loop",
                    "await self._async_loop_main(resp_que=resp_que, has_runable_event=has_runable_event)",
                ),
                (
                    f"{LMDEPLOY}/pytorch/engine/engine.py",
                    760,
                    "_async_loop_main",
                    "out = await self.executor.get_output_async()",
                ),
            ]
        ),
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_a_bare_traceback_of_an_older_lmdeploy_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN an older engine's `_async_loop_background` frames, pasted without any log line around them
    lines = [
        "Traceback (most recent call last):",
        *_frames(
            [
                (
                    f"{LMDEPLOY}/pytorch/engine/engine.py",
                    950,
                    "_async_loop_background",
                    "await self._async_step_background(**forward_inputs)",
                ),
                (
                    f"{LMDEPLOY}/pytorch/engine/model_agent.py",
                    300,
                    "_async_step_background",
                    "output = await self._async_model_forward(inputs)",
                ),
            ]
        ),
        "AssertionError: block table length mismatch",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed while serving
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_lmdeploys_loop_clean_up_alone_proves_no_serving(tmp_path: Path) -> None:
    # GIVEN a traceback from Engine.close() into `_loop_finally` (which close() calls with or without a loop)
    lines = [
        "Traceback (most recent call last):",
        *_frames(
            [
                (f"{LMDEPLOY}/pytorch/engine/engine.py", 840, "close", "self._loop_finally()"),
                (f"{LMDEPLOY}/pytorch/engine/engine.py", 793, "_loop_finally", "self.executor.release()"),
            ]
        ),
        "AttributeError: 'NoneType' object has no attribute 'release'",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, with no phase proved beyond launch
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "launch")


def test_lmdeploys_cache_engine_initialised_on_a_rank_puts_a_hung_start_in_kv_cache(tmp_path: Path) -> None:
    # GIVEN a 0.7.3 PyTorch-engine start (DEBUG): model built, the cache engine initialised, then nothing
    lines = [
        "2025-03-19 16:51:47,996 - lmdeploy - INFO - dist_utils.py:28 - MASTER_ADDR=10.0.0.3, MASTER_PORT=29500",
        "2025-03-19 16:51:50,431 - lmdeploy - DEBUG - model_agent.py:490 - rank[0] - build model.",
        "2025-03-19 16:52:05,100 - lmdeploy - DEBUG - cache_engine.py:62 - Initialize cache engine with 157 gpu "
        "blocks and 0 cpu blocks.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled in kv_cache
    assert (report["verdict"], report["phase"]) == ("stalled", "kv_cache")


def test_the_cache_engine_line_after_weights_of_a_ray_worker_is_kv_cache(tmp_path: Path) -> None:
    # GIVEN the same lines as a Ray worker prints them (one actor's tag on each)
    lines = [
        "(RayWorkerWrapper pid=390) 2025-06-02 08:00:01,000 - lmdeploy - INFO - model_agent.py:490 - build model.",
        "(RayWorkerWrapper pid=390) 2025-06-02 08:00:40,000 - lmdeploy - DEBUG - cache_engine.py:62 - Initialize "
        "cache engine with 4096 gpu blocks and 512 cpu blocks.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled in kv_cache
    assert (report["verdict"], report["phase"]) == ("stalled", "kv_cache")


# --- vLLM: a model constructed without torch.compile support ---------------------------------------------------------


def test_a_worker_that_dies_after_its_model_was_constructed_is_in_weight_load(tmp_path: Path) -> None:
    # GIVEN rank 0's warning as its model class is constructed, then the executor's report of a dead worker
    lines = [
        "(VllmWorker rank=0 pid=2201) WARNING 05-02 10:00:00 [config.py:3785] `torch.compile` is turned on, but the "
        "model org/custom-moe does not support it. Please open an issue on GitHub if you want it to be supported.",
        "CRITICAL 05-02 10:00:05 [multiproc_executor.py:49] MulitprocExecutor got fatal signal from worker "
        "processes, shutting down. See stack trace above for root cause issue.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed, in weight_load
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "weight_load")


def test_a_start_that_ends_after_the_compile_support_warning_stalled_in_weight_load(tmp_path: Path) -> None:
    # GIVEN a V1 worker's warning (0.11's config/vllm.py) and nothing after it
    lines = [
        "(Worker_TP0 pid=900) WARNING 11-24 11:42:40 [vllm.py:1111] `torch.compile` is turned on, but the model "
        "org/custom-model does not support it. Please open an issue on GitHub if you want it to be supported.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN stalled in weight_load
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")


# --- vLLM's DeepGEMM warm-up --------------------------------------------------------------------------------------


def test_an_oom_in_vllms_deep_gemm_warmup_is_compile(tmp_path: Path) -> None:
    # GIVEN a V1 worker's error block: compile_or_warm_up_model -> kernel_warmup -> deep_gemm_warmup -> _warmup
    prefix = "(Worker_TP1 pid=407) ERROR 11-25 08:05:06 [multiproc_executor.py:815] "
    lines = [
        f"{prefix}WorkerProc hit an exception.",
        f"{prefix}Traceback (most recent call last):",
        *_frames(
            [
                (f"{VLLM}/v1/worker/gpu_worker.py", 425, "compile_or_warm_up_model", "kernel_warmup(self)"),
                (
                    f"{VLLM}/model_executor/warmup/kernel_warmup.py",
                    37,
                    "kernel_warmup",
                    "deep_gemm_warmup(model, max_tokens)",
                ),
                (
                    f"{VLLM}/model_executor/warmup/deep_gemm_warmup.py",
                    318,
                    "deep_gemm_warmup",
                    "deepgemm_grouped_fp8_gemm_nt_contiguous_warmup(model, max_tokens)",
                ),
                (
                    f"{VLLM}/model_executor/warmup/deep_gemm_warmup.py",
                    262,
                    "_warmup",
                    "out = torch.empty((MAX_M, n), device=device, dtype=torch.bfloat16)",
                ),
            ],
            prefix=prefix,
        ),
        f"{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 666.00 MiB.",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed in compile (DeepGEMM's JIT warm-up)
    assert (report["verdict"], report["phase"]) == ("crashed", "compile")


def test_a_bare_traceback_cut_inside_the_deep_gemm_warmup_is_compile(tmp_path: Path) -> None:
    # GIVEN a paste of the frames alone, starting at the warm-up module's entry, no prefix, no header
    frames = _frames(
        [
            (
                f"{VLLM}/model_executor/warmup/deep_gemm_warmup.py",
                293,
                "deepgemm_fp8_gemm_nt_warmup",
                "_deepgemm_fp8_gemm_nt_warmup(w=w, ws=ws, max_tokens=max_tokens)",
            ),
            (
                f"{VLLM}/model_executor/warmup/deep_gemm_warmup.py",
                190,
                "_deepgemm_fp8_gemm_nt_warmup",
                "a1q = torch.empty((max_tokens, k), device=device, dtype=torch.float8_e4m3fn)",
            ),
        ]
    )
    lines = [*frames, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN crashed in compile
    assert (report["verdict"], report["phase"]) == ("crashed", "compile")


def test_a_cuda_error_that_names_a_capturing_stream_failed_in_cuda_graph(tmp_path: Path) -> None:
    # GIVEN a traceback whose exception line is the CUDA runtime's cudaErrorStreamCaptureUnsupported as torch words it
    # (`CUDA error: operation not permitted when stream is capturing`), and no phase line
    report = _analyze(
        tmp_path,
        [
            "Traceback (most recent call last):",
            *_frames([("/srv/model.py", 41, "forward", "y = x.item()")]),
            "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        ],
    )
    # WHEN analysed THEN it crashed during a CUDA graph capture, that line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "cuda_graph")
    assert report["root_cause"]["text"] == "RuntimeError: CUDA error: operation not permitted when stream is capturing"


def test_a_captured_event_error_under_the_watchdogs_exit_reached_cuda_graph_and_is_the_cause(tmp_path: Path) -> None:
    # GIVEN ProcessGroupNCCL's watchdog exit whose exception text starts on the next line, HIP's hipErrorCapturedEvent
    # (`HIP error: operation not permitted on an event last recorded in a capturing stream`)
    report = _analyze(
        tmp_path,
        [
            "Process group watchdog thread terminated with exception:",
            "HIP error: operation not permitted on an event last recorded in a capturing stream",
        ],
    )
    # WHEN analysed THEN a crash, the HIP error (what the thread died of) the cause, and a graph capture was reached
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["text"] == (
        "HIP error: operation not permitted on an event last recorded in a capturing stream"
    )
    assert report["furthest_phase"] == "cuda_graph"


def test_a_watchdog_exit_whose_text_below_no_rule_reads_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN torch_npu's watchdog exit, its exception text on the next line in words no rule reads
    report = _analyze(
        tmp_path,
        [
            "[rank9]:[E302 10:00:00.000000001 compiler_depend.ts:1693] [Rank 9] HCCL watchdog thread terminated "
            "with exception:",
            "[ERROR] 2025-03-02-10:00:00 (PID:11, Device:1, RankID:9) ERR02005 DIST internal error",
        ],
    )
    # WHEN analysed THEN a crash after dist_init, the exit line the cause (nothing else says what)
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")
    assert report["root_cause"]["text"].endswith("HCCL watchdog thread terminated with exception:")


def test_a_benchmark_or_trainer_end_line_alone_proves_its_steps(tmp_path: Path) -> None:
    # GIVEN only a job's own end line, each printed after its steps: nccl-tests' check after its last size (common.cu),
    # torchtitan's success branch after trainer.train() returned (train.py main)
    for end in (
        ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 92.3405 "],
        ["[titan] 2025-06-16 22:40:01,100 - root - INFO - Process group destroyed."],
    ):
        # WHEN analysed
        report = _analyze(tmp_path, end)
        # THEN finished in serving: the end line says the steps ran
        assert (report["verdict"], report["furthest_phase"]) == ("finished", "serving"), end


def test_a_segfault_after_a_megatron_iteration_cut_at_its_head_is_during_the_steps(tmp_path: Path) -> None:
    # GIVEN a paste that starts inside Megatron's training_log line (its iteration counter cut away; its tail
    # `number of skipped iterations: … | number of nan iterations: … |` only that line prints), then torchrun's
    # agent reporting local rank 0 killed by SIGSEGV
    lines = [
        " | learning rate: 5.333333E-06 | global batch size:     4 | lm loss: 1.420515E+00 | loss scale: 1.0 | grad "
        "norm: 13.636 | number of skipped iterations:   0 | number of nan iterations:   0 | ",
        "W1223 05:17:58.996000 3304089 site-packages/torch/distributed/elastic/multiprocessing/api.py:908] Sending "
        "process 3304210 closing signal SIGTERM",
        "E1223 05:18:02.971000 3304089 site-packages/torch/distributed/elastic/multiprocessing/api.py:882] failed "
        "(exitcode: -11) local_rank: 0 (pid: 3304209) of binary: /usr/bin/python3",
    ]
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN aborted (a signal of its own) in the job's steps
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "serving")
