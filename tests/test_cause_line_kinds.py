"""Which line of a failure states it (fixtures/realworld/README.md, `root_cause_line` and the cut-traceback rule), for
kinds of input each written from the format its writer prints: Ray's `RayTaskError(<Cls>)` relaying a remote
exception, a traceback pasted with its indentation lost and its lines padded with spaces, a multi-line logging record
re-logged by an outer logger, vLLM's utility-call failure and glibc's `FATAL: exception not rethrown`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

# --- Ray's RayTaskError(<Cls>) relaying a remote task's exception -----------------------------------------------------

# ray/exceptions.py RayTaskError: `as_instanceof_cause` names the class `RayTaskError({cause_cls.__name__})`; its
# `__str__` is the remote traceback with the task's title `ray::Class.method() (pid=…, ip=…)` in place of its
# `Traceback` line, Ray's own frames left out, ending in the remote's exception line
_RAY_GET = [
    "Traceback (most recent call last):",
    '  File "/workspace/verl/trainer/main_ppo.py", line 64, in main',
    "    run_ppo(config)",
    '  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 2771, in get',
    "    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)",
    '  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 919, in get_objects',
    "    raise value.as_instanceof_cause()",
    "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=59411, ip=10.0.0.3, "
    "actor_id=13ac9a317247fe69717aac0d02000000, repr=<main_ppo.TaskRunner object at 0x7f4e6e394ee0>)",
    '  File "/workspace/verl/trainer/ppo/ray_trainer.py", line 911, in fit',
    "    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)",
    '  File "/workspace/verl/single_controller/ray/base.py", line 49, in func',
    "    output = ray.get(output)",
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict",
    "\tactor_id: 52a48f500935ea1b027d6e7c02000000",
]


def test_a_relayed_exception_is_stated_by_the_remote_exception_line(tmp_path: Path) -> None:
    # GIVEN a driver's `ray.get` that raised a RayTaskError(ActorDiedError), the remote's exception line in its message
    report = judge_text(tmp_path, "\n".join(_RAY_GET) + "\n")
    # THEN the wrapper says where (the task), the relayed line of the class it names says what failed: the cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."


def test_a_relay_cut_before_the_remote_exception_line_keeps_the_wrapper(tmp_path: Path) -> None:
    # GIVEN the same paste cut in the remote's frames, before its exception line
    report = judge_text(tmp_path, "\n".join(_RAY_GET[:12]) + "\n")
    # THEN the wrapper's line, the only one that names the failure, stays the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).startswith("ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run()")


# --- a traceback pasted with its indentation lost and its lines padded with spaces -----------------------------------

_FLAT = [
    "Traceback (most recent call last):",
    'File "/workspace/verl/trainer/main_ppo.py", line 31, in main',
    "run_ppo(config)",
    'File "/workspace/verl/trainer/main_ppo.py", line 54, in run_ppo',
    "ray.get(runner.run.remote(config))",
    'File "/usr/local/lib/python3.10/dist-packages/ray/_private/client_mode_hook.py", line 103, in wrapper',
    "return func(*args, **kwargs)",
    'File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 930, in get_objects',
    "raise value.as_instanceof_cause()",
    "r",
]


@pytest.mark.parametrize("padding", ["", " ", "   "])
def test_a_flat_traceback_cut_after_its_raise_statement_is_caused_there_whatever_the_padding(
    tmp_path: Path, padding: str
) -> None:
    # GIVEN a traceback whose indentation a viewer dropped, cut after its innermost frame's `raise` statement, each
    # line padded with trailing spaces as a terminal's copy may pad them (or not)
    text = "".join(f"{line}{padding}\n" for line in _FLAT)
    # WHEN it is judged
    report = judge_text(tmp_path, text)
    # THEN the padding changes nothing: the statement that raised, in the innermost frame, is the cause (README, cut
    # traceback: a code line that raises says what was raised)
    assert report["verdict"] == "crashed"
    assert root_text(report).strip() == "raise value.as_instanceof_cause()"
    assert report["root_cause"]["line"] == 9


# --- a multi-line logging record re-logged line by line by an outer logger -------------------------------------------

# Python logging writes a record's prefix once, before its message's first line: SGLang's `[2024-11-14 22:16:37 TP0]
# Traceback …` carries it, the traceback's further lines do not; an outer logger that re-logs the process's output
# line by line (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`) puts its own prefix on every line
_OUTER = "2024-11-14 22:16:37,096 - sglang - INFO - "
_WRAPPED = [
    f"{_OUTER}[2024-11-14 22:16:37 TP0] Traceback (most recent call last):",
    f'{_OUTER}  File "/root/sglang/python/sglang/srt/managers/scheduler.py", line 1212, in run_scheduler_process',
    f"{_OUTER}    scheduler.event_loop_normal()",
    f'{_OUTER}  File "/usr/lib/python3/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
    f"{_OUTER}    return func(*args, **kwargs)",
    f'{_OUTER}  File "/root/sglang/python/sglang/srt/managers/scheduler.py", line 355, in event_loop_normal',
    f"{_OUTER}    self.process_batch_result(batch, result)",
]


def test_a_re_logged_traceback_goes_on_under_the_outer_prefix_alone(tmp_path: Path) -> None:
    # GIVEN a scheduler's traceback re-logged by an outer logger, cut before its exception line
    report = judge_text(tmp_path, "\n".join(_WRAPPED) + "\n")
    # THEN the frames under the outer prefix alone are the record's own: the innermost whole frame is the cause (never
    # the `Traceback` header), on the rank the record's first line named
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith('scheduler.py", line 355, in event_loop_normal')
    assert report["root_cause"]["rank"] == "TP0"


# --- vLLM's failed utility call on the engine core --------------------------------------------------------------------

# vllm/v1/engine/core.py `_handle_client_request` (0.8) / `_invoke_utility_method` (0.11+):
# `logger.exception("Invocation of %s method failed", method_name)`, each line of the record under vLLM's prefix
_CORE = "(EngineCore_DP0 pid=1511501) ERROR 12-15 18:57:10 [core.py:918] "
_UTILITY = [
    "(APIServer pid=1510937) INFO 12-15 18:57:10 [api_server.py:1725] Supported tasks: ['generate']",
    f"{_CORE}Invocation of add_lora method failed",
    f"{_CORE}Traceback (most recent call last):",
    f'{_CORE}  File "/opt/venv/lib/python3.12/site-packages/vllm/lora/worker_manager.py", line 102, in _load_adapter',
    f"{_CORE}",
]


def test_a_failed_utility_call_is_stated_by_vllm_s_header(tmp_path: Path) -> None:
    # GIVEN the engine core's logged failure of a utility call, its traceback cut after the first frame
    report = judge_text(tmp_path, "\n".join(_UTILITY) + "\n")
    # THEN vLLM's own header says which call failed: the cause over the bare `Traceback` line and the frame
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("Invocation of add_lora method failed")


# --- glibc's fatal report of a forced unwind a C++ catch swallowed ----------------------------------------------------


def test_glibc_s_unwind_report_states_the_abort_before_the_shell_s(tmp_path: Path) -> None:
    # GIVEN a thread pool task's exception, glibc's `__libc_fatal` report (nptl/unwind.c) and the shell's abort line
    text = (
        "RPC initialized.\n"
        "[E926 11:11:00.604243366 thread_pool.cpp:138] Exception in thread pool task: unknown\n"
        "FATAL: exception not rethrown\n"
        "Aborted (core dumped)\n"
    )
    report = judge_text(tmp_path, text)
    # THEN the process aborted, and its own report, the first terminal event, is the cause
    assert report["verdict"] == "aborted"
    assert root_text(report) == "FATAL: exception not rethrown"
