"""How a job's log ends, read from what its launcher and Python print: torchrun's agent stopping the workers
still running (a worker failed), its word that every worker succeeded, and a traceback pasted as frames alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

AGENT = "torch/distributed/elastic/agent/server/api.py"
PROCS = "torch/distributed/elastic/multiprocessing/api.py"


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def _steps(rank: int, first: int, last: int) -> list[str]:
    """torchtitan's step lines (train.py log_step), colours stripped, under torchrun's `[rankN]:` prefix."""
    return [
        f"[rank{rank}]:[titan] 2026-05-14 03:{s:02d}:00,104 - root - INFO - step: {s * 10}  loss:  2.1000  "
        "memory: 30.12GiB(38.07%)  tps: 7,145  mfu: 41.20%"
        for s in range(first, last)
    ]


def _succeeded(pid: int) -> list[str]:
    return [
        f"I0514 03:40:00.100000 {pid} {AGENT}:932] [default] worker group successfully finished. Waiting 300 "
        "seconds for other agents to finish.",
        f"I0514 03:40:00.101000 {pid} {AGENT}:985] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 "
        "seconds for other agents to finish",
    ]


def test_the_agent_saying_every_worker_succeeded_after_their_last_step_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN two ranks' step lines, then torchrun's agent: the worker group succeeded
    lines = _steps(0, 1, 5) + _steps(1, 1, 5) + _succeeded(61)
    # WHEN the log is analysed post-mortem
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished (exit 0), said from the agent's line
    assert (code, report["verdict"]) == (0, "finished")
    assert report["reason"].startswith("the job finished, as its own end line says: Local worker group finished")


def test_a_step_after_the_agents_success_is_a_new_run_not_a_finished_one(tmp_path: Path) -> None:
    # GIVEN the agent's success, then rank 0 stepping again (a later run appended to the same file)
    lines = _steps(0, 1, 3) + _succeeded(61) + _steps(0, 5, 7)
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the success does not end the log: the job is in its steps, not finished
    assert report["verdict"] != "finished"


def test_the_agent_stopping_running_workers_with_no_other_failure_is_a_crash(tmp_path: Path) -> None:
    # GIVEN rank 0's steps, then the agent signalling the workers still running (no death signal before it)
    lines = _steps(0, 1, 4) + [
        f"W0514 03:05:00.55{n}000 61 {PROCS}:1028] Sending process {pid} closing signal SIGTERM"
        for n, pid in enumerate((72, 73, 74))
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN crashed during the steps, the agent's first such line the cause
    assert (code, report["verdict"], report["phase"]) == (4, "crashed", "serving")
    assert "Sending process 72 closing signal SIGTERM" in report["root_cause"]["text"]


def test_a_death_signal_before_the_agent_stops_its_workers_is_still_an_abort(tmp_path: Path) -> None:
    # GIVEN the agent's death signal, then its `Sending process … closing signal` lines
    lines = [
        *_steps(0, 1, 4),
        f"W0514 03:05:00.550000 61 {AGENT}:753] Received 15 death signal, shutting down workers",
        f"W0514 03:05:00.552000 61 {PROCS}:1028] Sending process 72 closing signal SIGTERM",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN aborted, the death signal the cause: the first terminal line decides
    assert (code, report["verdict"]) == (4, "aborted")
    assert "Received 15 death signal" in report["root_cause"]["text"]


FRAMES = [
    '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner',
    "    self.run()",
    '  File "/srv/app/worker.py", line 88, in run',
    "    self.step(batch)",
]


def test_a_log_that_ends_inside_traceback_frames_is_a_crash_with_the_cut_said(tmp_path: Path) -> None:
    # GIVEN CPython traceback frames with neither their `Traceback` line nor their exception line
    # WHEN analysed
    code, report = _analyze(tmp_path, FRAMES)
    # THEN crashed at its innermost frame (line 3: where the exception was raised or passed through), and a doubt says
    # the exception is not in the log
    assert (code, report["verdict"], report["root_cause"]["line"]) == (4, "crashed", 3)
    assert any("ends inside a traceback's frames" in doubt for doubt in report["evidence"]["against"])


def test_frames_that_a_log_line_follows_are_no_crash(tmp_path: Path) -> None:
    # GIVEN the same frames, then the program logging on (a stack printed by traceback.print_stack)
    lines = [*FRAMES, "[rank0]:2026-05-14 03:01:00,104 - INFO - step 10 | loss 2.1 | 600 ms/step"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN nothing failed
    assert report["verdict"] not in ("crashed", "aborted", "timeout")


def test_frames_that_their_exception_line_ends_are_read_from_it(tmp_path: Path) -> None:
    # GIVEN the same frames, then their exception line
    lines = [*FRAMES, "RuntimeError: CUDA error: an illegal memory access was encountered"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN crashed, and the cause is the exception line, with no cut doubt
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 5)
    assert not any("ends inside a traceback's frames" in doubt for doubt in report["evidence"]["against"])


def test_an_exception_line_before_a_cut_run_of_frames_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN vLLM's EngineDeadError line, then a second traceback's frames the paste cuts before their end
    lines = [
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
        "the root cause.",
        *FRAMES,
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN crashed, the exception line the cause: frames without their exception explain nothing it does not
    assert (code, report["verdict"], report["root_cause"]["line"]) == (4, "crashed", 1)


# nccl-tests' result row (src/common.cu): size, count, type, redop, root, out-of-place and in-place timings, #wrong
ROW = (
    "{size:>12}  {count:>12}     float     sum      -1    731.2   91.78  160.61  {wrong:>5}    728.9   92.07  161.12  "
    "{wrong:>5}"
)


def test_nccl_tests_ending_with_correct_results_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN nccl-tests' header, two result rows and its end lines (src/common.cu)
    lines = [
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0",
        ROW.format(size=67108864, count=16777216, wrong=0),
        ROW.format(size=134217728, count=33554432, wrong=0),
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 84.8558 ",
        "#",
    ]
    # WHEN analysed THEN finished, in its steps, said from the end line
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["phase"], report["system"]) == (0, "finished", "serving", "nccl-tests")


def test_nccl_tests_with_wrong_results_failed(tmp_path: Path) -> None:
    # GIVEN the same run whose end line counts wrong values
    lines = [
        ROW.format(size=67108864, count=16777216, wrong=3),
        "# Out of bounds values : 3 FAILED",
    ]
    # WHEN analysed THEN crashed: the benchmark failed its own check
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"]) == (4, "crashed")
    assert "Out of bounds values : 3 FAILED" in report["root_cause"]["text"]


@pytest.mark.parametrize(
    ("code", "verdict"), [("-9", "crashed"), ("-15", "crashed"), ("-6", "aborted"), ("-11", "aborted")]
)
def test_a_worker_killed_by_sigkill_crashed_and_one_that_died_of_its_own_signal_aborted(
    tmp_path: Path, code: str, verdict: str
) -> None:
    # GIVEN torchrun's summary of a worker that died of a signal, alone (torch 2.13 multiprocessing/api.py)
    lines = [
        f"E0514 03:05:00.101000 4021 {PROCS}:869] failed (exitcode: {code}) local_rank: 1 (pid: 4087) of binary: "
        "/usr/bin/python3"
    ]
    # WHEN analysed THEN SIGKILL or SIGTERM (another process sent it: the OOM killer, a scheduler, the agent) is a
    # crash; SIGABRT or SIGSEGV, the process's own fatal signal, an abort
    _, report = _analyze(tmp_path, lines)
    assert report["verdict"] == verdict


@pytest.mark.parametrize(("number", "name", "verdict"), [("15", "SIGTERM", "crashed"), ("11", "SIGSEGV", "aborted")])
def test_the_failure_tables_signal_row_is_read_by_its_signal(
    tmp_path: Path, number: str, name: str, verdict: str
) -> None:
    # GIVEN torchrun's failure table row of a worker that died of a signal, alone (torch 2.13 errors/__init__.py
    # ProcessFailure: `Signal {-exitcode} ({signal name}) received by PID {pid}`)
    lines = [f"  traceback : Signal {number} ({name}) received by PID 4087"]
    # WHEN analysed THEN SIGTERM, which another process sends, is a crash; SIGSEGV, the process's own, an abort
    _, report = _analyze(tmp_path, lines)
    assert report["verdict"] == verdict


# ms-swift (3.8.0 swift/llm/base.py SwiftPipeline.main): `End time of running main: …` once `self.run()` returned, the
# CLI script's last statement (swift/cli/rlhf.py `rlhf_main()`); its logger's `[%(levelname)s:%(name)s] ` format.
SWIFT_END = [
    "Train: 100%|██████████| 120/120 [41:07<00:00, 20.56s/it]",
    "[INFO:swift] last_model_checkpoint: /data/out/v3-20250911-101204/checkpoint-120",
    "[INFO:swift] best_model_checkpoint: /data/out/v3-20250911-101204/checkpoint-120",
    "[INFO:swift] End time of running main: 2025-09-11 10:53:30.118264",
]
# Then the interpreter's exit: ProcessGroupNCCL's destructor warning (torch 2.6 ProcessGroupNCCL.cpp, TORCH_WARN_ONCE)
# and a SIGABRT raised while it tears the group down, which torchrun's agent reports (multiprocessing/api.py `failed
# (exitcode: %s) local_rank: %s (pid: %s) of binary: %s`) and tabulates (errors/__init__.py ChildFailedError).
EXIT_ABORT = [
    "[rank0]:[W911 10:53:31.904516207 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not "
    "called before program exit, which can leak resources. For more info, please see "
    "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
    f"E0911 10:54:02.220000 911 site-packages/{PROCS}:869] failed (exitcode: -6) local_rank: 0 (pid: 1034) of "
    "binary: /usr/bin/python3",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "/usr/local/lib/python3.10/site-packages/swift/cli/rlhf.py FAILED",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  exitcode  : -6 (pid: 1034)",
    "  traceback : Signal 6 (SIGABRT) received by PID 1034",
]


def test_a_signal_after_the_programs_main_returned_is_its_teardown_and_the_job_finished(tmp_path: Path) -> None:
    # GIVEN an ms-swift training's last step and its end-of-main line, then a SIGABRT at the interpreter's exit that
    # torchrun reports and tabulates
    # WHEN analysed
    code, report = _analyze(tmp_path, SWIFT_END + EXIT_ABORT)
    # THEN finished (the first terminal event), in its steps, no cause; the reason and the doubts name the signal
    # after the end line (line 4) at the launcher's report (line 6)
    assert (code, report["verdict"], report["phase"], report["root_cause"]) == (0, "finished", "serving", None)
    words = "a failure after its main returned (line 4), at the interpreter's exit: failed (exitcode: -6)"
    assert words in report["reason"]
    assert any(doubt.startswith(words) for doubt in report["evidence"]["against"])
    assert report["confidence"] == "medium"


def test_the_same_signal_with_no_end_of_main_line_before_it_is_an_abort(tmp_path: Path) -> None:
    # GIVEN the same log without the end-of-main line (metamorphic: only that line is gone)
    lines = [line for line in SWIFT_END + EXIT_ABORT if "End time of running main" not in line]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the signal ended the run: aborted (SIGABRT, the process's own), as torchrun's table says
    assert (code, report["verdict"]) == (4, "aborted")


def test_an_end_of_main_line_after_the_signal_does_not_take_the_failure_back(tmp_path: Path) -> None:
    # GIVEN the signal first, then an end-of-main line (a later run's, appended): the order of the two swapped
    lines = SWIFT_END[:3] + EXIT_ABORT + SWIFT_END[3:]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the failure came first: aborted
    assert report["verdict"] == "aborted"


def _titan_destroyed(rank: int) -> str:
    """torchtitan's train.py main, success branch: after trainer.close() and destroy_process_group() returned."""
    return f"[rank{rank}]:[titan] 2026-05-14 03:40:00,{rank}12 - root - INFO - Process group destroyed."


