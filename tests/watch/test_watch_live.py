"""`logphase watch` against a real server process on 127.0.0.1 (tests/watch/fake_server.py): ready,
stalled mid-capture, crashed, --timeout, --record, and a log piped in on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import Result

from logphase.phases import Phase
from tests.conftest import REPO, run_cli

# Each test runs a server process and waits on its timing: out of `make check`
pytestmark = pytest.mark.slow

SERVER = Path(__file__).with_name("fake_server.py")
# A bound that only a hung watch reaches; the scenarios themselves take 1-3 s.
HANG_GUARD_S = 60


@contextmanager
def server(tmp_path: Path, scenario: str, step: float = 0.1) -> Iterator[tuple[subprocess.Popen[bytes], Path, str]]:
    log, port_file = tmp_path / "server.log", tmp_path / "port"
    proc = subprocess.Popen([sys.executable, str(SERVER), str(log), str(port_file), scenario, "--step", str(step)])
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while not port_file.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the fake server did not start"
            time.sleep(0.01)
        yield proc, log, f"http://127.0.0.1:{port_file.read_text()}"
    finally:
        proc.kill()
        proc.wait()


def watch_server(tmp_path: Path, log: Path, url: str, *options: str) -> Result:
    """`logphase watch LOG --url URL` polling every 0.1 s, its run store in tmp_path."""
    return run_cli("watch", str(log), "--url", url, "--interval", "0.1", *options, "--db", str(tmp_path / "r.db"))


def _lines(stdout: str) -> list[str]:
    """Transition lines (stdout) without their `[+  1.2s] ` clock."""
    return [line.split("] ", 1)[1] for line in stdout.splitlines() if line.startswith("[+")]


def test_ready_server_goes_refused_503_200_and_exits_0(tmp_path: Path) -> None:
    # GIVEN a server that starts once the watch has seen its port refused (so all three states are seen)
    gate, log, port_file = tmp_path / "gate", tmp_path / "server.log", tmp_path / "port"
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOGPHASE_DB": str(tmp_path / "r.db")}
    server_proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(log), str(port_file), "ready", "--step", "0.05", "--gate", str(gate)]
    )
    try:
        while not port_file.exists():
            assert server_proc.poll() is None, "the fake server did not start"
            time.sleep(0.01)
        url = f"http://127.0.0.1:{port_file.read_text()}"
        command = [
            sys.executable,
            "-m",
            "logphase",
            "watch",
            str(log),
            "--url",
            url,
            "--interval",
            "0.1",
            "--stall-after",
            "20",
        ]
        watcher = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        assert watcher.stdout is not None
        said = [watcher.stdout.readline()]
        while said[-1] and "health: connection refused" not in said[-1]:
            said.append(watcher.stdout.readline())  # wait for the refused probe, then let the server start
        gate.touch()
        rest, _ = watcher.communicate(timeout=HANG_GUARD_S)
    finally:
        server_proc.kill()
        server_proc.wait()
    said = _lines("".join(said) + rest)
    # THEN it goes refused → 503 → 200, and exits 0 at ready
    assert watcher.returncode == 0, said
    health = [line for line in said if line.startswith("health: ")]
    assert health == [
        "health: connection refused (not listening yet)",
        "health: 503 starting or warming up",
        "health: 200 ready",
    ]
    phases = [line.split(" ")[1] for line in said if line.startswith("phase: ")]
    # phases that came within one poll collapse into the last of them; the order is startup order
    assert [Phase(p).order for p in phases] == sorted(Phase(p).order for p in phases)
    assert {"cuda_graph", "warmup"} <= set(phases)
    assert said[-1].startswith("ready: ")


def test_server_that_stops_writing_mid_capture_is_stalled_exit_4_with_stacks(tmp_path: Path) -> None:
    with server(tmp_path, "stall", step=0.05) as (proc, log, url):
        result = watch_server(tmp_path, log, url, "--pid", str(proc.pid), "--stall-after", "3")
    said = _lines(result.stdout)
    assert result.exit_code == 4, result.stderr
    assert said[0] == "health: connection refused (not listening yet)"
    assert said[-1].startswith("stalled: no progress for ") and " in cuda_graph (budget 3s, --stall-after)" in said[-1]
    # the stall point from the stacks of the server's processes (py-spy), or why they were not taken
    assert "Stall point (stacks of 1 processes): " in result.stderr or "logphase: stacks not taken: " in result.stderr


def test_server_that_crashes_is_crashed_exit_4_naming_the_rank(tmp_path: Path) -> None:
    with server(tmp_path, "crash") as (proc, log, url):
        result = watch_server(tmp_path, log, url, "--pid", str(proc.pid), "--stall-after", "20")
    said = _lines(result.stdout)
    assert result.exit_code == 4, result.stderr
    assert said[-1].startswith("crashed: TP1 crashed during cuda_graph"), said


def test_timeout_first_exits_5(tmp_path: Path) -> None:
    with server(tmp_path, "stall") as (_, log, url):
        result = watch_server(tmp_path, log, url, "--stall-after", "60", "--timeout", "1.5")
    assert result.exit_code == 5, result.stderr
    assert _lines(result.stdout)[-1] == "still starting after 2s (in cuda_graph): --timeout"


def test_record_stores_the_finished_run(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with server(tmp_path, "ready", step=0.02) as (_, log, url):
        result = run_cli(
            "watch", str(log), "--url", url, "--interval", "0.1", "--stall-after", "20", "--record", "--db", str(db)
        )
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "recorded run 1: ready, fake-7b TP2"
    runs = json.loads(run_cli("runs", "list", "--db", str(db), "--format", "json").stdout)["runs"]
    assert [(r["outcome"], r["fingerprint"]["nccl_version"], r["paths"]) for r in runs] == [
        ("ready", "2.21.5", [str(log.resolve())])
    ]


def test_stdin_dash_follows_a_pipe_until_ready(tmp_path: Path) -> None:
    # GIVEN the server's log piped in (as `kubectl logs -f POD | logphase watch -`)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOGPHASE_DB": str(tmp_path / "r.db")}
    source = subprocess.Popen(
        [sys.executable, str(SERVER), "-", str(tmp_path / "port"), "ready", "--step", "0.02", "--stdout"],
        stdout=subprocess.PIPE,
    )
    try:
        watcher = subprocess.run(
            [sys.executable, "-m", "logphase", "watch", "-", "--stall-after", "20", "--interval", "0.1"],
            stdin=source.stdout,
            capture_output=True,
            env=env,
            timeout=HANG_GUARD_S,
        )
    finally:
        source.kill()
        source.wait()
    said = _lines(watcher.stdout.decode())
    # THEN the ready line in the log ends it (no --url here)
    assert watcher.returncode == 0, watcher.stderr.decode()
    assert said[-1] == "ready: The server is fired up and ready to roll! (line 32)"  # said once, not `ready: ready:`


def test_jsonl_stall_with_pid_keeps_stdout_json_and_adds_the_stacks_as_an_event(tmp_path: Path) -> None:
    # GIVEN a server that hangs mid-capture, watched with --format jsonl and its pid
    with server(tmp_path, "stall", step=0.05) as (proc, log, url):
        result = watch_server(tmp_path, log, url, "--pid", str(proc.pid), "--stall-after", "3", "--format", "jsonl")
    # THEN every stdout line is one JSON event; the outcome is a stall; the stacks follow as an event
    assert result.exit_code == 4, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    outcomes = [e for e in events if e["event"] == "outcome"]
    assert [(e["verdict"], e["exit_code"]) for e in outcomes] == [("stalled", 4)]
    assert events[0] == {
        "t": events[0]["t"],
        "event": "health",
        "health": "refused",
        "status": None,
        "text": "health: connection refused (not listening yet)",
    }
    if "logphase: stacks not taken: " not in result.stderr:  # py-spy may be denied ptrace here
        assert events[-1]["event"] == "stacks" and events[-1]["stacks"]["schema"] == "logphase.stacks/1"
        # AND this machine's GPUs with them (NVML), or the note saying why not (no nvidia-ml-py, no driver)
        gpus = events[-1]["stacks"]["gpus"]
        assert gpus["source"] == "nvml" and bool(gpus["devices"]) != bool(gpus["note"])
    else:
        assert events[-1] is outcomes[0]
