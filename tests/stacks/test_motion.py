"""Motion: working vs frozen from each process's CPU time and py-spy's own marks, not only stack
identity; identical ranks are never odd; a process that exits while sampled is not frozen."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from logphase.judging.stalls import classify, summarize
from logphase.stacks import pyspy
from logphase.stacks.dumps import parse_frame_text
from logphase.stacks.model import ThreadStack

from .test_merge import CAPTURE, LOADING, snap

SPIN = ("tokenize (tokenizer.py:88)", "load_model (model_runner.py:700)", "run_scheduler_process (scheduler.py:2500)")


def test_ranks_on_the_cpu_in_one_python_line_are_working_not_frozen(signatures: Any) -> None:
    # GIVEN four ranks, each twice in the same Python line, but on the CPU all the while
    ranks = [snap(10 + n, f"TP{n}", *SPIN, moving=False) for n in range(4)]
    busy = [replace(r, busy=True) for r in ranks]
    # WHEN judged THEN working (exit 0 material), one group, nobody odd
    report = summarize(busy, signatures, samples=2)
    assert (report.stuck, report.culprit_ranks, len(report.groups)) == (False, (), 1)
    assert "working" in report.summary


def test_a_rank_alike_the_others_is_never_odd(signatures: Any) -> None:
    # GIVEN three ranks idle on the CPU in the same stack and one that moved a little (one more sample differed)
    ranks = [snap(10 + n, f"TP{n}", *LOADING, moving=False) for n in range(3)] + [
        snap(13, "TP3", *LOADING, moving=True)
    ]
    # WHEN judged THEN no rank is called odd
    report = summarize(ranks, signatures, samples=3)
    assert report.culprit_ranks == ()


def test_cpu_time_in_a_collective_wait_is_no_progress(signatures: Any) -> None:
    # GIVEN every rank in all_reduce, the same stack in each sample, its threads busy-polling the GPU
    ranks = [snap(10 + n, f"TP{n}", *CAPTURE, moving=False) for n in range(4)]
    busy = [replace(r, busy=True) for r in ranks]
    # WHEN judged THEN still stuck: NCCL spins while a collective hangs
    assert summarize(busy, signatures, samples=2).stuck


def test_an_inductor_compile_worker_is_idle_not_the_compile_phase(signatures: Any) -> None:
    frames = [parse_frame_text("_recv_msg (torch/_inductor/compile_worker/subproc_pool.py:75)")]
    assert classify([f for f in frames if f], signatures).state == "idle"


def test_a_process_that_exits_while_sampled_is_not_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a rank read in two samples with the same stack, gone at the third
    thread = ThreadStack("1", "MainThread", tuple(f for f in map(parse_frame_text, SPIN) if f), main=True)
    rounds = iter(
        [
            [pyspy.DumpResult(pid=7, threads=(thread,))],
            [pyspy.DumpResult(pid=7, threads=(thread,))],
            [pyspy.DumpResult(pid=7, error="Error: No such process")],
        ]
    )
    monkeypatch.setattr(pyspy, "dump_all", lambda *args, **kwargs: next(rounds))
    info = pyspy.ProcInfo(
        pid=7, ppid=1, title="python", comm="python", state="S", uid=0, python=True, role="scheduler", rank="TP0"
    )
    # WHEN sampled three times
    (result,), _ = pyspy.snapshot(
        [info], py_spy="py-spy", samples=3, interval_s=0, sleep=lambda _: None, read_cpu=lambda _: None
    )
    # THEN it is said to have exited, with no motion claimed
    assert (result.moving, result.busy) == (None, None)
    assert result.error == "exited during sampling (read in 2 of 3 samples)"