WATCHDOG = (
    "[rank{rank}]:[E514 03:40:05.000000000 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
    "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"
)


def test_a_ranks_end_of_main_speaks_for_that_rank_alone(tmp_path: Path) -> None:
    # GIVEN two ranks' steps; rank 1's main returned, then rank 0's watchdog reports a CUDA error
    lines = [*_steps(0, 1, 4), *_steps(1, 1, 4), _titan_destroyed(1), WATCHDOG.format(rank=0)]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN rank 0 failed while it ran: crashed, its watchdog line the cause
    assert (code, report["verdict"]) == (4, "crashed")
    assert report["root_cause"]["line"] == len(lines)


def test_a_failure_of_a_rank_after_its_own_end_of_main_is_its_teardown(tmp_path: Path) -> None:
    # GIVEN both ranks' steps and end-of-main lines, then rank 1's watchdog line at its interpreter's exit
    lines = [*_steps(0, 1, 4), *_steps(1, 1, 4), _titan_destroyed(0), _titan_destroyed(1), WATCHDOG.format(rank=1)]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job finished; the reason names the failure after rank 1's end-of-main line
    assert report["verdict"] == "finished"
    assert f"a failure after its main returned (line {len(lines) - 1})" in report["reason"]


def _lightning_epochs(epochs: int) -> list[str]:
    """Lightning's TQDMProgressBar epoch bars, one per epoch (`Epoch N: …| done/total [elapsed<left, rate, …]`)."""
    return [
        f"Epoch {epoch}: 100%|██████████| 50/50 [00:04<00:00, 11.{epoch}1it/s, v_num=3, train_loss=0.{8 - epoch}12]"
        for epoch in range(epochs)
    ]


