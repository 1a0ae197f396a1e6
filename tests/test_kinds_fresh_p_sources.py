"""Messages the fresh-p batch read nothing from, each written from the format its system prints in the released
source the pack's rule cites: vLLM's Ray world-size warning, SGLang's model-registry import warning, TensorRT-LLM's
rank-crash hard kill, the end of a LlamaFactory run (its logger's prefix, transformers' model card), and torch's
warning of a backend used as a process group."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_the_ray_world_size_warning_is_the_launch_step_a_cut_log_stopped_at(tmp_path: Path) -> None:
    # GIVEN vLLM's engine core (0.18.0 v1/executor/ray_utils.py initialize_ray_cluster) warning that the world
    # is larger than this node's GPUs, the only line of an excerpt
    report = judge_text(
        tmp_path,
        "(EngineCore_DP0 pid=34) WARNING 03-30 14:11:45 [ray_utils.py:377] Tensor parallel size (16) exceeds "
        "available GPUs (8). This may result in Ray placement group allocation failures. Consider reducing "
        "tensor_parallel_size to 8 or less, or ensure your Ray cluster has 16 GPUs available.\n",
    )
    # WHEN judged post-mortem THEN the launch stopped there, the warning its last step (a warning, no failure)
    assert (report["verdict"], report["phase"]) == ("stalled", "launch")
    assert "Tensor parallel size (16) exceeds available GPUs (8)." in root_text(report)


def test_a_model_module_the_registry_skips_is_no_failure(tmp_path: Path) -> None:
    # GIVEN two schedulers' registry warnings (sglang 0.5.8 srt/models/registry.py), printed once torch
    # distributed init returned, and nothing after them
    report = judge_text(
        tmp_path,
        "[2026-01-21 19:39:12 TP0] Ignore import error when loading sglang.srt.models.nemotron_h: "
        "No module named 'cuda'\n"
        "[2026-01-21 19:39:12 TP1] Ignore import error when loading sglang.srt.models.nemotron_h: "
        "No module named 'cuda'\n",
    )
    # WHEN judged THEN no crash: the log stops after the ranks' torch distributed init
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init")


def test_a_multimodal_processor_import_warning_is_not_the_schedulers_step(tmp_path: Path) -> None:
    # GIVEN the same words from the main process's multimodal processors (another package, another step)
    report = judge_text(
        tmp_path,
        "[2026-01-21 19:39:10] Ignore import error when loading sglang.srt.multimodal.processors.nano_nemotron_vl: "
        "No module named 'cuda'\n",
    )
    # WHEN judged THEN no step of the schedulers is claimed
    assert report["phase"] != "dist_init"


def test_the_rank_crash_hard_kill_is_a_crash(tmp_path: Path) -> None:
    # GIVEN TensorRT-LLM's hang_detector.py hard_kill_on_rank_crash line, at error, after the weights loaded
    report = judge_text(
        tmp_path,
        "[09/03/2026-10:00:00] [TRT-LLM] [I] Use 15.02 GB for model weights.\n"
        "[09/03/2026-10:05:00] [TRT-LLM] [E] Executor loop crashed on this rank; hard-killing all 8 ranks in 10s "
        "(peers cannot make progress without this rank). Set TLLM_RANK_CRASH_HARD_KILL_GRACE=-1 to disable.\n",
    )
    # WHEN judged THEN the run crashed, and that line is the cause
    assert report["verdict"] == "crashed"
    assert "Executor loop crashed on this rank; hard-killing all 8 ranks" in root_text(report)


def test_a_llamafactory_run_that_wrote_its_model_card_finished(tmp_path: Path) -> None:
    # GIVEN LlamaFactory's running-log format (`[LEVEL|%Y-%m-%d %H:%M:%S] file:line >> `) carrying transformers
    # 4.57.1's evaluation header lines and then modelcard.py's line, written after training returned
    report = judge_text(
        tmp_path,
        "[INFO|2025-10-22 11:00:58] trainer.py:4645 >>   Num examples = 3210\n"
        "[INFO|2025-10-22 11:00:58] trainer.py:4648 >>   Batch size = 2\n"
        "[INFO|2025-10-22 11:02:54] modelcard.py:456 >> Dropping the following result as it does not have all "
        "the necessary fields:\n"
        "{'task': {'name': 'Causal Language Modeling', 'type': 'text-generation'}}\n",
    )
    # WHEN judged THEN the job finished
    assert (report["verdict"], report["phase"]) == ("finished", "serving")


def test_an_evaluation_header_alone_is_no_end(tmp_path: Path) -> None:
    # GIVEN only the evaluation loop's header lines (evaluation may run mid-training)
    report = judge_text(
        tmp_path,
        "[INFO|2025-10-22 11:00:58] trainer.py:4645 >>   Num examples = 3210\n"
        "[INFO|2025-10-22 11:00:58] trainer.py:4648 >>   Batch size = 2\n",
    )
    # WHEN judged THEN it is not called finished
    assert report["verdict"] != "finished"


def test_a_backend_used_as_a_process_group_shows_dist_init_was_reached(tmp_path: Path) -> None:
    # GIVEN torch 2.4's warning from _get_pg_default_device (a process group exists and an RPC agent or an object
    # collective uses its bare backend), the program's own prints, then the shell's word of a SIGABRT
    report = judge_text(
        tmp_path,
        "/opt/conda/lib/python3.9/site-packages/torch/distributed/c10d_logger.py:79: FutureWarning: You are using "
        "a Backend <class 'torch.distributed.distributed_c10d.ProcessGroupGloo'> as a ProcessGroup. This usage is "
        "deprecated since PyTorch 2.0. Please use a public API of PyTorch Distributed instead.\n"
        "  return func(*args, **kwargs)\n"
        "setup done\n"
        "Aborted (core dumped)\n",
    )
    # WHEN judged THEN the process aborted once its process group was in use: in dist_init
    assert (report["verdict"], report["phase"]) == ("aborted", "dist_init")
