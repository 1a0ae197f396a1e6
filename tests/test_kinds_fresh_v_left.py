"""Lines the fresh-v batch still left unread after stop 42, each written from the format its program prints in the
released source the pack's rule cites: sglang-router 0.2.x's Rust tracing layout and AReaL's launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

# sglang-router 0.2.x's startup (src/server.rs, src/core/worker_manager.rs, src/core/job_queue.rs) through
# tracing-subscriber's full format: `{time} {level:>5} {target}: {file}:{line}: {message}`.
ROUTER_LINES = [
    (
        "INFO",
        "sglang_router_rs::server",
        "src/server.rs:830",
        "Starting router on 0.0.0.0:30000 | mode: Regular { worker_urls: [] } | policy: CacheAware",
    ),
    ("INFO", "sglang_router_rs::server", "src/server.rs:928", "Initializing data connector: Memory"),
    (
        "DEBUG",
        "sglang_router_rs::core::job_queue",
        "src/core/job_queue.rs:142",
        "Initializing worker job queue: capacity=1000, workers=10",
    ),
    (
        "INFO",
        "sglang_router_rs::server",
        "src/server.rs:1031",
        "Initializing workers for routing mode: Regular { worker_urls: [] }",
    ),
    ("DEBUG", "sglang_router_rs::core::job_queue", "src/core/job_queue.rs:228", "Worker job queue worker 0 started"),
    (
        "DEBUG",
        "sglang_router_rs::core::job_queue",
        "src/core/job_queue.rs:249",
        "Worker 0 processing job: type=InitializeWorkers",
    ),
]


def _tracing(stamp: str, spans: str = "") -> str:
    return "".join(
        f"{stamp} {level:>5} {spans}{target}: {where}: {message}\n" for level, target, where, message in ROUTER_LINES
    )


@pytest.mark.parametrize(
    ("stamp", "spans"),
    [
        ("2025-11-04 10:05:37", ""),  # sglang-router's ChronoUtc("%Y-%m-%d %H:%M:%S") timer
        ("2025-11-04T10:05:37.123456Z", ""),  # tracing's default RFC 3339 timer
        ("2025-11-04T10:05:37.123456Z", "startup{port=30000}: "),  # the same events inside a span
    ],
)
def test_sglang_router_rust_startup_is_http_start_in_any_timer_or_span(tmp_path: Path, stamp: str, spans: str) -> None:
    # GIVEN sglang-router's own start, through tracing's full layout with one timer or another, cut after the job
    # queue took its first job
    text = _tracing(stamp, spans)
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the router (SGLang's HTTP front) was coming up, no failure; its last step is the last progress line
    assert (report["system"], report["phase"]) == ("sglang", "http_start")
    assert report["verdict"] in {"stalled", "progressing"}
    assert root_text(report).endswith("Worker 0 processing job: type=InitializeWorkers")


def test_router_job_queue_worker_starting_is_no_step_of_the_start(tmp_path: Path) -> None:
    # GIVEN only the job queue's own workers starting (no router line of the start)
    text = "".join(
        f"2025-11-04 10:05:37 DEBUG sglang_router_rs::core::job_queue: src/core/job_queue.rs:228: "
        f"Worker job queue worker {i} started\n"
        for i in range(3)
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN nothing places a server
    assert report["phase"] is None


def test_python_logger_in_the_same_shape_is_no_rust_line(tmp_path: Path) -> None:
    # GIVEN a Python logger `%(asctime)s %(levelname)s %(name)s: %(message)s` printing the router's words
    text = "2025-11-04 10:05:37 INFO router: Starting router on 0.0.0.0:30000 | mode: Regular | policy: x\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN no Rust router rule reads it (its name is no module path and no `file.rs:N:` follows)
    assert report["phase"] is None


def test_areal_local_launcher_starting_its_processes_is_launch(tmp_path: Path) -> None:
    # GIVEN AReaL's launcher (`(AReaL) %(asctime)s.%(msecs)03d %(name)s %(levelname)s: `, datefmt `%Y%m%d-%H:%M:%S`,
    # coloured by colorlog on a terminal): its platform lines, then `Starting local process with command: …`, cut
    text = (
        "$ python3 -m areal.launcher.local examples/math/gsm8k_rl.py --config examples/math/gsm8k_grpo.yaml\n"
        "\x1b[1;38;2;180;140;80m(AReaL)\x1b[0m \x1b[32m20251231-02:44:48.700 PlatformInit INFO: "
        "Detected CUDA device: NVIDIA A800-SXM4-80GB\x1b[0m\n"
        "(AReaL) 20251231-02:44:48.716 LocalLauncher INFO: LocalLauncher: experiment_name=gsm8k-grpo, "
        "trial_name=trial0\n"
        "(AReaL) 20251231-02:44:48.724 LocalLauncher INFO: Starting local process with command: "
        "TOKENIZERS_PARALLELISM=true stdbuf -oL python3 -m areal.launcher.sglang_server 2>&1 | tee -a /tmp/l.log\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job was launching its processes, no failure; that line is the last progress
    assert report["phase"] == "launch"
    assert report["verdict"] in {"stalled", "progressing"}
    assert "Starting local process with command: TOKENIZERS_PARALLELISM=true" in root_text(report)


@pytest.mark.parametrize("before", ["", "\tip: 10.1.59.27 "])
def test_ray_actor_death_cause_is_a_crash_even_joined_to_the_field_before_it(tmp_path: Path, before: str) -> None:
    # GIVEN the death cause Ray prints after an ActorDiedError's fields (alone, or joined by a markdown paste to the
    # `ip:` field before it), the worker killed
    text = (
        f"{before}The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
        "detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root "
        "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job crashed, that line its cause
    assert report["verdict"] == "crashed"
    assert "The actor is dead because its worker process has died." in root_text(report)


def test_ray_actor_death_cause_quoted_in_code_is_no_crash(tmp_path: Path) -> None:
    # GIVEN the sentence as a code line of a frame (indented four) that a Python warning quotes
    text = (
        "/opt/app/monitor.py:12: UserWarning: actor state unknown\n"
        '    msg = "The actor is dead because its worker process has died."\n'
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it is no failure
    assert report["verdict"] != "crashed"
