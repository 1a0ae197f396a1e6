"""Exceptions a program printed and went on from (CPython's unraisable hook, `Exception ignored in: …`): never the
failure of a run, whatever traceback and exception line they carry; a real failure beside them still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_json

# vLLM 0.6's offline LLM: its engine's bars, the result, then the engine's destructor at interpreter shutdown
OFFLINE_RUN = [
    "INFO 09-03 12:01:20 llm_engine.py:232] Initializing an LLM engine (v0.6.0) with config: model='facebook/opt-125m'",
    "INFO 09-03 12:01:30 model_runner.py:1008] Loading model weights took 0.2389 GB",
    "INFO 09-03 12:01:38 model_runner.py:1300] Graph capturing finished in 8 secs.",
    "Processed prompts: 100%|██████████| 4/4 [00:00<00:00, 11.42it/s, est. speed input: 62.83 toks/s, "
    "output: 182.7 toks/s]",
]
# Three forms of the hook's report (CPython Python/errors.c, 3.8+): a destructor, an atexit callback, and a
# weakref callback inside a vLLM V1 worker (every line under the worker's `(Worker_TP1 pid=N) ` tag)
DESTRUCTOR = [
    "Exception ignored in: <function LLMEngine.__del__ at 0x7f2ff66af060>",
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/engine/llm_engine.py", line 492, in __del__',
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/executor/ray_gpu_executor.py", line 72, in shutdown',
    "ImportError: sys.meta_path is None, Python is likely shutting down",
]
ATEXIT = [
    "Exception ignored in atexit callback: <function _exit_function at 0x7f3c2a1e5bc0>",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/multiprocessing/util.py", line 357, in _exit_function',
    "    p.join()",
    "KeyboardInterrupt: ",
]
WORKER = [
    "(Worker_TP1 pid=750) Exception ignored in: <function AllReduceFusionWorkspace.__del__ at 0x7f528bb4d9e0>",
    "(Worker_TP1 pid=750) Traceback (most recent call last):",
    '(Worker_TP1 pid=750)   File "/opt/vllm/lib64/python3.12/site-packages/flashinfer/comm/workspace_base.py", '
    "line 72, in __del__",
    "(Worker_TP1 pid=750) ImportError: sys.meta_path is None, Python is likely shutting down",
]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.mark.parametrize("ignored", [DESTRUCTOR, ATEXIT, WORKER], ids=["destructor", "atexit", "worker-weakref"])
def test_an_ignored_exception_after_a_finished_run_is_no_failure(tmp_path: Path, ignored: list[str]) -> None:
    # GIVEN an offline run whose prompts were all processed, then an exception the interpreter ignored at shutdown
    log = _write(tmp_path, [*OFFLINE_RUN, *ignored])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the run finished, as its bar says: the ignored exception is no failure and no cause
    assert report["verdict"] == "finished"
    assert report["root_cause"] is None


def test_a_failure_after_an_ignored_exception_is_still_the_cause(tmp_path: Path) -> None:
    # GIVEN a destructor's ignored exception, then the engine's own traceback that ended the run
    log = _write(
        tmp_path,
        [
            *OFFLINE_RUN[:2],
            *DESTRUCTOR,
            "Traceback (most recent call last):",
            '  File "/opt/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 1010, in load_model',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the later traceback's exception line (line 10), not the ignored one's
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 10)


def test_a_workers_death_is_the_cause_when_only_ignored_exceptions_come_before_it(tmp_path: Path) -> None:
    # GIVEN vLLM V1 (0.8.5): a worker's weakref callback raised SystemExit from the executor's signal handler
    # (ignored), then the engine core's word that another worker died
    log = _write(
        tmp_path,
        [
            "(VllmWorker rank=0 pid=55723) Exception ignored in: "
            "<function WeakIdKeyDictionary.__init__.<locals>.remove>",
            "(VllmWorker rank=0 pid=55723) Traceback (most recent call last):",
            '(VllmWorker rank=0 pid=55723)   File "/opt/venv/lib/python3.10/site-packages/vllm/v1/executor/'
            'multiproc_executor.py", line 398, in signal_handler',
            "(VllmWorker rank=0 pid=55723)     raise SystemExit()",
            "(VllmWorker rank=0 pid=55723) SystemExit: ",
            "ERROR 05-06 16:54:45 [multiproc_executor.py:123] Worker proc VllmWorker-1 died unexpectedly, "
            "shutting down executor.",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the worker's death (line 6)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 6)


def test_a_traceback_after_a_diagnostic_dump_is_still_a_failure(tmp_path: Path) -> None:
    # GIVEN SGLang's own py-spy dump of a scheduler (a diagnostic block: its stack lines follow unprefixed), then the
    # scheduler's unprefixed traceback
    log = _write(
        tmp_path,
        [
            "[2026-01-29 13:12:30 TP0] Load weight begin. avail mem=78.50 GB",
            "[2026-01-29 13:12:37 TP0] Pyspy dump for PID 88693:",
            'Thread 88693 (idle): "MainThread"',
            "    event_loop_normal (sglang/srt/managers/scheduler.py:1023)",
            "Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2600, in run_scheduler_process',
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash: a dump opens no ignored block, so the exception line after it (line 7) is the cause
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 7)
