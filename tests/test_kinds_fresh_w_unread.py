"""Lines the fresh-w batch left unread, each written from the format its system prints: TGI's router panicking on a
tokio worker while it batches requests, Dynamo 0.1's HTTP frontend and its model watcher, TensorRT-LLM's LLM API model
loader building an engine, and torch's watchdog timeout line cut by the paste inside its head."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

_TGI = "2024-03-18T18:17:{second:02d}.703406Z {level} text_generation_launcher: {message}\n"


@pytest.mark.parametrize(
    "panic",
    [
        # Rust 1.73+: the location after `panicked at`, the message on the next line
        "thread 'tokio-runtime-worker' panicked at router/src/infer.rs:598:14:\nID not found in entries.",
        # before 1.73: the message quoted, then the location
        "thread 'tokio-runtime-worker' panicked at 'ID not found in entries.', router/src/infer.rs:598:14",
        "thread 'tokio-runtime-worker' panicked at backends/v3/src/backend.rs:430:14:\nID not found in entries.",
    ],
)
def test_a_router_panic_on_a_tokio_worker_is_a_crash_while_serving(tmp_path: Path, panic: str) -> None:
    # GIVEN TGI up and connected, then the router's batching task panicking and the launcher's consequences
    text = (
        _TGI.format(second=10, level=" INFO", message="Starting Webserver")
        + panic
        + "\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
        + _TGI.format(second=46, level="ERROR", message="Webserver Crashed")
        + _TGI.format(second=46, level=" INFO", message="Shutting down shards")
        + "Error: WebserverFailed\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN it crashed serving, and the panic, not the launcher's report of it, is the cause
    assert (report["phase"], report["verdict"]) == ("serving", "crashed")
    assert root_text(report).startswith("thread 'tokio-runtime-worker' panicked at ")


def test_a_router_panic_on_main_is_not_a_serving_crash(tmp_path: Path) -> None:
    # GIVEN the same location on `main` (Infer::new's chat template at start-up runs there, not on a worker)
    text = (
        _TGI.format(second=10, level=" INFO", message="Starting Webserver")
        + "thread 'main' panicked at router/src/infer.rs:333:14:\n"
        + _TGI.format(second=11, level="ERROR", message="Webserver Crashed")
    )
    # WHEN judged THEN nothing says it served
    report = judge_text(tmp_path, text)
    assert report["phase"] != "serving"


_DYNAMO = "2025-03-28T09:04:24.{micro:06d}Z  INFO {target}: {message}\n"


def test_dynamo_frontend_with_its_http_service_and_a_model_added_is_ready(tmp_path: Path) -> None:
    # GIVEN the frontend's transport, its HTTP service starting and its model watcher adding chat models
    text = (
        _DYNAMO.format(
            micro=129156,
            target="dynamo_runtime::pipeline::network::tcp::server",
            message="tcp transport service on 10.60.0.163:50325",
        )
        + _DYNAMO.format(
            micro=129960,
            target="dynamo_llm::http::service::service_v2",
            message='Starting HTTP service on: 0.0.0.0:8000 address="0.0.0.0:8000"',
        )
        + _DYNAMO.format(
            micro=130468,
            target="dynamo_llm::http::service::discovery",
            message="added Chat model: tokyotech-llm/Llama-3.1-Swallow-8B-Instruct-v0.3",
        )
    )
    # WHEN judged THEN the frontend serves the model
    report = judge_text(tmp_path, text)
    assert (report["phase"], report["verdict"]) == ("ready", "ready")


def test_dynamo_frontend_starting_its_http_service_alone_is_not_ready(tmp_path: Path) -> None:
    # GIVEN only the HTTP service's start line (the bind follows it)
    text = _DYNAMO.format(
        micro=129960,
        target="dynamo_llm::http::service::service_v2",
        message='Starting HTTP service on: 0.0.0.0:8000 address="0.0.0.0:8000"',
    )
    # WHEN judged THEN it is starting its HTTP server, not ready
    report = judge_text(tmp_path, text)
    assert report["phase"] == "http_start"
    assert report["verdict"] != "ready"


def test_trtllm_model_loader_building_an_engine_is_compile(tmp_path: Path) -> None:
    # GIVEN the LLM API's build pipeline from a HF model: the load, the engine build, its end
    text = (
        "[TensorRT-LLM] TensorRT-LLM version: 0.18.0\n"
        "Loading Model: [1/2]\tLoading HF model to memory\n"
        "198it [00:01, 163.51it/s]\n"
        "Time: 1.475s\n"
        "Loading Model: [2/2]\tBuilding TRT-LLM engine\n"
        "Time: 37.698s\n"
        "Loading model done.\n"
        "Total latency: 39.172s\n"
    )
    # WHEN judged THEN the furthest step is the engine's build, and its end is the last progress
    report = judge_text(tmp_path, text)
    assert report["system"] == "trtllm"
    assert report["phase"] == "compile"
    steps = [(p["phase"], p["start_line"]) for p in report["phases"] if p["phase"] in ("weight_load", "compile")]
    assert steps == [("weight_load", 2), ("compile", 5)]
    assert [p["ended"] for p in report["phases"] if p["phase"] == "compile"] == [True]


def test_trtllm_model_loader_cut_during_the_load_is_weight_load(tmp_path: Path) -> None:
    # GIVEN the pipeline's first step only
    text = "[TensorRT-LLM] TensorRT-LLM version: 0.18.0\nLoading Model: [1/2]\tLoading HF model to memory\n"
    # WHEN judged THEN it is loading weights, not compiling
    assert judge_text(tmp_path, text)["phase"] == "weight_load"


@pytest.mark.parametrize("cut", ["Watchdog caught collective", "Watchdog caught collective operation"])
def test_a_watchdog_timeout_line_cut_inside_its_head_is_a_timeout(tmp_path: Path, cut: str) -> None:
    # GIVEN an excerpt that ends inside rank 6's watchdog timeout line (torch 2.2's c10 prefix without a time)
    text = f"[rank6]:[E ProcessGroupNCCL.cpp:563] [Rank 6] {cut}\n"
    # WHEN judged THEN a collective timed out, and that line is the cause
    report = judge_text(tmp_path, text)
    assert report["verdict"] == "timeout"
    assert root_text(report).endswith(cut)