@pytest.mark.parametrize("limit", ["max_epochs=3", "max_steps=150"])
def test_lightnings_fit_loop_reaching_its_limit_is_a_finished_job(tmp_path: Path, limit: str) -> None:
    # GIVEN Lightning's set-up notes, three epoch bars, then its fit loop's stop line (lightning 2.4.0 fit_loop.py
    # `_FitLoop.done`: `Trainer.fit` stopped: `max_epochs=3` reached.)
    lines = [
        "GPU available: True (cuda), used: True",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]",
        *_lightning_epochs(3),
        f"`Trainer.fit` stopped: `{limit}` reached.",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN finished in its steps, said from the stop line
    assert (code, report["verdict"], report["phase"]) == (0, "finished", "serving")
    said = f"the job finished, as its own end line says: `Trainer.fit` stopped: `{limit}` reached. (line 6)"
    assert report["reason"] == said


def test_lightnings_epoch_bars_alone_do_not_say_the_job_finished(tmp_path: Path) -> None:
    # GIVEN the same epoch bars without the stop line (metamorphic: only it is gone): an epoch's total is no job's end
    lines = ["GPU available: True (cuda), used: True", *_lightning_epochs(3)]
    # WHEN analysed post-mortem
    _, report = _analyze(tmp_path, lines)
    # THEN the log ends in its steps: open (stalled post-mortem), the last epoch bar where it stopped
    assert (report["verdict"], report["root_cause"]["line"]) == ("stalled", 4)


