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
    # THEN a crash, and with no line stating the failure the header is the cause (line 2)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 2)


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
