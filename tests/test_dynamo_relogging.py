"""NVIDIA Dynamo's re-logging of the engines' records (patterns/vllm.toml `vllm.prefix.dynamo`): `{time}Z {LEVEL}
{module}.{function}: {message}` (dynamo runtime/logging.py LogHandler, lib/runtime/src/logging.rs compact format)
hands the engine's own message to the engine's rules; Dynamo's and TGI's Rust targets stay theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "dynamo.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def _dynamo(time: str, level: str, target: str, message: str) -> str:
    """A record as Dynamo's READABLE layer prints it: the level right-aligned in 5, then `target: message`."""
    return f"{time}Z {level:>5} {target}: {message}"


def test_vllm_records_relogged_by_dynamo_are_read_by_vllms_rules(tmp_path: Path) -> None:
    # GIVEN a vLLM 0.8 worker's weight load, then the V0 executor's death report, through Dynamo's handler
    lines = [
        _dynamo("2025-06-12T11:13:50.101", "INFO", "default_loader.load_weights", "Loading weights took 9.81 seconds"),
        _dynamo(
            "2025-06-12T11:13:50.402",
            "INFO",
            "model_runner.load_model",
            "Model loading took 14.99 GiB and 10.2 seconds",
        ),
        _dynamo(
            "2025-06-12T11:14:08.162",
            "ERROR",
            "multiproc_worker_utils.run",
            "Worker VllmWorkerProcess pid 4242 died, exit code: -9",
        ),
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN vLLM's: crashed after its weights loaded, the death report the cause
    assert (code, report["verdict"], report["phase"], report["system"]) == (4, "crashed", "weight_load", "vllm")
    assert report["root_cause"]["line"] == 3
    assert report["root_cause"]["rule"] == "vllm.worker.died"


def test_sglang_records_relogged_by_dynamo_are_read_by_sglangs_rules(tmp_path: Path) -> None:
    # GIVEN SGLang's capture begin and end through Dynamo's handler (microsecond stamps, later releases)
    lines = [
        _dynamo(
            "2025-11-05T01:56:41.101234",
            "INFO",
            "model_runner.init_device_graphs",
            "Capture cuda graph begin. This can take up to several minutes. avail mem=25.00 GB",
        ),
        _dynamo(
            "2025-11-05T01:56:54.281615",
            "INFO",
            "model_runner.init_device_graphs",
            "Capture cuda graph end. Time elapsed: 12.80 s. mem usage=4.69 GB. avail mem=20.31 GB.",
        ),
    ]
    # WHEN analysed THEN SGLang's, in cuda_graph
    _, report = _analyze(tmp_path, lines)
    assert (report["phase"], report["system"]) == ("cuda_graph", "sglang")


def test_a_dynamo_rust_target_is_not_an_engines_record(tmp_path: Path) -> None:
    # GIVEN Dynamo's own Rust line (a `::` target) whose message reads like vLLM's weight-load line
    lines = [_dynamo("2025-06-12T11:13:50.101", "INFO", "dynamo_runtime::worker", "Loading weights took 9.81 seconds")]
    # WHEN analysed THEN no engine's rule reads it
    _, report = _analyze(tmp_path, lines)
    assert report["verdict"] == "unknown"


def test_dynamo_sdk_registering_a_workers_component_is_its_launch(tmp_path: Path) -> None:
    # GIVEN ai-dynamo 0.2's `dynamo serve`: the arbiter starting the service, then the worker registering and
    # creating its component (serve_dynamo.py, `[{service_name}] ` from the runtime's formatter), then a record
    # cut mid-line from the worker's own constructor
    lines = [
        _dynamo(
            "2025-04-24T07:42:05.876",
            "INFO",
            "serving.<lambda>",
            "Starting Dynamo Service PrefillWorker (Press CTRL+C to quit)",
        ),
        _dynamo(
            "2025-04-24T07:42:11.770",
            "INFO",
            "serve_dynamo.worker",
            "[PrefillWorker] Registering component dynamo/PrefillWorker",
        ),
        _dynamo(
            "2025-04-24T07:42:11.771", "INFO", "serve_dynamo.worker", "[PrefillWorker] Created PrefillWorker component"
        ),
        _dynamo("2025-04-24T07:42:11.788", "INFO", "prefill_worker.__init__", "Chunked prefill is not supp"),
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the worker is in launch, the component's creation the last progress
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert report["root_cause"]["text"].endswith("[PrefillWorker] Created PrefillWorker component")


def test_dynamo_frontend_routing_requests_to_a_worker_is_serving(tmp_path: Path) -> None:
    # GIVEN a frontend's KV router picking a worker for each request (its cost formula, then the choice)
    formula = (
        "Formula for worker_id=7042394012839217798 dp_rank=0 with 0 cached blocks: 14.031 = 1.0 * prefill_blocks"
        " + decode_blocks = 1.0 * 7.031 + 7.000"
    )
    chosen = "Selected worker: worker_id=7042394012839217798 dp_rank=0, logit: 14.031, cached blocks: 0, tree size: 0"
    target = "dynamo_llm::kv_router::scheduler"
    lines = [
        _dynamo("2026-02-27T14:47:21.385061", "INFO", target, chosen),
        _dynamo("2026-02-27T14:47:21.591773", "INFO", target, formula),
        _dynamo("2026-02-27T14:47:21.591808", "INFO", target, chosen),
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the deployment serves requests
    assert (report["phase"], report["verdict"]) == ("serving", "ready")


def test_dynamo_frontend_cost_formula_alone_is_no_request_routed(tmp_path: Path) -> None:
    # GIVEN only the router's cost formula for a worker (logged for each candidate, before any choice)
    formula = (
        "Formula for worker_id=1 dp_rank=0 with 0 cached blocks: 2.438 = 1.0 * prefill_blocks + decode_blocks"
        " = 1.0 * 1.438 + 1.000"
    )
    _, report = _analyze(
        tmp_path, [_dynamo("2026-02-27T14:47:21.591773", "INFO", "dynamo_llm::kv_router::scheduler", formula)]
    )
    # THEN nothing is placed
    assert (report["phase"], report["verdict"]) == (None, "unknown")
