"""Kinds of input the fresh-x batch's judgements were misread on, each written from the source that prints it: the
ROCm runtime's last words before it abort()s (ROCR-Runtime runtime.cpp HwExceptionHandler / VMFaultHandler, CLR
rocdevice.cpp callbackQueue), a line glued after a tqdm bar's end (tqdm std.py format_meter), NCCL's init line cut at
the paste's end (init.cc, NCCL 2.23+: `%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx -
Init START`), torch_npu's failed HCCL collective (libtorch_npu.so of torch-npu 2.5.1: `OPS function error: <op>, error
code is N`), vLLM's HPU model runner's weight-load lines (hpu_model_runner.py load_model), and an argument dump as an
open run's last line (fixtures/realworld/README.md: dumps are passed over, back to the progress line before them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logphase import scan as scanning
from logphase.packs import PackSet
from tests.conftest import judge_text, root_text
from tests.equivalence import reports

HF_BAR = " 41%|████▏     | 366/903 [5:15:39<6:53:09, 46.16s/it]"
LOSS = "{'loss': 0.4589, 'grad_norm': 1.04, 'learning_rate': 5.28e-06, 'epoch': 1.22}\n"

# --- ROCm: the runtime prints the fault, then abort()s --------------------------------------------------------------


def _hw_exception(handle: str) -> str:
    return f"HW Exception by GPU node-9 (Agent handle: 0x{handle}) reason :GPU Hang\n"


def test_a_gpu_hang_is_the_abort_not_the_shells_report(tmp_path: Path) -> None:
    # GIVEN a training run's loss and bar, then every process's ROCr hang report and the shell's abort line
    log = LOSS + HF_BAR + "\n" + "".join(_hw_exception(h) for h in ("64ff272d8ab0", "565d634d8610", "5ea50312c910"))
    report = judge_text(tmp_path, log + "Aborted (core dumped)\n")
    # THEN the run aborted while training, and the first hang report, not the shell's line, says why
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "serving")
    assert root_text(report) == _hw_exception("64ff272d8ab0").strip()


def test_a_hang_report_glued_to_the_bar_is_the_first(tmp_path: Path) -> None:
    # GIVEN the same, the first report written right after the bar's `]` (tqdm printed no newline after it)
    log = LOSS + HF_BAR + _hw_exception("631351bb5a20") + _hw_exception("565d634d8610") + "Aborted (core dumped)\n"
    report = judge_text(tmp_path, log)
    # THEN the glued report is a line of its own, and the first failure
    assert report["verdict"] == "aborted"
    assert root_text(report) == _hw_exception("631351bb5a20").strip()


CLR_ABORT = (
    ":0:rocdevice.cpp            :3586: 11398051401 us:  Callback: Queue 0x7f4307e00000 aborting with error : "
    "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016\n"
)


def test_a_queue_abort_is_the_cause_over_faulthandlers_report(tmp_path: Path) -> None:
    # GIVEN an SGLang decode batch, the runtime's core-dump notes, HIP's queue abort, then faulthandler's dump
    log = (
        "[2026-04-15 04:32:22 TP0 EP0] Decode batch, #running-req: 1, #token: 12126, token usage: 0.00, cuda graph: "
        "True, gen throughput (token/s): 23.10, #queue-req: 0\n"
        "GPU core dump failed\n" + CLR_ABORT + "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f1363bff640 (most recent call first):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/utils/watchdog.py", line 147 in _watchdog_once\n'
    )
    report = judge_text(tmp_path, log)
    # THEN the server aborted while serving, HIP's line the cause
    assert (report["verdict"], report["furthest_phase"]) == ("aborted", "serving")
    assert root_text(report) == CLR_ABORT.strip()


def test_a_memory_access_fault_is_the_abort(tmp_path: Path) -> None:
    # GIVEN a training bar, then ROCr's memory-access fault and the shell's abort line
    fault = (
        "Memory access fault by GPU node-2 (Agent handle: 0x5641a5f3b2e0) on address 0x7f1b2c000000. "
        "Reason: Page not present or supervisor privilege.\n"
    )
    report = judge_text(tmp_path, LOSS + HF_BAR + "\n" + fault + "Aborted (core dumped)\n")
    # THEN it aborted, the fault the cause
    assert report["verdict"] == "aborted"
    assert root_text(report) == fault.strip()


# --- a line glued after a bar's end -------------------------------------------------------------------------------

WATCHDOG = (
    "[rank0]:[E ProcessGroupNCCL.cpp:523] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9314, "
    "OpType=_REDUCE_SCATTER_BASE, NumelIn=131072000, NumelOut=32768000, Timeout(ms)=600000) ran for 600012 "
    "milliseconds before timing out.\n"
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    done=st.integers(1, 40),
    rate=st.sampled_from(["158.06s/it", "1.27it/s", "158.06s/i", "158.06s/", "158"]),
    closed=st.booleans(),
)
def test_a_watchdog_line_glued_to_a_bar_is_the_timeout(tmp_path: Path, done: int, rate: str, closed: bool) -> None:
    # GIVEN an eval's metrics, then the bar of the next loop, its bracket closed or cut by the watchdog's line after it
    end = "]" if closed else ""
    bar = f" 2%|▏         | {done}/42 [02:52<1:48:00, {rate}{end}"
    log = "{'eval_loss': 1.8737, 'eval_runtime': 14.4, 'epoch': 0.02}\n" + bar + WATCHDOG
    report = judge_text(tmp_path, log)
    # THEN the watchdog's line is a line of its own: the collective timed out, and it says which
    assert report["verdict"] == "timeout", report["reason"]
    assert "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9314" in root_text(report)


def test_text_after_a_bar_with_no_bar_end_stays_on_the_line(tmp_path: Path) -> None:
    # GIVEN a line that holds a count and a bracket but no bar's `[elapsed<remaining` (a table row), then a failure
    report = judge_text(tmp_path, "rows 3/8 [done]HW Exception by GPU node-1 (Agent handle: 0x1) reason :GPU Hang\n")
    # THEN the failure, not at the margin of a line of its own, is not read as ROCr's report
    assert report["verdict"] != "aborted"


def test_a_glued_bar_deep_in_a_long_log_reads_the_same_on_both_paths(
    packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a training log of steady loss lines and bars read past its head by the fast path, the last bar glued to
    # ROCr's hang report
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    steady = "".join(
        f"{{'loss': 0.{n:04d}, 'grad_norm': 1.0, 'epoch': 1.0}}\n 40%|████      | {n}/903 [1:00:00<1:30:00, 4.1s/it]\n"
        for n in range(1, 60)
    )
    log = tmp_path / "train.log"
    log.write_text(steady + HF_BAR + _hw_exception("631351bb5a20") + "Aborted (core dumped)\n")
    # WHEN analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, the glued report the cause
    assert fast == plain
    assert "0x631351bb5a20" in plain


# --- NCCL's init line cut at the paste's end ------------------------------------------------------------------------

NCCL_HEAD = (
    "host:7995:7995 [0] NCCL INFO Bootstrap: Using bond0:10.0.11.5<0>\n"
    "host:7995:7995 [0] NCCL INFO NCCL version 2.26.5+cuda12.9\n"
    "host:7995:8103 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.\n"
    "host:7995:8104 [1] NCCL INFO Using network IB\n"
)
INIT = "ncclCommInitAll comm 0x563ec98ab6c0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2d000 commId 0x9e5fc1f0a6b1c2d3"


@pytest.mark.parametrize("tag", ["", "[Rank 1] "])
@pytest.mark.parametrize("cut", [len(INIT) - 27, len(INIT) - 12, len(INIT) - 3])
def test_an_init_line_cut_at_the_end_is_where_the_run_stopped(tmp_path: Path, tag: str, cut: int) -> None:
    # GIVEN NCCL's setup lines, the last an init line (with NCCL 2.29's rank tag or without) cut before `- Init START`
    last = f"host:7995:8104 [1] NCCL INFO {tag}{INIT[:cut]}"
    report = judge_text(tmp_path, NCCL_HEAD + last)
    # THEN the run stopped in dist_init, at that line
    assert (report["verdict"], report["furthest_phase"]) == ("stalled", "dist_init")
    assert root_text(report) == last


def test_an_init_line_cut_after_many_nccl_notes_reads_the_same_on_both_paths(
    packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an NCCL setup of steady channel notes read past its head by the fast path, the last line an init line cut
    # before `- Init START`
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    notes = "".join(
        f"host:7995:8104 [1] NCCL INFO Channel {n % 32:02d}/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n" for n in range(200)
    )
    last = f"host:7995:8104 [1] NCCL INFO {INIT[:-27]}"
    log = tmp_path / "nccl.log"
    log.write_text(NCCL_HEAD + notes + last)
    # WHEN analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, the cut init line the run's last step
    assert fast == plain
    assert INIT[:-27] in plain


def test_a_last_nccl_note_of_other_words_is_no_init_line(tmp_path: Path) -> None:
    # GIVEN the same setup lines, the last a transport note that shares the init line's first letters only
    report = judge_text(tmp_path, NCCL_HEAD + "host:7995:8104 [1] NCCL INFO ncclTopoGetXmlFromFile: nothing to load")
    # THEN the last progress stays NCCL's version banner
    assert "NCCL version 2.26.5+cuda12.9" in root_text(report)


# --- torch_npu: an HCCL collective failed -----------------------------------------------------------------------------


def test_a_failed_hccl_collective_proves_the_process_group(tmp_path: Path) -> None:
    # GIVEN a rank's traceback through vLLM's device communicator into torch's all_reduce, torch_npu's op error and
    # CANN's explanation
    log = (
        '[rank1]:   File "/vllm/distributed/device_communicators/base_device_communicator.py", line 35, in all_reduce\n'
        "[rank1]:     dist.all_reduce(input_, group=self.device_group)\n"
        '[rank1]:   File "/torch/distributed/distributed_c10d.py", line 2501, in all_reduce\n'
        "[rank1]:     work = group.allreduce([tensor], opts)\n"
        "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
        "HcclAllreduce, error code is 6\n"
        "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.\n"
    )
    report = judge_text(tmp_path, log)
    # THEN it crashed, a process group was up (dist_init reached), and torch_npu's line says what failed
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", "dist_init")
    assert "OPS function error: HcclAllreduce, error code is 6" in root_text(report)


# --- vLLM on HPU: the weights are on the device, then silence --------------------------------------------------------


def test_an_hpu_worker_silent_after_preloading_its_weights(tmp_path: Path) -> None:
    # GIVEN the shards bar done, then two HPU workers' `Pre-loading model weights … took` lines and no more
    pre = (
        "INFO 03-19 15:36:16 hpu_model_runner.py:774] Pre-loading model weights on hpu:0 took 93.54 GiB of device "
        "memory (93.55 GiB/126.6 GiB used) and 4.331 GiB of host memory (80.67 GiB/1005 GiB used)\n"
    )
    log = (
        "Loading safetensors checkpoint shards: 100% Completed | 163/163 [03:12<00:00,  1.18s/it]\n\n"
        f"(VllmWorkerProcess pid=22944) {pre}{pre}"
    )
    report = judge_text(tmp_path, log)
    # THEN the run stalled loading weights, its last step the pre-load
    assert (report["verdict"], report["furthest_phase"]) == ("stalled", "weight_load")
    assert root_text(report) == pre.strip()


# --- an argument dump is no step -------------------------------------------------------------------------------------

PLATFORM = "INFO 04-27 07:30:19 __init__.py:179] Automatically detected platform rocm."
SERVER_ARGS = (
    "[2025-04-27 07:30:43] server_args=ServerArgs(model_path='/data/mistral-gptq', "
    "tokenizer_path='/data/mistral-gptq', tokenizer_mode='auto', tp_size=1, host='0.0.0.0', port=30000)"
)


def test_a_server_args_dump_passes_back_to_the_line_before(tmp_path: Path) -> None:
    # GIVEN SGLang's launch: vLLM's platform line (SGLang imports vLLM), a Python warning, then the arguments dump
    log = f"{PLATFORM}\n/sgl/session_controller.py:57: SyntaxWarning: invalid escape sequence\n{SERVER_ARGS}\n"
    report = judge_text(tmp_path, log)
    # THEN the run is open in launch, and its last progress is the platform line, not the dump
    assert report["verdict"] in ("stalled", "progressing")
    assert report["furthest_phase"] == "launch"
    assert root_text(report) == PLATFORM


def test_a_dump_after_the_command_alone_stays_the_last_line(tmp_path: Path) -> None:
    # GIVEN the person's launch command, then the dump: nothing before the dump reports a step
    command = "python3 -m sglang.launch_server --model-path /data/mistral-gptq --port 30000"
    report = judge_text(tmp_path, f"{command}\n{SERVER_ARGS}\n")
    # THEN the dump, the run's own first line, is where it is
    assert root_text(report) == SERVER_ARGS


def test_an_engine_started_with_its_config_is_a_step(tmp_path: Path) -> None:
    # GIVEN vLLM's platform line, then its engine's start, which prints its config on the same line
    engine = (
        "INFO 07-28 10:40:25 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='Qwen/Qwen3-8B', "
        "speculative_config=None, tokenizer='Qwen/Qwen3-8B'"
    )
    platform = "INFO 07-28 10:40:22 [__init__.py:244] Automatically detected platform cuda."
    report = judge_text(tmp_path, f"{platform}\n{engine}\n")
    # THEN the engine's start is the last progress: a step, not a dump
    assert root_text(report) == engine


# --- a last line cut inside a line of the kind before it -------------------------------------------------------------


def test_a_repeated_line_cut_at_the_end_quotes_the_whole_one_before(tmp_path: Path) -> None:
    # GIVEN c10's expandable-segments warning from each process, the last cut mid-word
    line = "[W214 15:20:56.{:09d} CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported on this platform"
    whole = [line.format(n) + " (function operator())" for n in (973624780, 8814328, 199089483)]
    cut = line.format(205991785)[:-10]
    report = judge_text(tmp_path, "\n".join([*whole, cut]))
    # THEN the newest whole line of the kind is where the run is
    assert root_text(report) == whole[-1]
