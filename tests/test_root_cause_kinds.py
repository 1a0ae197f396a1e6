"""The line a report names as the cause: a cut traceback's bare header gives way to a line that states the failure,
a launcher's summary is the cause when the child's own exception is not in the log, a stall's last line of its kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_json

# vLLM V1's engine core (multiproc_executor.py's worker monitor, 0.8.5+), its child output prefixed with its name
ENGINE = "(EngineCore_DP0 pid=7101) "
FRAMES = [
    '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
    "    self.run()",
    '  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run',
    "    self._target(*self._args, **self._kwargs)",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 712, in run_engine_core',
    "    raise e",
]
# torch 2.1-2.2's elastic agent, its loggers' `[ts] name: [LEVEL] ` form
AGENT = "[2024-05-08 08:47:31,{ms}] torch.distributed.elastic.multiprocessing.api: [{level}] "


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_workers_death_is_the_cause_when_the_traceback_after_it_is_cut_in_its_frames(tmp_path: Path) -> None:
    # GIVEN the engine core's word that a worker died, then its own `Process EngineCore_DP0:` traceback, the paste
    # cut inside the frames (no exception line, no `raise Cls(...)` to read it from)
    log = _write(
        tmp_path,
        [
            ENGINE + "ERROR 11-24 11:43:00 [multiproc_executor.py:150] Worker proc VllmWorker-2 died unexpectedly, "
            "shutting down executor.",
            ENGINE + "Process EngineCore_DP0:",
            ENGINE + "Traceback (most recent call last):",
            *(ENGINE + frame for frame in FRAMES),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the worker's death (line 1): the headers say only that something was raised
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


def test_the_agents_failed_line_is_the_cause_when_its_own_traceback_is_cut(tmp_path: Path) -> None:
    # GIVEN torch 2.1's agent: SIGTERM to a healthy worker, `failed (exitcode: 1)` for local rank 2, then the
    # launcher's own traceback cut in its frames
    log = _write(
        tmp_path,
        [
            AGENT.format(ms="261", level="WARNING") + "Sending process 5938 closing signal SIGTERM",
            AGENT.format(ms="877", level="ERROR")
            + "failed (exitcode: 1) local_rank: 2 (pid: 5939) of binary: /opt/conda/bin/python",
            "Traceback (most recent call last):",
            '  File "/opt/conda/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 806, in main',
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash, its cause the agent's line naming the worker and its exit code (line 2)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 2)
    assert "failed (exitcode: 1) local_rank: 2 (pid: 5939)" in report["root_cause"]["text"]


@pytest.mark.parametrize(
    "header", ["Traceback (most recent call last):", "Process SpawnProcess-1:", "Exception in thread Thread-3 (_run):"]
)
def test_a_cut_traceback_alone_is_still_the_cause(tmp_path: Path, header: str) -> None:
    # GIVEN a log of one CPython header and the frames after it, cut before the exception line
    log = _write(tmp_path, ["INFO 11-24 11:42:00 [api_server.py:1971] vLLM API server version 0.11.0", header, *FRAMES])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash, and with no line stating the failure the innermost frame is the cause (line 7: a re-raise `raise e`
    # names no exception; the header says only that something was raised)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 7)


def test_a_traceback_with_its_exception_line_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN the worker's death, then a traceback that ends in its exception line
    log = _write(
        tmp_path,
        [
            "ERROR 11-24 11:43:00 [multiproc_executor.py:150] Worker proc VllmWorker-2 died unexpectedly, shutting "
            "down executor.",
            "Traceback (most recent call last):",
            *FRAMES,
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN its exception line (line 9) is the cause: it states the failure, the death is its consequence
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 9)


# vLLM 0.9+'s API server while it waits for its engine core (v1/engine/utils.py, DEBUG, every 10 s)
WAITING = (
    "(APIServer pid=300) DEBUG 09-02 17:29:{s:02d} [utils.py:777] Waiting for 1 local, 0 remote core engine proc(s) "
    "to start."
)


def test_a_stall_names_the_last_line_of_the_kind_it_stopped_at(tmp_path: Path) -> None:
    # GIVEN a paste of the log's tail: the API server's waiting line four times, 10 s apart, and the log ends
    log = _write(tmp_path, [WAITING.format(s=s) for s in (6, 16, 26, 36)])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled in launch; the cause is the last waiting line (line 4), the reason still measures the silence
    # from the first (the last progress: the phase first seen)
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("stalled", "launch", 4)
    assert "last progress 30s before the end (line 1; the same kind of line until line 4)" in report["reason"]


def test_a_stall_with_other_lines_after_its_last_progress_names_the_progress(tmp_path: Path) -> None:
    # GIVEN SGLang's weight load begun on TP0, then a line of another kind, and the log ends
    log = _write(
        tmp_path,
        [
            "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB",
            "[2025-03-08 12:29:14 TP0] Using model weights format ['*.safetensors']",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled during weight_load; the cause is the progress line itself (line 1)
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("stalled", "weight_load", 1)


def test_a_cudacheck_exit_is_the_cause_of_the_engine_dead_errors_before_it(tmp_path: Path) -> None:
    # GIVEN vLLM's API server reporting its engine dead to a request, then the worker's custom all-reduce
    # CUDACHECK line (csrc/custom_all_reduce.cuh: printf then exit), unstamped, as stdout interleaves them
    log = _write(
        tmp_path,
        [
            "ERROR 06-26 23:10:17 [async_llm.py:420] AsyncLLM output_handler failed.",
            "ERROR 06-26 23:10:17 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
            "encountered an issue. See stack trace (above) for the root cause.",
            'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
            "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash caused by the failed CUDA call (line 4): EngineDeadError is only its consequence
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 4)


def test_a_store_read_that_waited_out_its_timeout_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN torch's socket.cpp warning that a store client's read waited its whole timeout (C10D_WARNING
    # `waitForInput: socket {} timed out after {}ms`), then SGLang's scheduler exception cut in its frames
    log = _write(
        tmp_path,
        [
            "[rank2]:[W311 09:00:05.100000000 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=88, "
            "addr=[::ffff:10.1.2.3]:41000, remote=[::ffff:10.1.2.3]:5000) timed out after 600000ms",
            "[2025-03-11 09:00:05 TP2] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1787, in run_scheduler_process',
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout, its cause the waited-out read (line 1)
    assert (report["verdict"], report["root_cause"]["line"]) == ("timeout", 1)


# Hydra's job runner (hydra/core/utils.py JobReturn.return_value) before it raises the job's exception
HYDRA = "Error executing job with overrides: ['trainer.n_gpus_per_node=8', 'data.train_batch_size=256']"


@pytest.mark.parametrize(
    ("tail", "line"),
    [
        ([], 2),
        (
            [
                "Traceback (most recent call last):",
                '  File "/app/train.py", line 12, in main',
                "    trainer.fit()",
                "ValueError: batch size 256 is not divisible by 3 ranks",
                "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
            ],
            6,
        ),
    ],
    ids=["cut-after-it", "with-its-traceback"],
)
def test_a_hydra_job_that_raised_is_a_crash(tmp_path: Path, tail: list[str], line: int) -> None:
    # GIVEN a training bar, then Hydra's word that the job raised, with or without the job's traceback after it
    bar = "Training Progress:   1%|          | 1/108 [16:49<30:00:53, 1009.85s/it]"
    log = _write(tmp_path, [bar, HYDRA, *tail])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash: its cause the job's exception line when the log holds it, else Hydra's line
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", line)


def test_a_gloo_group_that_never_connected_is_the_cause(tmp_path: Path) -> None:
    # GIVEN ProcessGroupGloo's logged failure to connect (LOG(ERROR) before it throws the same text), then SGLang's
    # scheduler exception that it raised into, cut in its frames
    log = _write(
        tmp_path,
        [
            "[rank1]:[E421 02:05:38.764490322 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
            "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
            "[2025-04-21 02:05:39 TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2059, in run_scheduler_process',
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash, its cause the gloo line (line 1)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


# torch/distributed/elastic/multiprocessing/errors/__init__.py _FAILURE_FORMAT_TEMPLATE, as ChildFailedError's
# summary prints it: which worker (rank), then how it failed (exitcode, traceback)
def _summary(rank: int, exitcode: int, pid: int) -> list[str]:
    return [
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2025-02-21_20:07:38",
        "  host      : node-a",
        f"  rank      : {rank} (local_rank: {rank})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]


@pytest.mark.parametrize(("rank", "exitcode", "pid"), [(0, 1, 14661), (3, 2, 8812)])
def test_the_exitcode_line_not_the_rank_line_is_the_cause_of_a_launchers_summary(
    tmp_path: Path, rank: int, exitcode: int, pid: int
) -> None:
    # GIVEN only torchrun's failure summary of a worker that exited with a positive code (no error file, so its
    # traceback line only points at the docs)
    log = _write(tmp_path, _summary(rank, exitcode, pid))
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the exitcode line (12): the rank line before it only names the worker
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 12)


# torch/distributed/launcher/api.py launch_agent raises ChildFailedError, whose message is the failure table
# (errors/__init__.py _MSG_FORMAT_TEMPLATE): CPython prints it after `ChildFailedError: `, the rows indented
AGENT_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 264, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
]


def _entry(idx: int, time: str, rank: int, exitcode: int, pid: int) -> list[str]:
    """One entry of the table (_FAILURE_FORMAT_TEMPLATE); a negative exit code's traceback is ProcessFailure's
    `Signal N (NAME) received by PID P`."""
    names = {-9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM"}
    how = (
        f"Signal {-exitcode} ({names[exitcode]}) received by PID {pid}"
        if exitcode < 0
        else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    )
    return [
        f"[{idx}]:",
        f"  time      : {time}",
        "  host      : node-a",
        f"  rank      : {rank} (local_rank: {rank})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {how}",
    ]


def _table(others: list[list[str]], root: list[str]) -> list[str]:
    return [
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        *([row for entry in others for row in entry] or ["  <NO_OTHER_FAILURES>"]),
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        *root,
        "============================================================",
    ]


@pytest.mark.parametrize(
    ("exitcode", "verdict", "row"),
    [
        (-9, "crashed", "  traceback : Signal 9 (SIGKILL) received by PID 3309"),
        (-11, "aborted", "  traceback : Signal 11 (SIGSEGV) received by PID 3309"),
        (1, "crashed", "  exitcode  : 1 (pid: 3309)"),
    ],
)
def test_the_first_observed_failures_row_not_the_exception_line_is_the_cause_of_childfailederror(
    tmp_path: Path, exitcode: int, verdict: str, row: str
) -> None:
    # GIVEN the agent's traceback ending in `ChildFailedError: ` and its message, the table, whose first observed
    # failure is rank 7's exit (the other entries: none)
    lines = [*AGENT_TRACEBACK, *_table([], _entry(0, "2024-09-09_09:36:56", 7, exitcode, 3309))]
    log = _write(tmp_path, lines)
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the entry's row that says how it ended: its signal where it died of one (a SIGKILL another
    # process sent: a crash), else its exit code; never the exception line that only says a child failed
    assert (report["verdict"], report["root_cause"]["line"]) == (verdict, lines.index(row) + 1)


def test_the_first_observed_failures_exit_code_is_the_cause_where_its_signal_row_is_cut(tmp_path: Path) -> None:
    # GIVEN the table of a worker killed by SIGKILL, the paste cut inside its `traceback :` row
    lines = [*AGENT_TRACEBACK, *_table([], _entry(0, "2024-09-09_09:36:56", 7, -9, 3309))]
    lines = [*lines[:-2], "  traceback : Signal 9 (SIGKILL) receive"]
    log = _write(tmp_path, lines)
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the entry's exit code (-9: killed by SIGKILL)
    assert (report["verdict"], report["root_cause"]["line"]) == (
        "crashed",
        lines.index("  exitcode  : -9 (pid: 3309)") + 1,
    )


def test_the_other_entries_signals_are_not_the_cause_of_the_first_observed_failure(tmp_path: Path) -> None:
    # GIVEN a table whose first observed failure (rank 1, exit code 1) comes after the other entries: the agent's
    # SIGKILL and SIGTERM to the survivors 31 s later
    others = [_entry(1, "2026-09-07_13:03:29", 0, -9, 14689), _entry(2, "2026-09-07_13:03:29", 2, -15, 14691)]
    lines = [*AGENT_TRACEBACK, *_table(others, _entry(0, "2026-09-07_13:02:58", 1, 1, 14690))]
    log = _write(tmp_path, lines)
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash (no fatal signal of its own) whose cause is rank 1's exit code, not a survivor's signal
    assert (report["verdict"], report["root_cause"]["line"]) == (
        "crashed",
        lines.index("  exitcode  : 1 (pid: 14690)") + 1,
    )


def test_the_exception_line_stays_the_cause_where_the_first_observed_failures_entry_is_cut(tmp_path: Path) -> None:
    # GIVEN a table cut after the first observed failure's rank row, its other entries a survivor's SIGKILL
    others = [_entry(1, "2026-09-07_13:03:29", 0, -9, 14689)]
    lines = [*AGENT_TRACEBACK, *_table(others, _entry(0, "2026-09-07_13:02:58", 1, 1, 14690))][:-4]
    assert lines[-1] == "  rank      : 1 (local_rank: 1)"
    log = _write(tmp_path, lines)
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the exception line (6): another entry's row is a later failure, not the first
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 6)


# v1/engine/core.py run_engine_core and v1/executor/multiproc_executor.py worker_main: `logger.exception(...)` with one
# of these messages, the traceback after it
ENGINE_HEADERS = ["EngineCore encountered a fatal error.", "EngineCore failed to start.", "WorkerProc failed to start."]


@pytest.mark.parametrize("header", ENGINE_HEADERS)
def test_a_workers_death_is_the_cause_when_the_engine_cores_own_traceback_after_it_is_cut(
    tmp_path: Path, header: str
) -> None:
    # GIVEN the executor's word that a worker died, then the engine core's logger.exception header and its traceback
    # (each line under the logger's prefix), cut inside the frames
    log = _write(
        tmp_path,
        [
            "ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc VllmWorker-3 died unexpectedly, "
            "shutting down executor.",
            f"ERROR 11-08 11:01:30 [core.py:710] {header}",
            "ERROR 11-08 11:01:30 [core.py:710] Traceback (most recent call last):",
            *("ERROR 11-08 11:01:30 [core.py:710] " + frame for frame in FRAMES),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the worker's death (line 1): the engine core's header says only that it raised
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


@pytest.mark.parametrize("header", ENGINE_HEADERS)
def test_the_engine_cores_header_is_the_cause_when_nothing_else_states_the_failure(tmp_path: Path, header: str) -> None:
    # GIVEN the API server's version line, then the engine core's header and its traceback cut inside the frames
    log = _write(
        tmp_path,
        [
            "INFO 11-24 11:42:00 [api_server.py:1971] vLLM API server version 0.11.0",
            f"ERROR 11-24 11:43:00 [core.py:710] {header}",
            "ERROR 11-24 11:43:00 [core.py:710] Traceback (most recent call last):",
            *("ERROR 11-24 11:43:00 [core.py:710] " + frame for frame in FRAMES),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash, and the header (line 2) is the cause: no other line states it
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 2)


# torch's NCCLUtils.hpp DistBackendError message: `NCCL error in: <file>:<line>, <error>, NCCL version <v>`, then the
# code's explanation on its own line, then `Last error:` (reference nccl_torch_vllm.md 2.3(i))
NCCL_ERRORS = [
    (
        "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
    ),
    (
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
    ),
]


@pytest.mark.parametrize(("error", "explanation"), NCCL_ERRORS)
def test_another_ranks_first_line_of_the_nccl_error_is_the_cause_when_this_ranks_was_cut(
    tmp_path: Path, error: str, explanation: str
) -> None:
    # GIVEN an excerpt that starts at rank 10's explanation line (its first line cut above it), then rank 13's
    # traceback ending in the whole message
    log = _write(
        tmp_path,
        [
            f"[rank10]: {explanation}",
            "[rank10]: Last error:",
            "[rank13]: Traceback (most recent call last):",
            '[rank13]:   File "/home/user/test.py", line 9, in run',
            "[rank13]:     dist.all_reduce(tensor, op=dist.ReduceOp.SUM)",
            "[rank13]: torch.distributed.DistBackendError: NCCL error in: "
            f"../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, {error}, NCCL version 2.20.5",
            f"[rank13]: {explanation}",
            "[rank13]: Last error:",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the first line of the error (line 6): where, which error, which NCCL
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 6)


@pytest.mark.parametrize("explanation", [explanation for _, explanation in NCCL_ERRORS])
def test_the_nccl_errors_explanation_is_the_cause_when_nothing_else_states_it(tmp_path: Path, explanation: str) -> None:
    # GIVEN an excerpt of two ranks' explanation lines alone, their first lines cut above it
    log = _write(tmp_path, [f"[rank10]: {explanation}", "[rank10]: Last error:", f"[rank11]: {explanation}"])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the first explanation (line 1)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


# vLLM's weight-load bar (model_executor/model_loader/weight_utils.py, its own bar_format:
# `{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]`)
SHARDS = "Loading safetensors checkpoint shards: {pct:3d}% Completed | {n}/13 [{elapsed}<{remaining}, {rate}]"
SHARD_TICKS = [
    (8, 1, "00:08", "01:40", "8.40s/it"),
    (15, 2, "00:16", "01:32", "8.45s/it"),
    (23, 3, "00:25", "01:24", "8.46s/it"),
]


LOADING = "INFO 01-15 13:31:50 [model_runner.py:1110] Starting to load model Qwen/Qwen2.5-7B-Instruct..."


def _shards(ticks: list[tuple[int, int, str, str, str]]) -> list[str]:
    return [SHARDS.format(pct=pct, n=n, elapsed=e, remaining=r, rate=rate) for pct, n, e, r, rate in ticks]


def test_a_stalls_last_bar_cut_mid_line_is_still_the_cause(tmp_path: Path) -> None:
    # GIVEN vLLM's weight load: three whole ticks of its shard bar, then a fourth the excerpt cut inside its clock
    # bracket (the paste cut it, not the server: 4/13 is as far as the log shows the load got)
    cut = "Loading safetensors checkpoint shards:  31% Completed | 4/13 [00:33<01:16,  8.4"
    log = _write(tmp_path, [LOADING, *_shards(SHARD_TICKS), cut])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled in weight_load; the cause is the cut tick (line 5), not an older whole one that got less far
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("stalled", "weight_load", 5)
    assert report["root_cause"]["text"] == cut


def test_a_stalls_last_bar_with_its_bracket_closed_is_the_cause(tmp_path: Path) -> None:
    # GIVEN the same weight load whose last tick is whole: its clock bracket closes (`…, 8.46s/it]`)
    log = _write(
        tmp_path,
        [LOADING, *_shards(SHARD_TICKS)],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is that last tick (line 4), and the reason says nothing of a cut
    assert (report["verdict"], report["root_cause"]["line"]) == ("stalled", 4)
    assert "cut mid-line" not in report["reason"]


# SGLang's capture begin, printed by every TP rank at the same second (cuda_graph_runner.py: `Capture cuda graph
# begin. This can take up to several minutes. avail mem=… GB`)
CAPTURE = (
    "[2025-03-08 12:29:21 TP{rank}] Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB"
)

LOAD_BEGIN = "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB"


def test_a_stalls_last_line_cut_mid_line_is_the_cause_while_its_first_words_are_whole(tmp_path: Path) -> None:
    # GIVEN four TP ranks' capture begin at one second, the last (TP0's) cut by the excerpt inside its message
    cut = CAPTURE.format(rank=0)[:80]
    log = _write(tmp_path, [LOAD_BEGIN, *(CAPTURE.format(rank=rank) for rank in (2, 3, 1)), cut])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled in cuda_graph; the cause is that cut line (line 5): fixtures/realworld/README.md counts a line the
    # paste cut while what is left still holds its message's first words (`Capture cuda graph begin.`)
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("stalled", "cuda_graph", 5)
    assert report["root_cause"]["text"] == cut


def test_a_stalls_whole_last_line_stays_the_cause_beside_other_ranks_copies(tmp_path: Path) -> None:
    # GIVEN the four ranks' capture begin at one second, every copy whole
    log = _write(
        tmp_path,
        [LOAD_BEGIN, *(CAPTURE.format(rank=r) for r in (2, 3, 1, 0))],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the last line (TP0's, line 5)
    assert (report["verdict"], report["root_cause"]["line"]) == ("stalled", 5)


# A fatal error's dump (faulthandler, Py_FatalError; CPython 3.10+): its head says what, the stacks follow, and the
# list of extension modules closes it
FATAL_DUMP = [
    "Fatal Python error: Segmentation fault",
    "",
    "Current thread 0x00007f4836407c40 (most recent call first):",
    '  File "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 319 in _lazy_init',
    "",
    "Extension modules: numpy.core._multiarray_umath, torch._C, torch._C._fft (total: 3)",
]


def test_a_dumps_tail_gives_way_to_the_next_dumps_head_that_says_what_failed(tmp_path: Path) -> None:
    # GIVEN an excerpt that begins at one process's `Extension modules:` (its dump's head cut away), then another
    # process's whole dump, headed `Fatal Python error: Segmentation fault`
    log = _write(tmp_path, [FATAL_DUMP[-1], *FATAL_DUMP])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN aborted, its cause the head that says what (line 2), not the tail that only closes a dump
    assert (report["verdict"], report["root_cause"]["line"]) == ("aborted", 2)


def test_a_dumps_tail_alone_is_still_the_cause(tmp_path: Path) -> None:
    # GIVEN an excerpt of a dump's last frame and its `Extension modules:` list, nothing else
    log = _write(tmp_path, FATAL_DUMP[3:])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN aborted, the list the cause (line 3): no line states more
    assert (report["verdict"], report["root_cause"]["line"]) == ("aborted", 3)


# torch 2.10+'s CUDA error message (c10/cuda/CUDAException.cpp c10_cuda_check_implementation), then c10's trailer
CUDA_MESSAGE = [
    "CUDA error: an illegal memory access was encountered",
    "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
    "for more information.",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:44 (most recent call "
    "first):",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x80 (0x7f5438d91b80 in "
    "/usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)",
]


def test_a_cuda_errors_name_is_the_cause_where_its_first_line_was_cut(tmp_path: Path) -> None:
    # GIVEN an excerpt that begins at the message's second line, `Search for `cudaErrorIllegalAddress'…`
    log = _write(tmp_path, CUDA_MESSAGE[1:])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN crashed, its cause the line naming the error (line 1), not c10's trailer that says where it was made
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


def test_a_cuda_errors_exception_line_stays_the_cause_over_its_name(tmp_path: Path) -> None:
    # GIVEN a traceback whose exception line is the CUDA error, its further lines after it
    log = _write(
        tmp_path,
        ["Traceback (most recent call last):", *FRAMES[:2], "RuntimeError: " + CUDA_MESSAGE[0], *CUDA_MESSAGE[1:5]],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN crashed, its cause the exception line (line 4): the `Search for` line inside it only explains it
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 4)


# uvicorn's request wrapper (protocols/http/h11_impl.py run_asgi): `logger.error("Exception in ASGI application\n",
# exc_info=exc)`, the traceback after it
ASGI = [
    'INFO:     172.18.0.1:47358 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    "ERROR:    Exception in ASGI application",
    "Traceback (most recent call last):",
    '  File "/opt/py3/lib/python3.10/site-packages/uvicorn/protocols/http/h11_impl.py", line 406, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
]


def test_uvicorns_header_is_the_cause_of_a_request_traceback_cut_before_its_exception_line(tmp_path: Path) -> None:
    # GIVEN uvicorn's header and the traceback after it, cut in its frames
    log = _write(tmp_path, ASGI)
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN crashed, its cause uvicorn's header (line 2): it says a request's handler raised, CPython's bare header less
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 2)


def test_a_request_tracebacks_exception_line_is_the_cause_under_uvicorns_header(tmp_path: Path) -> None:
    # GIVEN the same traceback, whole: it ends in its exception line
    log = _write(tmp_path, [*ASGI, "KeyError: 'choices'"])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN its exception line (line 6) is the cause
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 6)


# ray/_raylet.pyx: an actor whose constructor raised prints `Exception raised in creation task: ` and ActorDiedError's
# text (exceptions.py: `The actor died because of an error raised in its creation task, ` + `ray::Class.__init__() …`),
# then the constructor's traceback frames and its exception line, every line behind the actor's `(Name pid=N) ` tag
CREATION = "(RayWorkerWrapper pid=2757099) "
CREATION_HEAD = (
    CREATION + "Exception raised in creation task: The actor died because of an error raised in its creation task, "
    "ray::RayWorkerWrapper.__init__() (pid=2757099, ip=192.168.64.2, actor_id=d989f62b, repr=<RayWorkerWrapper>)"
)
CREATION_FRAMES = [
    CREATION + '  File "/opt/venv/lib/python3.10/site-packages/vllm/executor/ray_utils.py", line 41, in __init__',
    CREATION + "    super().__init__(*args, **kwargs)",
]


def test_an_actors_constructor_exception_is_the_cause_under_rays_creation_task_head(tmp_path: Path) -> None:
    # GIVEN Ray's creation-task head, the constructor's frames and its exception line
    exception = CREATION + "RuntimeError: Expected one of cpu, cuda device type at start of device string: npu"
    log = _write(tmp_path, [CREATION_HEAD, *CREATION_FRAMES, exception])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the exception line (4): the head only says that the constructor raised
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 4)


def test_rays_creation_task_head_is_the_cause_where_the_constructors_traceback_is_cut(tmp_path: Path) -> None:
    # GIVEN Ray's creation-task head and the constructor's frames, the paste cut before the exception line
    log = _write(tmp_path, [CREATION_HEAD, *CREATION_FRAMES])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the head (1): it says that the actor's creation task raised
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 1)


def test_an_nccl_errors_last_error_lines_are_the_tail_of_torchs_exception_line(tmp_path: Path) -> None:
    # GIVEN torch's DistBackendError (NCCLUtils: `NCCL error in: file:line, <ncclGetErrorString>, NCCL version x`,
    # then getNcclErrorDetailStr's `ncclUnhandledCudaError: Call to CUDA function failed.` and `Last error:` with
    # NCCL's last error on lines of their own) ending a traceback
    log = _write(
        tmp_path,
        [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3665, in barrier',
            "    work = default_pg.barrier(opts=opts)",
            "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1197, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version 2.18.1",
            "ncclUnhandledCudaError: Call to CUDA function failed.",
            "Last error:",
            "Cuda failure 'initialization error'",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the exception line (line 4): the lines after it are its message going on
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 4)


def test_a_second_what_line_of_two_glued_writers_is_a_failure_of_its_own(tmp_path: Path) -> None:
    # GIVEN two processes' `terminate called after throwing an instance of …` / `  what():  …` interleaved (glibc++'s
    # verbose terminate handler), the first `what():` holding the second writer's header
    log = _write(
        tmp_path,
        [
            "terminate called after throwing an instance of 'std::runtime_error'",
            "  what():  terminate called after throwing an instance of 'NCCL Error 5: invalid usage (run with "
            "NCCL_DEBUG=WARN for details)std::runtime_error",
            "'",
            "  what():  NCCL Error 5: invalid usage (run with NCCL_DEBUG=WARN for details)",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the whole `what():` line of the second writer (line 4), not the glued one
    assert report["root_cause"]["line"] == 4


@pytest.mark.parametrize(
    ("tag", "name"),
    [("(ApiServer_2 pid=51200) ", "ApiServer_2"), ("(VllmWorker-1 pid=9911) ", "VllmWorker-1"), ("", "ApiServer_0")],
)
def test_a_named_vllm_process_header_over_a_cut_traceback_is_the_cause_not_the_bare_traceback_line(
    tmp_path: Path, tag: str, name: str
) -> None:
    # GIVEN weight loading under way, then multiprocessing's `Process <name>:` of one of vLLM's named processes
    # (v1/utils.py `ApiServer_{i}`, multiproc_executor.py `VllmWorker-{rank}`) and CPython's traceback header, the
    # paste cut inside the frames before any exception line or `raise` statement
    log = _write(
        tmp_path,
        [
            "Loading safetensors checkpoint shards:  40% Completed | 4/10 [00:40<01:00,  10.0s/it]",
            tag + f"Process {name}:",
            tag + "Traceback (most recent call last):",
            *(tag + frame for frame in FRAMES[:4]),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash in weight_load whose cause is the header that names the process that died (line 2): of two
    # headers that say only that something was raised, the one that says which process
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("crashed", "weight_load", 2)
    assert report["root_cause"]["text"].endswith(f"Process {name}:")


# Lines every TP rank prints at one step, each with its own free memory (SGLang model_runner.py: `Load weight end.
# type=…, dtype=…, avail mem={:.2f} GB`; cuda_graph_runner.py: `Capture cuda graph begin. … avail mem={:.2f} GB`)
LOAD_END = (
    "[2025-02-01 22:46:19 TP{rank}] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
    "avail mem={mem} GB"
)
CAPTURE_MEM = (
    "[2025-02-01 22:47:02 TP{rank}] Capture cuda graph begin. This can take up to several minutes. avail mem={mem} GB"
)


@pytest.mark.parametrize("template", [LOAD_END, CAPTURE_MEM])
def test_a_stalls_last_line_cut_in_its_own_numbers_is_the_cause(tmp_path: Path, template: str) -> None:
    # GIVEN four TP ranks' line of one step at one second, each with its own memory figure, the last (TP8's) cut by
    # the excerpt inside its figure
    lines = [template.format(rank=rank, mem=mem) for rank, mem in ((15, "37.71"), (10, "37.70"), (14, "37.69"))]
    cut = template.format(rank=8, mem="37.74")
    cut = cut[: cut.index("37.74") + 4]
    log = _write(tmp_path, [LOAD_BEGIN, *lines, cut])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the cut line itself (line 5): cut mid-number, it still holds its message's first words
    assert (report["verdict"], report["root_cause"]["line"]) == ("stalled", 5)
    assert report["root_cause"]["text"] == cut


def test_a_ranks_own_earlier_line_of_the_kind_is_no_copy_of_its_cut_last_one(tmp_path: Path) -> None:
    # GIVEN one rank's Prefill batch lines in one second (each a request's, numbers of their own), the last cut
    batch = (
        "[2025-01-07 20:16:02 TP0] Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: 0, token usage: 0.0{u}"
    )
    lines = [LOAD_BEGIN, *(batch.format(n=40 + u, u=u) for u in range(1, 4))]
    log = _write(tmp_path, [*lines, batch.format(n=49, u=9)[:70]])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN that rank's older whole line (which says the run got less far) is not quoted for the cut one
    assert "copy of it whole" not in report["reason"]


# torch_npu's ProcessGroupHCCL error: where (`HCCL error in: <file>:<line>`), torch_npu's own code line, then CANN's
# error line (`E<module><4 digits>: [PID: N] <time> <message>`), its `Solution:` and CANN's indented trace
HCCL_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3439, in barrier',
    "    work = default_pg.barrier(opts=opts)",
]
HCCL_ERROR = "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:71"
HCCL_CODE = "[ERROR] 2025-03-02-08:14:55 (PID:41022, Device:1, RankID:1) ERR02200 DIST call hccl api failed."
CANN = (
    "EI0006: [PID: 41022] 2025-03-02-08:14:55.102.311 Getting socket times out. Reason: Remote Rank did not send "
    "the data in time."
)


def test_canns_error_line_is_the_cause_of_a_torch_npu_hccl_error(tmp_path: Path) -> None:
    # GIVEN a barrier on the default group failing in torch_npu: the HCCL error's first line, torch_npu's code line,
    # CANN's error line, its solution and trace
    log = _write(
        tmp_path,
        [
            *HCCL_FRAMES,
            HCCL_ERROR,
            HCCL_CODE,
            CANN,
            "        Solution: 1. Check the rank service processes with other errors or no errors in the cluster.",
            "        TraceBack (most recent call last):",
            "        Wait socket establish timeout, role[1] rank[1] timeout[120][FUNC:Wait][FILE:hccl_socket.cc]",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is CANN's line (line 6: what failed, the first line says only where); the error proves
    # a process group was up (dist_init)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 6)
    assert report["root_cause"]["text"] == CANN
    assert report["furthest_phase"] == "dist_init"


def test_a_torch_npu_hccl_error_cut_before_canns_line_is_its_own_cause(tmp_path: Path) -> None:
    # GIVEN the same error, the paste cut after torch_npu's code line
    log = _write(tmp_path, [*HCCL_FRAMES, HCCL_ERROR, HCCL_CODE])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN its first line is the cause (line 4): nothing else says more
    assert (report["verdict"], report["root_cause"]["line"], report["furthest_phase"]) == ("crashed", 4, "dist_init")
