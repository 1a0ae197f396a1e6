"""SGLang beside its servers: sglang-router's data-parallel launcher and Rust router, and a DeepGEMM JIT session
pasted without its tail (patterns/sglang.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def test_router_launcher_starting_dp_servers_is_the_launch(tmp_path: Path) -> None:
    # GIVEN sglang_router.launch_server's logger (`[Router (Python)] asctime - LEVEL - message - file:line`) starting
    # two DP servers, then the Rust router's first line, and nothing from the servers yet
    lines = [
        "[Router (Python)] 2025-05-17 01:10:45 - INFO - "
        "Launching DP server process 0 on port 31000 - launch_server.py:175",
        "[Router (Python)] 2025-05-17 01:10:45 - INFO - "
        "Launching DP server process 1 on port 31875 - launch_server.py:175",
        "[Router (Rust)] 2025-05-17 01:10:45 - INFO - 🚧 Initializing router on 127.0.0.1:30000",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN an SGLang deployment ended in its launch, the router's initialisation begun its last progress (README: a
    # step begun counts, over every process of the paste; realworld 1035 is labelled so)
    assert (report["system"], report["phase"], report["verdict"]) == ("sglang", "launch", "stalled")
    assert report["root_cause"]["line"] == 3


def test_router_with_every_worker_healthy_says_the_servers_http_is_up(tmp_path: Path) -> None:
    # GIVEN the Rust router's start, then `All workers are healthy` (each server answered /health 200) and its
    # `✅ Serving router on`
    lines = [
        "[Router (Rust)] 2025-04-22 21:50:00 - INFO - 🚧 Initializing router on 0.0.0.0:9001",
        "[Router (Rust)] 2025-04-22 21:56:49 - INFO - All workers are healthy",
        "[Router (Rust)] 2025-04-22 21:56:49 - INFO - ✅ Serving router on 0.0.0.0:9001",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the servers reached their HTTP start (a /health 200 is no ready line: <=0.4.6 answers it during warmup)
    assert (report["system"], report["phase"]) == ("sglang", "http_start")
    assert report["verdict"] != "ready"


def test_deepgemm_session_pasted_without_its_tail_is_compile_during_the_capture(tmp_path: Path) -> None:
    # GIVEN SGLang lines a person picked out without prefixes: the weights, the verify graph's capture, then the lazy
    # DeepGEMM JIT session and one kernel, each message cut after its name
    lines = [
        "Load weight begin. avail mem=77.33 GB",
        "Capture target verify CUDA graph begin...",
        "Entering DeepGEMM JIT Pre-Compile session",
        "Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16>",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the server compiles, the furthest step the capture it compiles in, the kernel line its last progress
    assert (report["phase"], report["furthest_phase"]) == ("compile", "cuda_graph")
    assert report["root_cause"]["line"] == 4
