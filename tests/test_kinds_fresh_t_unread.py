"""Lines the fresh-t batch left unread, each written from the format its system prints: SGLang's pid-and-file logging
format, the 2.4 nightlies' ProcessGroupNCCL destructor wording, vLLM 0.10.2's expired NIXL KV blocks, c10's
expandable_segments warning, and a run with no phase line placed by a note printed while a step runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text


def _decode(stamp: str, pid: int, tags: str, running: int) -> str:
    """SGLang's scheduler_metrics_mixin decode line under `%Y-%m-%d %H:%M:%S LEVEL PID [{tags }file.py:N] `."""
    return (
        f"{stamp} INFO {pid} [{tags}scheduler_metrics_mixin.py:222] Decode batch. #running-req: {running}, "
        f"#token: 157952, token usage: 0.21, accept len: 1.93, cuda graph: True, gen throughput (token/s): 693.45, "
        "#queue-req: 0, "
    )


def test_pid_and_file_format_with_interleaved_dp_ranks_is_a_serving_server_by_rank(tmp_path: Path) -> None:
    # GIVEN decode batches of three DP ranks interleaved, in the format with the tags inside the file's brackets (with
    # configure_logger's leading space on one and without it on the others, as both deployments printed)
    text = "".join(
        _decode(f"2025-10-20 03:02:{second:02d}", 31220 + dp, tags, 32) + "\n"
        for second in range(3)
        for dp, tags in ((3, "DP3 TP3 EP3 "), (5, " DP5 TP5 EP5 "), (2, "DP2 TP2 EP2 "))
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the server serves, and every DP rank is named from its tags
    assert (report["system"], report["phase"], report["verdict"]) == ("sglang", "serving", "ready")
    assert set(report["ranks"]) == {"DP2 TP2 EP2", "DP3 TP3 EP3", "DP5 TP5 EP5"}


def test_pid_and_file_format_of_an_untagged_process_reads_two_decode_lines(tmp_path: Path) -> None:
    # GIVEN two decode batches of a TP=1 server (no tags: `[scheduler_metrics_mixin.py:287] `), and nothing else
    text = _decode("2025-12-04 20:35:53", 151972, "", 48) + "\n" + _decode("2025-12-04 20:35:54", 151972, "", 48) + "\n"
    # WHEN judged THEN the server is serving: the two lines are read, not left unknown
    report = judge_text(tmp_path, text)
    assert (report["phase"], report["verdict"]) == ("serving", "ready")


@pytest.mark.parametrize(
    "wording",
    [
        "WARNING: process group has NOT been destroyed before it is being destructed. On normal program exit, the "
        "application should call destroy_process_group to ensure that any pending NCCL data transfers have finished "
        "in this process.",
        "Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program "
        "exit, the application should call destroy_process_group to ensure that any pending NCCL operations have "
        "finished in this process. (function operator())",
    ],
)
def test_every_ranks_destructor_warning_at_exit_is_a_finished_job_in_either_wording(
    tmp_path: Path, wording: str
) -> None:
    # GIVEN ~ProcessGroupNCCL's warning from both ranks of a job as their interpreters exit (the 2.4 nightlies'
    # wording and 2.4-2.5's)
    text = "".join(
        f"[rank{rank}]:[W515 07:06:42.8{rank}9549331 ProcessGroupNCCL.cpp:1117] {wording}\n" for rank in (0, 1)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job finished and a process group had been made
    assert report["verdict"] == "finished"
    assert report["furthest_phase"] in ("dist_init", "serving")


def test_expired_nixl_kv_blocks_on_the_prefill_engine_are_a_serving_server_not_a_failure(tmp_path: Path) -> None:
    # GIVEN vLLM 0.10.2's get_finished warnings on a prefill engine core: requests whose KV no decode worker fetched
    text = "".join(
        f"(EngineCore_DP0 pid=3747544) WARNING 09-24 16:35:21 [nixl_connector.py:1048] Releasing expired KV blocks "
        f"for request cmpl-{n:08x}-1c3c-41b5-aeaa-b8421e81fd5c-0 which were retrieved by 0 decode worker(s) "
        "within 120 seconds.\n"
        for n in range(3)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the engine is serving: a request's transfer given up is no crash, and no cause is named
    assert (report["system"], report["phase"], report["verdict"]) == ("vllm", "serving", "ready")
    assert report["root_cause"] is None


def test_expandable_segments_warnings_alone_stall_at_launch_quoting_the_last_whole_one(tmp_path: Path) -> None:
    # GIVEN c10's TORCH_WARN_ONCE from three worker processes' first CUDA allocation, the last cut by the paste
    whole = "Warning: expandable_segments not supported on this platform (function operator())"
    text = (
        f"[W214 15:20:56.973624780 CUDAAllocatorConfig.h:28] {whole}\n"
        f"[W214 15:20:56.008814328 CUDAAllocatorConfig.h:28] {whole}\n"
        "[W214 15:20:56.205991785 CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported on this pl\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the processes started and nothing followed: stalled at launch, at the last whole warning
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert root_text(report) == f"[W214 15:20:56.008814328 CUDAAllocatorConfig.h:28] {whole}"


def test_expandable_segments_warning_after_a_later_step_does_not_take_the_run_back(tmp_path: Path) -> None:
    # GIVEN a vLLM worker that began loading its weights, then a late process's allocator warning
    text = (
        "INFO 02-14 15:20:50 [model_runner.py:1110] Starting to load model Qwen/Qwen2.5-7B-Instruct...\n"
        "[W214 15:20:56.973624780 CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported on this "
        "platform (function operator())\n"
    )
    # WHEN judged THEN the run is still where its phase line put it
    assert judge_text(tmp_path, text)["phase"] == "weight_load"


def test_capture_waiting_for_nccl_work_alone_places_a_run_of_no_phase_line_in_cuda_graph(tmp_path: Path) -> None:
    # GIVEN only CUDAGraph::capture_begin's TORCH_WARN_ONCE from two ranks (vllm-ascend's torch_npu prints it so)
    text = "".join(
        f"[rank{rank}]:[W312 14:46:46.53519{rank}240 compiler_depend.ts:207] Warning: Waiting for pending NCCL work "
        "to finish before starting graph capture. (function operator())\n"
        for rank in (9, 15)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the capture had begun and nothing followed: stalled in cuda_graph, the last note quoted, the doubt said
    assert (report["phase"], report["verdict"]) == ("cuda_graph", "stalled")
    assert root_text(report).startswith("[rank15]:")
    assert "placed by a note alone" in report["reason"]


def test_a_communicators_abort_alone_places_no_step(tmp_path: Path) -> None:
    # GIVEN NCCL's lifecycle line of a communicator aborted (a process group was up, the process is ending), alone
    text = "node1:1234:1300 [0] NCCL INFO comm 0x55d9607ee240 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
    # WHEN judged THEN it says nothing of where the run is: no step, no stall
    report = judge_text(tmp_path, text)
    assert report["verdict"] == "unknown"