def test_lightnings_stop_line_with_no_training_batches_is_no_end(tmp_path: Path) -> None:
    # GIVEN the fit loop's other stop line, printed when it had nothing to train on
    lines = [*_lightning_epochs(1), "`Trainer.fit` stopped: No training batches."]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN not finished: that line says no step ran to a limit
    assert report["verdict"] != "finished"


def test_the_epoch_bar_drawn_once_more_after_the_stop_line_leaves_the_job_finished(tmp_path: Path) -> None:
    # GIVEN the stop line, then tqdm's `close()` drawing the last epoch's full bar once more at the same count (the bar
    # TQDMProgressBar closes at the training's end; its rate recomputed)
    bars = _lightning_epochs(2)
    redrawn = bars[-1].replace("11.11it/s", "10.98it/s")
    lines = [*bars, "", "`Trainer.fit` stopped: `max_epochs=2` reached.", "", redrawn]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN finished: the redraw repeats the last step, it is no step after the end line
    assert (code, report["verdict"]) == (0, "finished")


def test_a_bar_that_advances_after_the_stop_line_is_a_step_after_it(tmp_path: Path) -> None:
    # GIVEN the stop line, then an epoch bar of another epoch moving (metamorphic: the line after the end is a step)
    bars = _lightning_epochs(2)
    lines = [*bars, "`Trainer.fit` stopped: `max_epochs=2` reached.", "Epoch 2:  40%|████      | 20/50 [00:01<00:02"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job went on after its end line: not finished
    assert report["verdict"] != "finished"
