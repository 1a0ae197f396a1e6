"""Kinds of input the fresh-k batch's verdicts were misread on, each written from the format the system prints in its
released source (the pack's rule cites it): torch 1.9's watchdog timeout as std::terminate's `what():`, torchtitan's
own end, a traceback's frames whose paste was cut inside the next record's prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.logs.matcher import explain
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text


def _rules(line: str) -> list[str]:
    return [rule.id for rule, _ in explain(line, load_packs(check_examples=False)).matches]


# --- torch 1.9: the watchdog's timeout is the cleanup thread's own exception -----------------------------------

# torch 1.9.0 libtorch_python.so: the LOG(ERROR) before the rethrow, then std::terminate's report of it
_TORCH19_TERMINATE = (
    "[E ProcessGroupNCCL.cpp:325] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
    "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, "
    "we are taking the entire process down.\n"
    "terminate called after throwing an instance of 'std::runtime_error'\n"
    "  what():  [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
    "Timeout(ms)=1800000) ran for 1800212 milliseconds before timing out.\n"
)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (
            "[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=ALLGATHER, Timeout(ms)=600000) ran for 600410 milliseconds before timing out.",
            "torch.watchdog.collective_timeout",
        ),
        (
            "  what():  [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLGATHER, "
            "Timeout(ms)=600000) ran for 600410 milliseconds before timing out.",
            "torch.watchdog.terminate_what_caught",
        ),
    ],
)
def test_a_torch19_workncll_without_sequence_number_is_a_timeout(line: str, rule: str) -> None:
    # GIVEN torch 1.9's timeout text, whose WorkNCCL names no SeqNum (its operator<< wrote OpType and Timeout only)
    # WHEN explained THEN the timeout rule of its form reads it first
    assert _rules(line)[:1] == [rule]


def test_torch19_terminate_then_a_main_thread_traceback_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN torch 1.9's watchdog terminate, then the main thread's traceback of the aborted collective
    report = judge_text(
        tmp_path,
        _TORCH19_TERMINATE + "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    loss.backward()\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/_tensor.py", line 255, in backward\n'
        "    torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)\n"
        "RuntimeError: NCCL communicator was aborted.\n",
    )
    # THEN a timeout, said by the what() line: the traceback that follows is its consequence, not a crash
    assert report["verdict"] == "timeout"
    assert root_text(report).startswith("  what():  [Rank 1] Watchdog caught collective operation timeout")
    assert "collective BROADCAST" in report["reason"]


def test_torch2_what_of_the_timeout_then_a_traceback_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN the same terminate with a numbered work (torch 2.0's text), a Python traceback after it
    report = judge_text(
        tmp_path,
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, "
        "Timeout(ms)=60000) ran for 60512 milliseconds before timing out.\n"
        "Traceback (most recent call last):\n"
        '  File "run.py", line 12, in <module>\n'
        "    dist.all_reduce(t)\n"
        "RuntimeError: NCCL communicator was aborted on rank 0.\n",
    )
    # THEN a timeout of collective ALLREDUCE #9
    assert report["verdict"] == "timeout"
    assert "collective ALLREDUCE #9" in report["reason"]


# --- torchtitan: main() returned after destroying the process group --------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[titan] 2025-06-16 22:40:01,100 - root - INFO - Process group destroyed.",  # 0.1.0
        "[rank1]:[titan] 2026-01-05 08:00:00,000 - root - INFO - Process group destroyed",  # 0.3.0
    ],
)
def test_torchtitans_process_group_destroyed_is_a_rank_exit(line: str) -> None:
    # GIVEN torchtitan's last line of a successful main() WHEN explained THEN its exit rule reads it
    assert _rules(line) == ["torch.exit.torchtitan_pg_destroyed"]


def test_torchtitan_that_trained_and_destroyed_its_group_finished(tmp_path: Path) -> None:
    # GIVEN two ranks' torchtitan steps, `Training completed`, then each rank's `Process group destroyed`
    lines = []
    for rank in (0, 1):
        lines += [
            f"[rank{rank}]:[titan] 2026-01-05 08:00:0{rank},000 - root - INFO - step: 10  loss:  3.2100  "
            "memory: 20.00GiB(25.00%)  tps: 5,000  tflops: 100.00  mfu: 10.00%",
            f"[rank{rank}]:[titan] 2026-01-05 08:00:05,000 - root - INFO - Training completed",
            f"[rank{rank}]:[titan] 2026-01-05 08:00:06,000 - root - INFO - Process group destroyed",
        ]
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN finished in its steps
    assert (report["verdict"], report["phase"]) == ("finished", "serving")


def test_torchtitan_steps_without_its_end_are_not_finished(tmp_path: Path) -> None:
    # GIVEN torchtitan's steps and `Training completed`, but no `Process group destroyed` (a hang in teardown)
    report = judge_text(
        tmp_path,
        "[titan] 2026-01-05 08:00:00,000 - root - INFO - step: 10  loss:  3.2100  memory: 20.00GiB(25.00%)\n"
        "[titan] 2026-01-05 08:00:05,000 - root - INFO - Training completed\n",
    )
    # THEN not finished: the group's teardown never said it returned
    assert report["verdict"] == "stalled"


# --- frames whose paste was cut inside the next record's prefix --------------------------------------------------


def _vllm_frames(prefix: str) -> str:
    return (
        f'{prefix}  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3100, '
        "in capture_model\n"
        f"{prefix}    self._capture_cudagraphs(\n"
        f'{prefix}  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3160, '
        "in _capture_cudagraphs\n"
        f"{prefix}    self._dummy_run(\n"
    )


@pytest.mark.parametrize(
    ("prefix", "cut"),
    [
        # vLLM's worker tag and logger prefix (logger.exception in multiproc_executor's worker_busy_loop)
        (
            "(Worker_TP1 pid=4242) ERROR 02-13 15:54:32 [multiproc_executor.py:863] ",
            "(Worker_TP1 pid=4242) ERROR 02-13",
        ),
        # the bare logger prefix: a cut of it has no prefix, so it continues the frames as an unprefixed line does
        ("ERROR 02-13 15:54:32 [multiproc_executor.py:863] ", "ERROR 02-13 15:5"),
    ],
)
def test_frames_cut_inside_the_next_records_prefix_are_a_crash(tmp_path: Path, prefix: str, cut: str) -> None:
    # GIVEN a worker's traceback frames (header and exception line not in the paste), the paste's last line the
    # same writer's next record cut inside its prefix
    report = judge_text(tmp_path, _vllm_frames(prefix) + cut + "\n")
    # THEN crashed: CPython prints frames only in a traceback, so an exception was printed
    assert report["verdict"] == "crashed"
    assert "cut before its first line and its exception line" in report["reason"]


def test_frames_followed_by_another_message_are_no_cut_record(tmp_path: Path) -> None:
    # GIVEN the same frames, then a whole INFO record of another writer (not a cut of the frames' prefix)
    prefix = "(Worker_TP1 pid=4242) ERROR 02-13 15:54:32 [multiproc_executor.py:863] "
    report = judge_text(
        tmp_path, _vllm_frames(prefix) + "(APIServer pid=1) INFO 02-13 15:54:33 [api_server.py:100] Started\n"
    )
    # THEN the frames are not read as a cut traceback at the source's end
    assert "cut before its first line and its exception line" not in report["reason"]
