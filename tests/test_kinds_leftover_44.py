"""A wrapper's readiness timeout left unread, written from the wrapper's source: lemonade's server starts vLLM as
its child `vllm-server`, polls its health endpoint and gives up when its readiness window ends first
(lemonade-sdk/lemonade src/cpp/server/wrapped_server.cpp, WrappedServer::wait_for_ready: `server_name_ + " failed
to start within timeout"`, earlier builds `… within 5 minute timeout`), its logger writing `<stamp> [Level]
(Component) ` before each message; collected by journald."""

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
