"""`logphase watch` as a user runs it: transitions on stdout (text or JSON lines) and notes on
stderr; --url overruling a log that says ready; --timeout kept whatever the input or the health
endpoint does; no such --pid; SIGTERM; a named pipe; devices and binary files refused."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logphase.errors import ExitCode
from tests.conftest import REPO, run_cli
from tests.watch.test_health_probe import serving, trickle

# SGLang's start as it logs it (docs/reference sglang.md: `[stamp rank] message`; the main process untagged)
STARTING = (
    "[2026-01-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2026-01-01 10:00:01 TP0] Init torch distributed ends. mem usage=0.10 GB\n"
    "[2026-01-01 10:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"
)
READY_LINE = "[2026-01-01 10:00:30] The server is fired up and ready to roll!\n"


def starting_now(*extra: str) -> str:
    """STARTING (and `extra` lines) stamped as a server starting now writes them: a file already written when the
    watch begins is judged by its own stamps, as analyze judges it (a start stamped months ago is stalled)."""
    start = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    text = STARTING + "".join(extra)
    for offset in range(31):
        text = text.replace(
            f"2026-01-01 10:00:{offset:02d}", f"{start + timedelta(seconds=offset / 10):%Y-%m-%d %H:%M:%S}"
        )
    return text


# A bound only a hung watch reaches.
HANG_GUARD_S = 60


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "LOGPHASE_DB": str(tmp_path / "r.db"), "NO_COLOR": "1"}


def _transitions(stdout: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in stdout.splitlines()]


def _refused_url() -> tuple[socket.socket, str]:
    """A port that is bound but never listened on: every connection is refused."""
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))
    return bound, f"http://127.0.0.1:{bound.getsockname()[1]}"


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_transitions_go_to_stdout_and_notes_to_stderr(tmp_path: Path) -> None:
    # GIVEN a watch on a log that does not exist yet, stdout and stderr apart
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "logphase", "watch", str(log), "--interval", "0.1"]
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    assert watcher.stderr is not None
    note = watcher.stderr.readline()
    # WHEN the server writes its start, to ready
    log.write_text(STARTING + READY_LINE)
    stdout, stderr = watcher.communicate(timeout=HANG_GUARD_S)
    # THEN the transitions are on stdout (so `| tee` and `> file` get them), the note on stderr
    assert watcher.returncode == 0, stderr
    assert _transitions(stdout) == [
        "phase: ready (line 4)",
        "ready: The server is fired up and ready to roll! (line 4)",
    ]
    assert _transitions(note + stderr) == [f"waiting for {log} to appear"]


def test_format_jsonl_writes_one_json_event_per_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(STARTING + READY_LINE)
    result = run_cli("watch", str(log), "--format", "jsonl", "--db", str(tmp_path / "r.db"))
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["event"], type(e["t"])) for e in events] == [("phase", float), ("outcome", float)]
    assert {k: v for k, v in events[0].items() if k != "t"} == {
        "event": "phase",
        "phase": "ready",
        "line": 4,
        "text": "phase: ready (line 4)",
    }
    assert {k: v for k, v in events[1].items() if k != "t"} == {
        "event": "outcome",
        "verdict": "ready",
        "confidence": "high",
        "exit_code": 0,
        "log_says_ready": None,
        "text": "ready: The server is fired up and ready to roll! (line 4)",
    }
    assert result.stderr == ""


def test_a_second_watch_takes_its_scanners_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a finished log and an empty cache folder
    log = tmp_path / "server.log"
    log.write_text(STARTING + READY_LINE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ("watch", str(log), "--format", "jsonl", "--db", str(tmp_path / "r.db"))
    # WHEN it is watched twice
    first = run_cli(*argv)
    stored = sorted(path.name for path in (tmp_path / "cache" / "logphase" / "scanners").iterdir())
    second = run_cli(*argv)
    # THEN the first watch stored its compiled scanners and scan plan, as analyze does, the second
    # found them (nothing new written), and both saw the same
    assert stored and (tmp_path / "cache" / "logphase" / "plans").is_dir()
    assert sorted(path.name for path in (tmp_path / "cache" / "logphase" / "scanners").iterdir()) == stored
    assert first.exit_code == second.exit_code == 0
    assert [json.loads(line)["text"] for line in first.stdout.splitlines()] == [
        json.loads(line)["text"] for line in second.stdout.splitlines()
    ]


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_url_that_refuses_overrules_a_log_that_says_ready_and_the_outcome_says_both(tmp_path: Path) -> None:
    # GIVEN a log that says ready (written just now), and a health URL nobody listens on
    log = tmp_path / "server.log"
    log.write_text(starting_now(READY_LINE))
    bound, url = _refused_url()
    with bound:
        result = run_cli(
            "watch", str(log), "--url", url, "--interval", "0.1", "--timeout", "1.5", "--db", str(tmp_path / "r.db")
        )
    # THEN it is not ready: still starting when --timeout ends it, and both sides are said
    both = f"{url}/health: connection refused (not listening yet), though the log says ready: " + (
        "The server is fired up and ready to roll! (line 4)"
    )
    assert result.exit_code == ExitCode.STARTING, result.stdout
    assert _transitions(result.stdout) == [
        "health: connection refused (not listening yet)",
        "phase: ready (line 4)",
        f"not ready: {both}",
        f"still starting after 2s (in ready): --timeout; {both}",
    ]


@pytest.mark.slow
def test_a_health_endpoint_trickling_bytes_cannot_hold_the_watch_past_its_timeout(tmp_path: Path) -> None:
    # GIVEN a starting server whose health endpoint answers one byte every 1.5 s (issue 15 item 6)
    log = tmp_path / "server.log"
    log.write_text(starting_now())
    with serving(trickle) as health:
        started = time.monotonic()
        # WHEN it is watched with --timeout 3
        result = run_cli(
            "watch", str(log), "--url", f"http://127.0.0.1:{health.port}", "--interval", "0.1", "--timeout", "3",
            "--stall-after", "60", "--db", str(tmp_path / "r.db"),
        )  # fmt: skip
        took = time.monotonic() - started
    # THEN it ends at its timeout, within a second (was: 90 s past a 6 s timeout)
    assert result.exit_code == ExitCode.STARTING, result.stdout
    assert took < 4.0, took
    assert _transitions(result.stdout)[-1] == "still starting after 3s (in weight_load): --timeout"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_at_once_with_a_hint(device: str) -> None:
    # GIVEN a device that never ends (was: /dev/zero ran past --timeout 8, /dev/urandom read as text)
    started = time.monotonic()
    result = run_cli("watch", device, "--timeout", "8")
    assert result.exit_code == ExitCode.CANNOT_RUN
    assert result.stderr.splitlines() == [
        f"logphase: error: {device}: a device, not a log (it never ends)",
        "  hint: give a log file, or pipe a stream in: COMMAND | logphase watch -",
    ]
    assert time.monotonic() - started < 8


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    blob = tmp_path / "model.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    result = run_cli("watch", str(blob), "--timeout", "5")
    assert result.exit_code == ExitCode.CANNOT_RUN
    assert result.stderr.splitlines()[0].startswith(f"logphase: error: {blob}: a binary file, not a text log")


def test_a_pid_that_does_not_exist_is_said_at_start_exit_3(tmp_path: Path) -> None:
    # GIVEN a pid no process can have (the kernel hands out pids below pid_max)
    missing = int(Path("/proc/sys/kernel/pid_max").read_text())
    log = tmp_path / "server.log"
    log.write_text(STARTING)
    result = run_cli("watch", str(log), "--pid", str(missing))
    # THEN no such process, exit 3 (was: "crashed: process exited", exit 4)
    assert result.exit_code == ExitCode.CANNOT_RUN
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == f"logphase: error: --pid {missing}: no such process"
    assert result.stderr.splitlines()[1].startswith("  hint: ")


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_sigterm_is_an_interrupt_and_record_still_stores_the_run(tmp_path: Path) -> None:
    # GIVEN `watch --record` following a start in weight loading, written just now (a start stamped long ago is
    # judged stalled at once, and the watch would end before the signal comes)
    log = tmp_path / "server.log"
    log.write_text(starting_now())
    command = [sys.executable, "-m", "logphase", "watch", str(log), "--record", "--interval", "0.1"]
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    assert watcher.stdout is not None
    first = watcher.stdout.readline()  # its first transition: it follows the log now
    # WHEN it is sent SIGTERM (kill, docker stop, timeout(1))
    watcher.send_signal(signal.SIGTERM)
    rest, stderr = watcher.communicate(timeout=HANG_GUARD_S)
    # THEN it says "interrupted", as for Ctrl-C, and the run is stored
    assert watcher.returncode == ExitCode.STARTING, stderr
    assert _transitions(first + rest) == ["phase: weight_load (line 3)", "interrupted"]
    assert stderr.splitlines()[-1].startswith("recorded run 1: ")
    listed = run_cli("runs", "list", "--db", str(tmp_path / "r.db"), "--format", "json")
    assert [run["paths"] for run in json.loads(listed.stdout)["runs"]] == [[str(log.resolve())]]


def test_a_named_pipe_is_followed_until_its_writer_closes(tmp_path: Path) -> None:
    # GIVEN a named pipe a server writes its start into, then closes (it died without a word)
    pipe = tmp_path / "server.fifo"
    os.mkfifo(pipe)

    def write() -> None:
        with pipe.open("w") as out:  # blocks until the watch opens the pipe
            out.write(STARTING)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = run_cli("watch", str(pipe), "--timeout", "20", "--db", str(tmp_path / "r.db"))
    writer.join(HANG_GUARD_S)
    # THEN the log ends there: stalled, never "cannot read: None" or a traceback
    assert result.exit_code == ExitCode.PROBLEM, result.stderr
    assert _transitions(result.stdout) == [
        "phase: weight_load (line 3)",
        "stalled: the log ends during weight_load with no error (line 3)",
    ]


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_named_pipe_without_a_writer_is_waited_for_until_the_timeout(tmp_path: Path) -> None:
    # GIVEN a named pipe no server has opened yet
    pipe = tmp_path / "server.fifo"
    os.mkfifo(pipe)
    started = time.monotonic()
    result = run_cli("watch", str(pipe), "--timeout", "1", "--db", str(tmp_path / "r.db"))
    # THEN it waits (opening it does not block) until --timeout
    assert result.exit_code == ExitCode.STARTING
    assert time.monotonic() - started < 2.0
    assert _transitions(result.stdout) == ["still starting after 1s: --timeout"]


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_writer_that_closes_a_named_pipe_before_writing_does_not_end_it(tmp_path: Path) -> None:
    # GIVEN a pipe opened and closed by one writer (a wrapper script), then written by the server
    pipe = tmp_path / "server.fifo"
    os.mkfifo(pipe)

    def write() -> None:
        with pipe.open("w"):
            pass
        time.sleep(0.5)
        with pipe.open("w") as out:
            out.write(STARTING)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = run_cli("watch", str(pipe), "--timeout", "20", "--db", str(tmp_path / "r.db"))
    writer.join(HANG_GUARD_S)
    # THEN the watch waited for the server's lines and said why, on stderr
    assert _transitions(result.stderr) == [f"waiting for a writer on {pipe} (a named pipe)"]
    assert _transitions(result.stdout) == [
        "phase: weight_load (line 3)",
        "stalled: the log ends during weight_load with no error (line 3)",
    ]


def test_binary_bytes_on_stdin_are_refused_at_once(tmp_path: Path) -> None:
    # GIVEN random bytes piped into watch (`watch - < /dev/urandom`)
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(range(256)) * 400)
    with noise.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "logphase", "watch", "-", "--timeout", "20"],
            stdin=stdin,
            capture_output=True,
            timeout=30,
            cwd=REPO,
        )
    # THEN exit 3 with what it is, long before the timeout
    assert done.returncode == 3
    assert done.stderr.decode().startswith("logphase: error: <stdin>: a binary file, not a text log")
