"""Kinds of lines the engines and launchers print that went unread (kinds-2): SGLang diffusion's year-less
`[MM-DD HH:MM:SS] ` stamp, torch elastic's JSON event records of a worker's end, pydantic's ValidationError whose
traceback the excerpt cut, Ray Data's exception report and Ray 2.9 Serve's line format. Each written from the format
its source prints, judged end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


# --- SGLang diffusion (sglang 0.5.6 multimodal_gen/runtime/utils/logging_utils.py configure_logger) -------------


def test_sglang_diffusions_month_day_stamp_is_sglangs_prefix(tmp_path: Path) -> None:
    # GIVEN the diffusion launcher's report of a dead scheduler (launch_server.py: `Rank {i} scheduler is dead. …`,
    # then `Exit code: {exitcode}`), under `[%(asctime)s] ` with datefmt `%m-%d %H:%M:%S`
    lines = [
        "[03-02 09:15:41] Rank 1 scheduler is dead. Please check if there are relevant logs.",
        "[03-02 09:15:43] Exit code: -9",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN SGLang's rule reads it: the dead scheduler is the cause, its time the stamp's
    assert report["system"] == "sglang"
    assert report["root_cause"]["line"] == 1
    assert report["root_cause"]["rule"].startswith("sglang.")
    assert report["root_cause"]["time"].endswith("03-02 09:15:41")


# --- torch elastic events (agent/server/api.py `_construct_event`, events/api.py `Event.serialize`) -------------


def _event(state: str, rank: int, raw_error: str | None = None) -> str:
    metadata = {
        "run_id": "none",
        "global_rank": rank,
        "group_rank": 0,
        "worker_id": str(5000 + rank),
        "role": "default",
        "hostname": "node-1",
        "state": state,
        "total_run_time": 41,
        "rdzv_backend": "static",
        "raw_error": raw_error,
        "metadata": json.dumps({"group_world_size": 1, "entry_point": "python", "local_rank": [rank]}),
        "agent_restarts": 0,
    }
    return json.dumps(
        {"name": f"torchelastic.worker.status.{state}", "source": "WORKER", "timestamp": 0, "metadata": metadata}
    )


def test_every_workers_succeeded_event_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN the agent's SUCCEEDED event record of each of two workers
    # WHEN analysed
    code, report = _analyze(tmp_path, [_event("SUCCEEDED", 0), _event("SUCCEEDED", 1)])
    # THEN finished: each worker ran its script to its end (its steps reached)
    assert (code, report["verdict"], report["system"]) == (0, "finished", "torch")
    assert report["furthest_phase"] == "serving"


def test_a_workers_failed_event_is_its_crash(tmp_path: Path) -> None:
    # GIVEN rank 0's SUCCEEDED record and rank 1's FAILED one, its error file's JSON in raw_error
    lines = [_event("SUCCEEDED", 0), _event("FAILED", 1, json.dumps({"message": "RuntimeError: boom"}))]
    # WHEN analysed THEN crashed, rank 1's record the cause
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"]) == (4, "crashed")
    assert (report["root_cause"]["line"], report["root_cause"]["rank"]) == (2, "rank 1")


# --- pydantic's ValidationError (pydantic-core validation_exception.rs display, errors/types.rs messages) --------


def test_a_lone_pydantic_validation_error_is_a_crash_its_validators_words_the_cause(tmp_path: Path) -> None:
    # GIVEN a ValidationError's text, its traceback cut above it: the count and model, the location, the
    # validator's ValueError as `  Value error, …` and pydantic's link
    lines = [
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "max_model_len",
        "  Value error, User-specified max_model_len (65536) is greater than the derived max_model_len (32768). "
        "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
        "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN crashed, at launch, the validator's words the cause
    assert (code, report["verdict"], report["phase"]) == (4, "crashed", "launch")
    assert report["root_cause"]["line"] == 3


def test_a_pydantic_error_inside_a_traceback_is_its_exception_line(tmp_path: Path) -> None:
    # GIVEN a whole traceback ending in a ValidationError whose detail is not a validator's
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/serve.py", line 12, in <module>',
        "    config = Settings()",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
        "model_path",
        "  Field required [type=missing, input_value={}, input_type=dict]",
    ]
    # WHEN analysed THEN crashed, the exception line the cause
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"]) == (4, "crashed")
    assert report["root_cause"]["line"] == 4


# --- Ray (python/ray/data/exceptions.py handle_trace; ray 2.9.3 serve/_private/logging_utils.py ServeFormatter) ---


def test_ray_datas_exception_report_is_the_cause_of_a_traceback_cut_in_its_frames(tmp_path: Path) -> None:
    # GIVEN Ray Data's two ERROR lines in the driver format, the tab after the time a space as pasted, then the
    # traceback cut inside its frames
    lines = [
        "2025-05-02 08:10:11,002 ERROR exceptions.py:73 -- Exception occurred in Ray Data or Ray Core internal code. "
        "If you continue to see this error, please open an issue on the Ray project GitHub page with the full stack "
        "trace below: https://github.com/ray-project/ray/issues/new/choose",
        "2025-05-02 08:10:11,002 ERROR exceptions.py:81 -- Full stack trace:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/site-packages/ray/data/exceptions.py", line 49, in handle_trace',
        "    return fn(*args, **kwargs)",
    ]
    # WHEN analysed THEN crashed, Ray's, the report of the exception the cause
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["system"]) == (4, "crashed", "ray")
    assert report["root_cause"]["line"] == 1


def test_a_ray_29_serve_controller_line_is_read_and_its_replicas_exception_is_the_crash(tmp_path: Path) -> None:
    # GIVEN the 2.9 controller's `LEVEL time controller id file:line - ` lines: a replica starting, then its
    # exception with the traceback's exception line
    lines = [
        "INFO 2024-01-10 10:01:00,101 controller 4242 deployment_state.py:1548 - Adding 1 replica to deployment "
        "LLMServer in application 'default'.",
        "ERROR 2024-01-10 10:01:30,220 controller 4242 deployment_state.py:660 - Exception in replica "
        "'default#LLMServer#q3k2a9', the replica will be stopped.",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/site-packages/ray/serve/_private/deployment_state.py", line 650, in check_ready',
        "    _, self._version = ray.get(self._ready_obj_ref)",
        "ray.exceptions.RayTaskError(ValueError): ray::ServeReplica:default:LLMServer.initialize_and_get_metadata()",
    ]
    # WHEN analysed THEN crashed, Ray's, the replica's exception (its traceback's end) the cause
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["system"]) == (4, "crashed", "ray")
    assert report["root_cause"]["line"] == 6
