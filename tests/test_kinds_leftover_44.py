"""Wrappers' lines around vLLM left unread, each written from the wrapper's source. Lemonade's server starts vLLM as
its child `vllm-server`, polls its health endpoint and gives up when its readiness window ends first
(lemonade-sdk/lemonade src/cpp/server/wrapped_server.cpp, WrappedServer::wait_for_ready: `server_name_ + " failed
to start within timeout"`, earlier builds `… within 5 minute timeout`), its logger writing `<stamp> [Level]
(Component) ` before each message; collected by journald. The vllm-dgx-spark cluster script (start_cluster.sh)
logs `Starting DGX Spark vLLM Head Node Setup` after its pre-flight checks, its `log` writing `[%Y-%m-%d %H:%M:%S] `
before the text, then its configuration, then starts Ray and vLLM on the head node."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

_JOURNAL = "Jul 25 14:36:{second:02d} zentraldenker lemond[{pid}]: {message}\n"
_LEMOND = "2026-07-25 14:36:{second:02d}.{ms:03d} [{level}] ({component}) {message}"


def _lemond(second: int, level: str, component: str, message: str, pid: int = 594237) -> str:
    line = _LEMOND.format(second=second, ms=362, level=level, component=component, message=message)
    return _JOURNAL.format(second=second, pid=pid, message=line)


@pytest.mark.parametrize("timeout", ["timeout", "5 minute timeout"])
def test_the_wrappers_readiness_timeout_is_vllms_launch_timing_out(tmp_path: Path, timeout: str) -> None:
    # GIVEN lemond loading a model through vLLM: the child started, the wait for its health endpoint, then the
    # wrapper giving up on it, stopping the child and the router's report of the failed load
    text = (
        _lemond(8, "Info", "vLLM", "Loading model: Qwen3.5-0.8B-FP16-vLLM")
        + _lemond(8, "Info", "vLLM", "Starting vllm-server on port 8001...")
        + _lemond(8, "Info", "ProcessManager", "Process started successfully, PID: 596451")
        + _JOURNAL.format(second=8, pid=594237, message="Waiting for vllm-server to be ready (timeout: 0s)...")
        + _lemond(8, "Error", "WrappedServer", f"vllm-server failed to start within {timeout}")
        + _JOURNAL.format(second=8, pid=596451, message="Shutdown signal received, exiting...")
        + _lemond(13, "Warn", "ProcessManager", "Process did not respond to SIGTERM, using SIGKILL")
        + _lemond(15, "Error", "Router", f"Backend load failed: vllm-server failed to start within {timeout}")
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN vLLM's launch timed out, caused by the wrapper's own line (not the router's report of it)
    assert (report["phase"], report["verdict"]) == ("launch", "timeout")
    assert root_text(report).endswith(f"(WrappedServer) vllm-server failed to start within {timeout}")


def test_another_wrapped_servers_timeout_is_no_vllm_line(tmp_path: Path) -> None:
    # GIVEN the same wrapper giving up on llama.cpp's server instead
    text = _lemond(8, "Error", "WrappedServer", "llama-server failed to start within timeout")
    # WHEN judged THEN no vLLM rule reads it: nothing says a vLLM phase
    report = judge_text(tmp_path, text)
    assert report["phase"] is None


_SCRIPT = "[2026-01-26 15:58:16] {message}\n"


def test_the_cluster_scripts_head_setup_is_vllms_launch(tmp_path: Path) -> None:
    # GIVEN the script's pre-flight summary, its head setup line and its configuration, the paste cut in a stamp
    text = (
        "✅ All pre-flight checks passed\n"
        + _SCRIPT.format(message="Starting DGX Spark vLLM Head Node Setup")
        + _SCRIPT.format(message="Configuration:")
        + _SCRIPT.format(message="  Image:           nvcr.io/nvidia/vllm:25.12.post1-py3")
        + _SCRIPT.format(message="  Tensor Parallel: 2")
        + _SCRIPT.format(message="  NCCL IB HCAs:    mlx5_0,mlx5_2")
        + "[2026-0\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the launch began and the log ends in it with no error: stalled, the setup line the last progress
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert root_text(report).endswith("Starting DGX Spark vLLM Head Node Setup")


def test_the_cluster_scripts_configuration_alone_says_no_phase(tmp_path: Path) -> None:
    # GIVEN only the script's configuration lines WHEN judged THEN nothing says a phase
    report = judge_text(
        tmp_path, _SCRIPT.format(message="Configuration:") + _SCRIPT.format(message="  Tensor Parallel: 2")
    )
    assert report["phase"] is None
