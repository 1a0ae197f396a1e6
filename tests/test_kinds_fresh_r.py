"""Lines the fresh-r batch left unread or misread, each written from the format its system prints in the released
source the pack's rule cites: nccl-tests' result rows as releases before 2.13 printed them and its NCCLCHECK /
CUDACHECK failure line; torch's watchdog timeout line broken after its head."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

_HEADER = "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"


@pytest.mark.parametrize(
    "row",
    [
        # all_reduce.cu before 2.13: `%12li  %12li  %8s  %6s` (redop, no root), then `  %7s  %6.2f  %6.2f  %5.0le`
        "        1024           256     float     sum    12.50    0.08    0.00  0e+00    12.40    0.08    0.00  0e+00",
        # broadcast.cu before 2.13: `%12li  %12li  %8s  %6i` (root, no redop)
        "        1024           256     float       0    12.50    0.08    0.08  0e+00    12.40    0.08    0.08  0e+00",
        # all_gather.cu before 2.13: `%12li  %12li  %8s` (neither)
        "        1024           256     float    12.50    0.08    0.08  0e+00    12.40    0.08    0.08  0e+00",
    ],
)
def test_a_result_row_as_nccl_tests_printed_it_before_2_13_is_the_benchmark_running(tmp_path: Path, row: str) -> None:
    # GIVEN the benchmark's parameters line and one result row in the layout of a release before 2.13
    report = judge_text(tmp_path, _HEADER + row + "\n")
    # WHEN judged post-mortem THEN the benchmark was running its sizes (serving), no failure, the row the last progress
    assert report["phase"] == "serving"
    assert report["verdict"] in {"stalled", "progressing"}
    assert root_text(report) == row


def test_a_row_with_no_data_type_is_no_result_row(tmp_path: Path) -> None:
    # GIVEN the parameters line, then a line of numbers whose third column names no data type
    report = judge_text(tmp_path, _HEADER + "        1024           256     12.50    0.08    0.08  0e+00\n")
    # WHEN judged THEN the benchmark is not said to be running its sizes
    assert report["phase"] == "launch"


def test_nccl_tests_own_nccl_failure_line_is_the_crash(tmp_path: Path) -> None:
    # GIVEN nccl-tests' header and device list, then common.h NCCLCHECK's `%s: Test NCCL failure %s:%d '%s'` and the
    # TESTCHECK chain through common.cu (the communicators' set-up), nothing from NCCL itself
    report = judge_text(
        tmp_path,
        _HEADER + "#\n# Using devices\n"
        "#   Rank  0 Pid  41 on     node1 device  0 [0x07] NVIDIA A100-SXM4-40GB\n"
        "node1: Test NCCL failure common.cu:1125 'unhandled system error'\n"
        " .. node1 pid 41: Test failure common.cu:1017\n",
    )
    # WHEN judged THEN it crashed before any result row, and the failure line is the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")
    assert root_text(report) == "node1: Test NCCL failure common.cu:1125 'unhandled system error'"


def test_nccl_tests_own_cuda_failure_line_is_the_crash(tmp_path: Path) -> None:
    # GIVEN CUDACHECK's `%s: Test CUDA failure %s:%d '%s'` after the header
    report = judge_text(tmp_path, _HEADER + "gpu3: Test CUDA failure common.cu:732 'out of memory'\n")
    # WHEN judged THEN a crash, the line its cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == "gpu3: Test CUDA failure common.cu:732 'out of memory'"


def test_an_nccl_warn_before_the_benchmarks_failure_line_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN NCCL's WARN saying why, then the benchmark's NCCLCHECK line (2.13+: `'%s / %s'`) that repeats the result
    warn = "node1:41:41 [0] misc/socketutils.cc:120 NCCL WARN socketPoll: Connection refused"
    report = judge_text(
        tmp_path,
        _HEADER + warn + "\n"
        "node1: Test NCCL failure common.cu:1000 'unhandled system error / socketPoll: Connection refused'\n",
    )
    # WHEN judged THEN NCCL's own WARN is the cause, not the benchmark's report of the returned code
    assert report["verdict"] == "crashed"
    assert warn in root_text(report)


def test_a_watchdog_timeout_line_broken_after_its_head_names_the_work_on_the_next_line(tmp_path: Path) -> None:
    # GIVEN torch's `Watchdog caught collective operation timeout: WorkNCCL(...) ran for N milliseconds before timing
    # out.` broken after `timeout: `, then the tear-down line
    work = (
        "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds "
        "before timing out."
    )
    report = judge_text(
        tmp_path,
        "[rank1]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: \n" + work + "\n"
        "[rank1]:[E909 09:55:29.307629600 ProcessGroupNCCL.cpp:621] [Rank 1] Some NCCL operations have failed or timed "
        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n",
    )
    # WHEN judged THEN the watchdog fired, and the line naming the work is the cause
    assert report["verdict"] == "timeout"
    assert root_text(report) == work


def test_the_head_of_a_broken_watchdog_line_alone_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN the head alone, the rest of the line lost, then torch's tear-down line (no prefix: torch 2.2)
    report = judge_text(
        tmp_path,
        "[E ProcessGroupNCCL.cpp:523] Watchdog caught collective operation timeout:\n"
        "[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
        "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n",
    )
    # WHEN judged THEN a watchdog timeout, not a crash, with a process group up
    assert (report["verdict"], report["furthest_phase"]) == ("timeout", "dist_init")
    assert "Watchdog caught collective operation timeout:" in root_text(report)


def test_a_c10_trailer_from_the_nccl_watchdog_thread_proves_a_process_group(tmp_path: Path) -> None:
    # GIVEN c10's `Exception raised from ncclCommWatchdog at <file>:<line> (most recent call first):` and its frames
    # (ProcessGroupNCCL's constructor starts that thread), then faulthandler's `Fatal Python error: Aborted`, with no
    # phase line above
    trailer = (
        "Exception raised from ncclCommWatchdog at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1901 "
        "(most recent call first):"
    )
    report = judge_text(
        tmp_path,
        trailer + "\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7fb35b195206 in /usr/lib/libc10.so)\n"
        "frame #1: clone + 0x43 (0x7fb363f54e83 in /lib64/libc.so.6)\n"
        "\n"
        "Fatal Python error: Aborted\n",
    )
    # WHEN judged THEN the process aborted with a process group up; the watchdog's exception, not the abort it caused,
    # is the cause
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "dist_init")
    assert root_text(report) == trailer


@pytest.mark.parametrize(
    ("signal", "verdict"),
    [("9 (Killed)", "crashed"), ("11 (Segmentation fault)", "aborted"), ("6 (Aborted)", "aborted")],
)
def test_mpiruns_report_of_a_ranks_signal_is_an_abort_unless_another_process_killed_it(
    tmp_path: Path, signal: str, verdict: str
) -> None:
    # GIVEN Open MPI's help-errmgr-base text `mpirun noticed that process rank %s with PID %s on node %s exited on
    # signal %d (%s).` alone: SIGKILL (9) is sent by another process (the OOM killer, a scheduler), the others are
    # the process's own fatal signals
    report = judge_text(
        tmp_path, f"mpirun noticed that process rank 6 with PID 0 on node n1 exited on signal {signal}.\n"
    )
    # WHEN judged THEN a kill from outside is a crash, a fatal signal of its own an abort
    assert report["verdict"] == verdict
